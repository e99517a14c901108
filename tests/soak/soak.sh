#!/usr/bin/env bash
# The soak (issue 26): 8 ranks on 4 hosts made of network namespaces (2 a
# host: shared memory inside one, TCP between), a training-shaped loop with
# every result checked (soak_rank.c), and a fault every few seconds, drawn
# from: SIGKILL of a rank, SIGSTOP of a rank, a host's link down (then up),
# a one-way partition of a host (nftables; skipped, saying so, without
# `nft`), a rank slowed by a cgroup CPU quota, a rank paused (SIGSTOP for
# 0.4 x XCCL_TIMEOUT, then SIGCONT: a delay; like slow, not a failure:
# nothing may time out), and a replacement that corrupts what it sends
# (XCCL_FAULT corrupt; every rank runs XCCL_CHECKSUM=1, so it must be an
# error, never a wrong result; skipped, saying so, in a build without
# ISA-L), and a full /dev/shm (each host has its own mount namespace with a
# private 64 MiB tmpfs there, never the machine's: the driver fills one,
# kills a rank on it, and the replacement, on named segments, must say so
# and use TCP). The driver (soak_driver.py) plays the elastic agent:
# survivors report, it tells them whom to exclude, they shrink and grow back
# to 8 with replacements it starts; one failure in 4 gets a second kill (a
# survivor during the shrink, a replacement during the grow): the survivors
# must fail with an error and the driver decides again. Throughout (not with --no-forge), every few seconds
# each TCP port a rank listens on gets garbage or a forged frame from another
# host (soak_forge.py: one long-lived forger process in each host's
# namespace), and each grow a joiner with the wrong secret: all refused, one WARN
# per source host and process, the job unaffected. It prints one table and, last,
#   soak: faults F detected D wrong W hangs H leaked L
# and exits 0 only when W, H and L are 0, D is what should be detected and
# every forged connection and joiner was refused as above.
#
#   tests/soak/soak.sh [--build DIR] [--minutes N] [--ranks 8] [--timeout S]
#                      [--seed S] [--kinds K,...] [--no-faults] [--no-forge]
#
# CTest's `soak` runs 1 minute, `soak_ranks16` half a minute (CI's time is
# short; --minutes takes a fraction). The long forms, as root:
#   tests/soak/soak.sh --build build/default --minutes 5
#   tests/soak/soak.sh --build build/default --minutes 30
#   tests/soak/soak.sh --build build/default --ranks 16 --no-faults --minutes 5
# (the last: 16 ranks on 2 cores, no fault, and no wait may time out).
# Exit 77 (skipped, with the reason) without root or network namespaces.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build/default
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --minutes | --ranks | --timeout | --seed | --kinds) args+=("$1" "$2"); shift 2 ;;
    --no-faults | --no-forge) args+=("$1"); shift ;;
    *) echo "usage: soak.sh [--build DIR] [--minutes N] [--ranks 8] [--timeout S] [--seed S] [--kinds K,...] [--no-faults] [--no-forge]" >&2; exit 2 ;;
  esac
done
. "$here/../netns/netns.sh"
netns_need_root || exit 77
[ -x "$build/tests/soak_rank" ] || { echo "FAIL: $build/tests/soak_rank is not built"; exit 1; }
command -v python3 >/dev/null || { echo "SKIPPED: python3 runs the driver and is not installed"; exit 77; }
hosts=4
ctl=$(mktemp -d /tmp/xccl-soak-XXXXXX)
cleanup() {
  netns_down
  rm -rf "$ctl"
}
netns_up $hosts bridge || { echo "FAIL: could not build the namespaces"; exit 1; }
trap cleanup EXIT
trap 'exit 130' INT TERM
ns="" addrs="" devs=""
for ((i = 0; i < hosts; i++)); do
  ns="$ns $(netns_name $i)" addrs="$addrs $(netns_addr $i)" devs="$devs $(netns_dev $i)"
done
export XCCL_DEBUG=${XCCL_DEBUG:-WARN}
SOAK_NS=$ns SOAK_ADDRS=$addrs SOAK_DEVS=$devs python3 "$here/soak_driver.py" --build "$build" --dir "$ctl" "${args[@]}"
rc=$?
[ $rc -ne 0 ] && [ -n "${SOAK_KEEP:-}" ] && { cp -r "$ctl" "$SOAK_KEEP"; echo "soak: control files kept in $SOAK_KEEP"; }
exit $rc
