#!/bin/sh
# xccl-info's Features lines must say what this build has (the library's
# layers answer; CMake passes what it configured).
#   info_features.sh XCCL_INFO CUDA(yes|no) IB(yes|no) ISAL(yes|no)
info=$1
out=$("$info") || { echo "FAIL: xccl-info exited $?"; exit 1; }
fail=0
check() { # feature expected
  echo "$out" | grep -Eq "^  $1 +$2 " || { echo "FAIL: xccl-info does not say '$1 $2':"; echo "$out" | sed -n '/^Features/,/^$/p'; fail=1; }
}
check "CUDA" "$2"
check "InfiniBand verbs" "$3"
check "CRC32C \\(ISA-L\\)" "$4"
[ $fail -eq 0 ] && echo "info_features: OK (CUDA $2, ib $3, CRC32C $4)"
exit $fail
