#!/bin/sh
# Runs two programs and fails, showing both outputs, where they differ.
#   same_output.sh EXPECTED_PROG ACTUAL_PROG
want=$("$1") || { echo "FAILED: $1"; exit 1; }
got=$("$2") || { echo "FAILED: $2"; exit 1; }
echo "$got"
[ "$want" = "$got" ] && exit 0
echo "--- differs from $1:"
echo "$want"
exit 1
