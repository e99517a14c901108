#!/usr/bin/env bash
# Puts NVIDIA's NCCL, the reference for xccl's libnccl.so.2, in
# build/nccl-ref (or $XCCL_NCCL_REF), from the nvidia-nccl-cu13 wheel on
# PyPI: its nccl.h is the API contract the nccl_* tests compile against, its
# libnccl.so.2 the library nccl_swap_nvidia_lib swaps with xccl's.
# cmake/nccl.cmake looks there after NCCL_HOME and the CUDA directory.
# Pinned to 2.28.9, the API xccl's libnccl.so.2 serves (the 2.30.7 wheel on
# this image's disk declares more, issue 48). Never copied into xccl; used by
# the tests only. A second run with it in place costs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${XCCL_NCCL_REF:-build/nccl-ref}
want=2.28.9
[ -f "$dest/nvidia/nccl/include/nccl.h" ] && grep -q "NCCL_PATCH *${want##*.}\b" "$dest/nvidia/nccl/include/nccl.h" \
  && exit 0
python3 -m pip install -q --disable-pip-version-check --no-deps --target "$dest" --upgrade "nvidia-nccl-cu13==$want"
echo "nccl-reference: NVIDIA's NCCL $want in $dest/nvidia/nccl"
