#!/bin/sh
# xccl-info says where each setting's value came from: the XCCL variable, its
# NCCL alias, or the default; and lists the NCCL_* variables xccl ignores.
#   info_source.sh XCCL_INFO
info=$1
fail=0
# The value and FROM columns of one setting's row: "lo NCCL_SOCKET_IFNAME".
row() { echo "$1" | awk -v v="$2" '$1 == v { print $5, $6; exit }'; }
expect() { # what output variable want
  got=$(row "$2" "$3")
  [ "$got" = "$4" ] || { echo "FAIL ($1): $3 row says '$got', want '$4':"; echo "$2" | grep "^$3 "; fail=1; }
}
# Only what each case sets: the test environment's XCCL_SOCKET_IFNAME=lo goes.
clean="env -u XCCL_SOCKET_IFNAME -u NCCL_SOCKET_IFNAME -u XCCL_NSOCKS -u NCCL_NSOCKS_PERTHREAD -u NCCL_SOCKET_NTHREADS"

out=$($clean NCCL_SOCKET_IFNAME=lo NCCL_FOO_BAR=1 "$info") || { echo "FAIL: xccl-info exited $?"; exit 1; }
expect "alias" "$out" XCCL_SOCKET_IFNAME "lo NCCL_SOCKET_IFNAME"
expect "alias" "$out" XCCL_TIMEOUT "(default) default"
echo "$out" | sed -n '/^NCCL variables set that xccl ignores/,$p' | grep -qx '  NCCL_FOO_BAR' ||
  { echo "FAIL: NCCL_FOO_BAR is not listed as ignored"; fail=1; }
echo "$out" | sed -n '/^NCCL variables set that xccl ignores/,$p' | grep -q 'NCCL_SOCKET_IFNAME' &&
  { echo "FAIL: NCCL_SOCKET_IFNAME is listed as ignored"; fail=1; }
echo "$out" | grep -Eq '^  NCCL_SOCKET_IFNAME +XCCL_SOCKET_IFNAME ' ||
  { echo "FAIL: the alias section lacks NCCL_SOCKET_IFNAME -> XCCL_SOCKET_IFNAME"; fail=1; }

out=$($clean XCCL_SOCKET_IFNAME=lo NCCL_SOCKET_IFNAME=lo "$info" 2>/dev/null)
expect "both" "$out" XCCL_SOCKET_IFNAME "lo XCCL_SOCKET_IFNAME"

out=$($clean NCCL_NSOCKS_PERTHREAD=2 NCCL_SOCKET_NTHREADS=3 "$info" 2>/dev/null)
expect "pair" "$out" XCCL_NSOCKS "6 NCCL_NSOCKS_PERTHREAD,"

out=$($clean "$info" 2>/dev/null)
expect "unset" "$out" XCCL_SOCKET_IFNAME "(default) default"
echo "$out" | grep -q '^NCCL variables set that xccl ignores' &&
  { echo "FAIL: an ignored-variables section with no NCCL_* set"; fail=1; }
[ $fail -eq 0 ] && echo "info_source: OK"
exit $fail
