#!/usr/bin/env bash
# External faults on the one-machine cluster (issue 7): nodes are network
# namespaces on a bridge (netns.sh), ranks run all-reduces in a loop
# (netns_victim), and the test breaks the job from outside.
#
#   netns_faults.sh BUILD_DIR [faults|netem|all]          (default all)
#
# faults: 3 nodes x 2 ranks (0,1 | 2,3 | 4,5; shared memory inside a node,
#   TCP between nodes, or TCP everywhere with XCCL_TRANSPORT=socket). Cells:
#     kill       kill -9 of rank 3 mid-run
#     stop       SIGSTOP of rank 3 (killed at the end of the cell)
#     link_down  `ip link set down` of node 2's interface, inside the node
#     port_down  the same link taken down at the bridge (node 2's side stays up)
#   Every surviving rank must return an error within XCCL_TIMEOUT (5 s) +
#   grace (4 s) after the fault, whose message names the all-reduce (#seq)
#   and a peer rank; and some rank's must name the culprit (rank 3, or for a
#   cut link a peer on the other side of it).
# netem: 2 nodes joined by a veth pair, 1 rank each, socket transport, with
#   tc netem delay, loss and reordering on both ends; NETEM_CALLS all-reduces
#   (30) of NETEM_COUNT floats (4096, small enough that latency shows): every
#   result right (netns_victim checks each), only slower; prints the time per
#   call and the TCP retransmissions. Where the kernel has no sch_netem it
#   says so and skips these cells (the rxe VM rig runs them: tests/rxe/plan.sh).
#   NETNS_FAULTS_CELLS="stop:socket kill:shm+socket" runs only those cells
#   (to repeat one that failed); NETNS_FAULTS_VERBOSE=1 prints every error.
# One matrix row per cell: fault, transport, outcome per rank, and the slowest
# survivor's time to error (seconds after the fault) or the time per call.
# Exit: 0 all cells as expected, 1 a cell not, 77 no root / no `ip netns`
# (or, in netem mode, no sch_netem).
set -u
build=${1:?usage: netns_faults.sh BUILD_DIR [faults|netem|all]}
mode=${2:-all}
victim=$build/tests/netns_victim
stuck=$build/tools/xccl-stuck
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
[ -x "$victim" ] || { echo "FAIL: $victim is not built"; exit 1; }
timeout_s=5 grace_s=4
tmp=$(mktemp -d)
cleanup() {
  netns_down
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail=0
export XCCL_DEBUG=${XCCL_DEBUG:-WARN}

# up NODES MODE: fresh namespaces for one cell (netns_up replaces the EXIT trap).
up() {
  netns_up "$@" || { echo "FAIL: could not build the namespaces"; exit 1; }
  trap cleanup EXIT
}

# wait_running NRANKS LIMIT_S: every rank has finished its first call.
wait_running() {
  local n=$1 limit=$2 r ready tries=$(($2 * 10))
  while [ $tries -gt 0 ]; do
    ready=0
    for ((r = 0; r < n; r++)); do
      grep -q "^rank $r: RUNNING" "$NETNS_LOG.$r" 2>/dev/null && ready=$((ready + 1))
      kill -0 "${NETNS_PIDS[r]}" 2>/dev/null || { echo "rank $r ended before the job was up"; return 1; }
    done
    [ $ready -eq "$n" ] && return 0
    sleep 0.1
    tries=$((tries - 1))
  done
  echo "the job was not up after $limit s"
  return 1
}

# outcome R: what rank R's log says (ok, error, wrong, init) or "gone".
outcome() {
  case "$(grep -m1 -E "^rank ($1|\?): (OK|ERROR|WRONG|INIT)" "$NETNS_LOG.$1" 2>/dev/null)" in
    *": OK"*) echo ok ;;
    *": ERROR"*) echo error ;;
    *": WRONG"*) echo wrong ;;
    *": INIT"*) echo init ;;
    *) echo gone ;;
  esac
}

show_logs() {
  local f
  for f in "$NETNS_LOG".*; do
    echo "    --- ${f##*/}"
    tail -n 6 "$f" | sed 's/^/    /'
  done
}

# flag TEXT: the first thing found wrong in a cell is the one reported.
flag() { [ -n "$bad" ] || bad=$1; }

