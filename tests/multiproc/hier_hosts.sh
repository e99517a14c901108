#!/bin/sh
# Runs "$@" as rank XCCL_RANK (xccl-run's) on the host that TEST_HIER_HOSTS
# labels it with ("0,0,1,2": a label per rank), by XCCL_HOSTID: hier's
# layouts across hosts on one machine, the hosts talking over sockets.
#   hier_hosts.sh PROG ARGS...
label=0 i=0
old_ifs=$IFS
IFS=,
for l in $TEST_HIER_HOSTS; do
  [ "$i" -eq "${XCCL_RANK:-0}" ] && label=$l
  i=$((i + 1))
done
IFS=$old_ifs
XCCL_HOSTID=test-hier-host-$label exec "$@"
