#!/usr/bin/env bash
# The fault matrix: each XCCL_FAULT action x each transport between the
# ranks (shared memory, sockets), on 3 ranks running six all-reduces
# (fault_victim). The rule hits rank 1 in all-reduce #3, at its second
# message on a connection. Prints one row per case and checks the outcome:
#   delay:300            every rank right, only slower
#   corrupt              a rank sees a wrong result (undetected without a checksum)
#   corrupt+crc          the same with XCCL_CHECKSUM=1: the receiver of the
#                        bad chunk fails naming rank 1 and the CRC; no rank
#                        returns a wrong result
#   close, error, kill,
#   stall                every surviving rank returns an error within
#                        XCCL_TIMEOUT + grace that names all-reduce #3 and a rank
# xccl-run gets the same grace: once one survivor has failed, the other
# has that long to fail too before the stalled rank is killed.
#   fault_matrix.sh XCCL_RUN FAULT_VICTIM
set -u
run=$1 victim=$2
timeout_s=5 grace_s=4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
printf "%-11s %-7s %-34s %s\n" fault transport "outcome (ranks 0 1 2)" "slowest error (s)"
for transport in shm socket; do
  for fault in delay:300 corrupt corrupt+crc close error kill stall; do
    action=${fault%+crc} checksum=0
    [ "$fault" = corrupt+crc ] && checksum=1
    out="$tmp/out"
    start=$(date +%s.%N)
    XCCL_TIMEOUT=$timeout_s XCCL_TRANSPORT=$transport XCCL_DEBUG=NONE XCCL_CHECKSUM=$checksum \
      XCCL_FAULT="rank=1,op=allreduce,seq=3,step=1,action=$action" \
      timeout 120 "$run" -n 3 --grace $grace_s "$victim" >"$out" 2>&1
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    outcome=""
    for r in 0 1 2; do
      line=$(grep "^rank $r:" "$out" | head -1)
      case "$line" in
        *": OK"*) o=ok ;;
        *": ERROR"*) o=error ;;
        *": WRONG"*) o=wrong ;;
        *) o=gone ;;
      esac
      outcome="$outcome $o"
    done
    slowest=$(sed -n 's/^rank [02]: ERROR after \([0-9.]*\) s.*/\1/p' "$out" | sort -g | tail -1)
    printf "%-11s %-7s %-34s %s\n" "$fault" "$transport" "$outcome" "${slowest:--}"
    bad=""
    case "$fault" in
      delay:*) [ "$outcome" = " ok ok ok" ] || bad="expected every rank right" ;;
      corrupt)
        grep -q "ERROR" "$out" && bad="a corrupted message must not fail a call (no checksum)"
        grep -q "WRONG" "$out" || bad="the corrupted bit reached no result" ;;
      corrupt+crc)
        grep -q "WRONG" "$out" && bad="a corrupted chunk reached a result despite XCCL_CHECKSUM=1"
        grep -q "failed its CRC32C check" "$out" || bad="no rank reported the CRC32C mismatch"
        grep "CRC32C" "$out" | grep -q "from rank 1 " || bad="the CRC32C error does not name rank 1, the sender" ;;
      *)
        for r in 0 2; do
          line=$(grep "^rank $r:" "$out" | head -1)
          case "$line" in
            *": ERROR after"*)
              echo "$line" | grep -q "allreduce #3" || bad="rank $r's error does not name allreduce #3: $line"
              echo "$line" | grep -Eq "rank [0-9]" || bad="rank $r's error names no peer: $line"
              t=$(echo "$line" | sed -n 's/.*ERROR after \([0-9.]*\) s.*/\1/p')
              [ "$(echo "$t <= $timeout_s + $grace_s" | bc)" = 1 ] || bad="rank $r took $t s to fail"
              ;;
            *) bad="rank $r did not return an error: ${line:-no output}" ;;
          esac
        done ;;
    esac
    if [ -n "$bad" ]; then
      echo "FAIL: $fault over $transport: $bad"
      sed 's/^/    /' "$out" | tail -n 12
      fail=1
    fi
  done
done
exit $fail
