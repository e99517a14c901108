#!/usr/bin/env bash
# Installs what xccl needs to build and test, from Debian's archive.
#   cmake, make, gcc, pkg-config — the build (pkg-config also for the install test)
#   libssl-dev   — OpenSSL: HMAC-SHA256 and random bytes for the bootstrap, TLS 1.3 for XCCL_TLS (libssl)
#   tcpdump      — tests/netns/test_tls.sh captures the veth to show XCCL_TLS leaves no clear bytes
#   iproute2     — `ip`, for the tests that build network namespaces
#   libhwloc-dev, libxml2-dev — topology: hwloc (machine, hwloc XML), libxml2 (NCCL XML)
#   graphviz     — xccl-topo --png; clang, libclang-rt-N-dev — the topo libFuzzer runs
#                  (N is the clang of the Debian release: 14 on Debian 12, 19 on 13)
#   libisal-dev  — ISA-L's CRC32C for XCCL_CHECKSUM
#   libjansson-dev — jansson, which writes xccl's JSON (xccl-topo, xccl-perf and xccl-sim --json)
#   libibverbs-dev, librdmacm-dev — the ib transport (verbs + rdma_cm); the rxe VM test
#                  installs its own (qemu, busybox-static, ...) when run as root
#   perftest     — ib_write_bw and ib_write_lat, which the two-guest rxe rig (rxe_pair) runs
#                  between its guests for the figures it sets beside xccl-perf's
#   libpmix-dev  — pmix.h for xcclCommInitFromEnv under mpirun and srun --mpi=pmix (libpmix is loaded at run time)
#   openmpi-bin, slurm-wlm, munge, python3-torch — the launchers the launch tests start (mpirun, srun, torchrun)
#   python3-numpy, python3-pytest — the Python package's tests (tests/python), and from_env.py's arrays
#   python3-prometheus-client — Prometheus' own parser, which reads XCCL_STATS_FILE back (tests/observe)
#   python3-pip, python3-setuptools, python3-wheel — the test that pip-installs python/ (no network)
#   libtorch-dev, pybind11-dev, python3-dev — the torch.distributed backend's C++ extension (python/xccl/torch)
#                  for Debian's torch (1.13 on Debian 12, 2.6 on 13); torch 2.13 from PyPI goes into a venv
#                  (scripts/torch-venv.sh, run at the end)
#   python3-matplotlib — xccl-plot, which xccl-perf --plot runs
#   jq           — tests/fault/test_dump.sh reads the JSON dumps with it, as people's scripts would
#   nftables     — `nft`, the one-way partitions of the soak (tests/soak; skipped without it)
#   dpkg-dev, file — cpack -G DEB's dependencies from dpkg-shlibdeps (cmake/package.cmake)
#   debootstrap  — the clean Debian root tests/package installs the .debs into
# Runs apt-get only for what is missing, so a second run costs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
debian=$(cut -d. -f1 /etc/debian_version 2>/dev/null || echo 12)
case "$debian" in
  12) clang_rt=libclang-rt-14-dev ;;
  13) clang_rt=libclang-rt-19-dev ;;
  *) clang_rt=$(apt-cache depends clang 2>/dev/null | sed -n 's/.*Depends: clang-\([0-9]*\)$/libclang-rt-\1-dev/p' | head -n 1)
     clang_rt=${clang_rt:-libclang-rt-dev} ;;
esac
need=()
for pkg in cmake make gcc pkg-config libssl-dev iproute2 tcpdump libhwloc-dev libxml2-dev graphviz clang "$clang_rt" libibverbs-dev librdmacm-dev libisal-dev \
  libjansson-dev python3-prometheus-client jq \
  libpmix-dev openmpi-bin slurm-wlm munge python3-torch python3-numpy python3-pytest python3-pip python3-setuptools \
  python3-wheel libtorch-dev pybind11-dev python3-dev python3-matplotlib nftables dpkg-dev file debootstrap perftest; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# NVIDIA's nccl.h and libnccl.so.2, the reference the NCCL drop-in's tests
# check against (from the nvidia-nccl-cu13 wheel; without it they skip).
if ! scripts/nccl-reference.sh; then
  echo "deps: could not fetch NVIDIA's NCCL (scripts/nccl-reference.sh); the nccl_* tests will be skipped" >&2
  [ "${CI:-}" = true ] && exit 1
fi
# torch 2.x for the backend's tests. Without it the torch 2.x tests report
# themselves skipped, so a machine without the wheel still builds; CI insists.
if ! scripts/torch-venv.sh; then
  echo "deps: could not make the torch 2.x venv (scripts/torch-venv.sh); its tests will report themselves skipped" >&2
  [ "${CI:-}" = true ] && exit 1
fi
