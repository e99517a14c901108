#!/usr/bin/env bash
# Puts NVIDIA's NCCL, the reference for xccl's libnccl.so.2, where the
# nccl_* tests look, from the nvidia-nccl-cu13 wheels on PyPI:
#   build/nccl-ref      (or $XCCL_NCCL_REF)      2.28.9: the 2.28-era programs
#     (nccl_prog, nccl_abi_layout, nccl_swap_nvidia_lib) compile against its
#     nccl.h and swap its libnccl.so.2 with xccl's;
#   build/nccl-ref-2.32 (or $XCCL_NCCL_REF_232)  2.32.3: the API xccl's
#     libnccl.so.2 serves (issue 48): nccl_abi_symbols_232 and nccl_prog_232.
# cmake/nccl.cmake looks there after NCCL_HOME and the CUDA directory. Never
# copied into xccl; used by the tests only. A second run with them in place
# costs nothing. --only 2.28 or --only 2.32 fetches one.
set -euo pipefail
cd "$(dirname "$0")/.."
only=${2:-}
[ "${1:-}" = --only ] || only=

fetch() { # fetch VERSION DEST
  local want=$1 dest=$2
  [ -f "$dest/nvidia/nccl/include/nccl.h" ] \
    && grep -q "NCCL_MINOR *$(echo "$want" | cut -d. -f2)\b" "$dest/nvidia/nccl/include/nccl.h" \
    && grep -q "NCCL_PATCH *${want##*.}\b" "$dest/nvidia/nccl/include/nccl.h" && return 0
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$dest" --upgrade \
    "nvidia-nccl-cu13==$want"
  echo "nccl-reference: NVIDIA's NCCL $want in $dest/nvidia/nccl"
}
[ "$only" = 2.32 ] || fetch 2.28.9 "${XCCL_NCCL_REF:-build/nccl-ref}"
[ "$only" = 2.28 ] || fetch 2.32.3 "${XCCL_NCCL_REF_232:-build/nccl-ref-2.32}"