# fault_cell FAULT TRANSPORT: one cell of the fault matrix.
fault_cell() {
  local fault=$1 transport=$2 nodes=3 per=2 n=6 target=3 cut=2 r
  up $nodes bridge
  NETNS_LOG=$tmp/$fault-$transport/rank
  mkdir -p "${NETNS_LOG%/*}"
  # Empty XCCL_TRANSPORT: the default (shared memory inside a node); "shm"
  # would demand it between every pair of ring neighbours.
  local -x XCCL_TIMEOUT=$timeout_s XCCL_TRANSPORT="" XCCL_DUMP_DIR=${NETNS_LOG%/*}/dumps
  [ "$transport" = socket ] && XCCL_TRANSPORT=socket
  # Bounded: the ranks stop by themselves after 20 s, and are killed at 30 s.
  netns_start $per 30 "$victim" -t 20
  local bad="" survivors=() victim_pid="" why o
  if ! why=$(wait_running $n 25); then
    printf "%-10s %-11s %-38s %s\n" "$fault" "$transport" "(no run)" "-"
    echo "FAIL: $fault over $transport: $why"
    show_logs
    fail=1
    netns_down
    return
  fi
  sleep 0.5 # mid-run: the ranks are between their first and last call
  victim_pid=$(sed -n "s/^rank $target: RUNNING pid \([0-9]*\).*/\1/p" "$NETNS_LOG.$target")
  local t_fault
  t_fault=$(date +%s.%N)
  case $fault in
    kill) kill -9 "$victim_pid" ;;
    stop) kill -STOP "$victim_pid" ;;
    link_down) ip -n "$(netns_name $cut)" link set "$(netns_dev $cut)" down ;;
    port_down) ip -n "$(netns_bridge)" link set "$(netns_port $cut)" down ;;
  esac
  for ((r = 0; r < n; r++)); do
    case $fault in kill | stop) [ $r -eq $target ] && continue ;; esac
    survivors+=($r)
  done
  netns_wait "${survivors[@]}"
  # SIGKILL ends a stopped process without letting it run: a SIGCONT first
  # would let it notice its own expired deadline and write a dump of its own.
  [ "$fault" = stop ] && kill -9 "$victim_pid" 2>/dev/null
  netns_wait
  # Outcomes, and each survivor's error checked.
  local outcomes="" slowest="" slowest_msg="" line msg t peers p namers=""
  for ((r = 0; r < n; r++)); do
    o=$(outcome $r)
    [ "$o" = gone ] && [ $r -eq $target ] && case $fault in kill) o=killed ;; stop) o=stopped ;; esac
    outcomes="$outcomes $o"
  done
  for r in "${survivors[@]}"; do
    line=$(grep -m1 "^rank $r: ERROR at" "$NETNS_LOG.$r")
    if [ -z "$line" ]; then
      flag "rank $r returned no error ($(outcome $r))"
      continue
    fi
    msg=${line#*s: }
    t=$(echo "$line" | awk -v f="$t_fault" '{ printf "%.2f", $5 - f }')
    [ "${NETNS_FAULTS_VERBOSE:-0}" = 1 ] && echo "    $t s: rank $r: $msg"
    peers=$(echo "$msg" | grep -oE 'rank [0-9]+' | grep -vx "rank $r")
    echo "$msg" | grep -qE 'allreduce #[0-9]+' || flag "rank $r's error does not name the all-reduce and its number: $msg"
    [ -n "$peers" ] || flag "rank $r's error names no peer rank: $msg"
    # Does it point at the fault: the stopped or killed rank, or a peer on
    # the other side of the cut link?
    for p in $(echo "$peers" | awk '{ print $2 }'); do
      case $fault in
        kill | stop) [ "$p" -eq $target ] && namers="$namers $r" ;;
        *) [ $((r / per == cut)) -ne $((p / per == cut)) ] && namers="$namers $r" ;;
      esac
    done
    awk -v t="$t" -v lim=$((timeout_s + grace_s)) 'BEGIN { exit !(t >= -0.05 && t <= lim) }' ||
      flag "rank $r failed $t s after the fault (limit $((timeout_s + grace_s)) s): $msg"
    if [ -z "$slowest" ] || awk -v a="$t" -v b="$slowest" 'BEGIN { exit !(a > b) }'; then
      slowest=$t
      slowest_msg="rank $r: $msg"
    fi
  done
  local culprit="rank $target"
  case $fault in *_down) culprit="a peer across the cut" ;; esac
  [ -n "$namers" ] || flag "no rank's error names $culprit"
  # The survivors' in-flight dumps: xccl-stuck must name the rank that was
  # killed or stopped, which wrote none, whichever neighbour each survivor named.
  local verdict=""
  if [ -x "$stuck" ]; then
    verdict=$("$stuck" "$XCCL_DUMP_DIR" 2>&1 | head -n 1)
    case $fault in
      kill | stop) echo "$verdict" | grep -q "^stuck: rank $target " || flag "xccl-stuck did not name rank $target: $verdict" ;;
    esac
  fi
  namers=$(echo $namers | tr ' ' '\n' | sort -un | awk '{ printf "%s%s", sep, $0; sep = "," }')
  printf "%-10s %-11s %-38s %s\n" "$fault" "$transport" "$outcomes" "${slowest:--} ($culprit named by ranks ${namers:-none})"
  [ -n "$slowest_msg" ] && echo "    slowest: $slowest_msg"
  [ -n "$verdict" ] && echo "    xccl-stuck: $verdict"
  if [ -n "$bad" ]; then
    echo "FAIL: $fault over $transport: $bad"
    show_logs
    fail=1
  fi
  netns_down
}

