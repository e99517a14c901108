#!/usr/bin/env bash
# Installs what xccl needs to build and test, from Debian's archive.
#   cmake, make, gcc, pkg-config — the build (pkg-config also for the install test)
#   libssl-dev   — OpenSSL's libcrypto: HMAC-SHA256 and random bytes for the bootstrap
#   iproute2     — `ip`, for the tests that build network namespaces
#   libhwloc-dev, libxml2-dev — topology: hwloc (machine, hwloc XML), libxml2 (NCCL XML)
#   graphviz     — xccl-topo --png; clang, libclang-rt-14-dev — the topo libFuzzer runs
#   libisal-dev  — ISA-L's CRC32C for XCCL_CHECKSUM
#   libjansson-dev — jansson, which writes xccl's JSON (xccl-topo, xccl-perf and xccl-sim --json)
#   libibverbs-dev, librdmacm-dev — the ib transport (verbs + rdma_cm); the rxe VM test
#                  installs its own (qemu, busybox-static, ...) when run as root
#   libpmix-dev  — pmix.h for xcclCommInitFromEnv under mpirun and srun --mpi=pmix (libpmix is loaded at run time)
#   openmpi-bin, slurm-wlm, munge, python3-torch — the launchers the launch tests start (mpirun, srun, torchrun)
#   python3-numpy, python3-pytest — the Python package's tests (tests/python), and from_env.py's arrays
#   python3-prometheus-client — Prometheus' own parser, which reads XCCL_STATS_FILE back (tests/observe)
#   python3-pip, python3-setuptools, python3-wheel — the test that pip-installs python/ (no network)
#   libtorch-dev, pybind11-dev, python3-dev — the torch.distributed backend's C++ extension (python/xccl/torch)
#   python3-matplotlib — xccl-plot, which xccl-perf --plot runs
#   jq           — tests/fault/test_dump.sh reads the JSON dumps with it, as people's scripts would
#   nftables     — `nft`, the one-way partitions of the soak (tests/soak; skipped without it)
# Runs apt-get only for what is missing, so a second run costs nothing.
set -euo pipefail
need=()
for pkg in cmake make gcc pkg-config libssl-dev iproute2 libhwloc-dev libxml2-dev graphviz clang libclang-rt-14-dev libibverbs-dev librdmacm-dev libisal-dev \
  libjansson-dev python3-prometheus-client jq \
  libpmix-dev openmpi-bin slurm-wlm munge python3-torch python3-numpy python3-pytest python3-pip python3-setuptools \
  python3-wheel libtorch-dev pybind11-dev python3-dev python3-matplotlib nftables; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