# netem_available: whether tc can attach netem here (a probe namespace).
netem_available() {
  command -v tc >/dev/null || return 1
  up 2 veth # no bridge needed (the rxe VM has no bridge module)
  netns_exec 0 tc qdisc add dev lo root netem delay 1ms 2>/dev/null
  local ok=$?
  netns_down
  return $ok
}

# retrans NODE: TCP segments retransmitted in that node (its own counters).
retrans() {
  netns_exec "$1" awk '/^Tcp:/ { if (!c) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") c = i } else print $c }' \
    /proc/net/snmp
}

# netem_run NAME MIN_MS NETEM_ARGS...: 2 nodes over a veth pair, netem on both
# ends (none for the baseline). Every rank must be right, and a call must
# take at least MIN_MS on average (with a one-way delay D, no all-reduce can
# finish before the peer's data crossed the link: MIN_MS = D). Prints the row
# with the time per call (slowest rank) against the baseline's, and the TCP
# retransmissions the run needed.
netem_base=""
netem_run() {
  local name=$1 min_ms=$2 r o outcomes="" bad="" per_call=0 resent=0
  shift 2
  up 2 veth
  NETNS_LOG=$tmp/netem-$name/rank
  mkdir -p "${NETNS_LOG%/*}"
  if [ $# -gt 0 ]; then
    for r in 0 1; do netns_exec $r tc qdisc add dev "$(netns_dev $r)" root netem "$@" || flag "tc netem $* failed"; done
  fi
  local -x XCCL_NET=socket XCCL_TRANSPORT=socket XCCL_TIMEOUT=60
  netns_start 1 60 "$victim" -n "${NETEM_CALLS:-30}" -c "${NETEM_COUNT:-4096}" -t 45
  netns_wait
  for r in 0 1; do
    resent=$((resent + $(retrans $r || echo 0)))
    o=$(outcome $r)
    outcomes="$outcomes $o"
    [ "$o" = ok ] || flag "rank $r: $(grep -m1 '^rank' "$NETNS_LOG.$r" || echo no result)"
    per_call=$(sed -n 's/^rank [0-9]*: OK .*, \([0-9.]*\) ms per call/\1/p' "$NETNS_LOG.$r" |
      awk -v m="$per_call" '{ if ($1 > m) m = $1 } END { print m }')
  done
  [ -z "$netem_base" ] && netem_base=$per_call
  local slower
  slower=$(awk -v a="$per_call" -v b="$netem_base" 'BEGIN { if (b > 0) printf "x%.1f", a / b; else print "-" }')
  awk -v a="$per_call" -v m="$min_ms" 'BEGIN { exit !(a >= m) }' ||
    flag "$per_call ms per call is less than the $min_ms ms that netem $* adds: was netem in the path?"
  printf "%-10s %-11s %-38s %s\n" "$name" socket "$outcomes" \
    "$per_call ms per call ($slower; ${*:-no netem}; $resent TCP segments resent)"
  if [ -n "$bad" ]; then
    echo "FAIL: netem $name: $bad"
    show_logs
    fail=1
  fi
  netns_down
}

printf "%-10s %-11s %-38s %s\n" fault transport "outcome (by rank)" "slowest error (s after the fault) / time per call"
if [ "$mode" = faults ] || [ "$mode" = all ]; then
  for transport in shm+socket socket; do
    for fault in kill stop link_down port_down; do
      case " ${NETNS_FAULTS_CELLS:-$fault:$transport} " in *" $fault:$transport "*) fault_cell $fault $transport ;; esac
    done
  done
fi
if [ "$mode" = netem ] || [ "$mode" = all ]; then
  if netem_available; then
    netem_run baseline 0
    netem_run delay 5 delay 5ms
    netem_run loss 0 loss 2%
    netem_run reorder 0 delay 5ms reorder 25% 50%
  elif [ "$mode" = netem ]; then
    echo "SKIPPED: this kernel has no sch_netem (tc qdisc add ... netem failed)"
    exit 77
  else
    echo "netem cells: skipped: host kernel has no sch_netem; they run in the rxe VM rig"
  fi
fi
exit $fail
