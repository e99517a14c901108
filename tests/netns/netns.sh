# tests/netns/netns.sh — a cluster on one machine: "nodes" made of network
# namespaces, sourced by the netns tests and benchmarks.
#
#   . tests/netns/netns.sh
#   netns_need_root || exit 77          # prints why, when it cannot run
#   netns_up NODES [bridge|veth]        # veth: exactly 2 nodes joined directly
#   netns_exec NODE cmd...              # run in node NODE (0-based)
#   netns_addr NODE                     # its address (IPv4 link-local)
#   netns_dev NODE                      # its interface name
#   netns_down                          # also runs on EXIT once netns_up ran
#
# Each node gets lo plus one interface with a link-local address
# (169.254.<net>.<node+1>/24) on a bridge that lives in a namespace of its
# own, so nothing touches the host's network. Names carry this shell's pid,
# so runs in parallel do not meet. Every node is its own host to xccl
# (the host identity includes the network namespace).

NETNS_PREFIX="xccl$$"
NETNS_NODES=0
NETNS_NET=$(( ($$ % 200) + 20 ))

netns_need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: network namespaces need root (run as root, or in a CI job with CAP_NET_ADMIN)"
    return 1
  fi
  if ! command -v ip >/dev/null; then
    echo "SKIPPED: 'ip' (iproute2) is not installed"
    return 1
  fi
  if ! ip netns add "${NETNS_PREFIX}probe" 2>/dev/null; then
    echo "SKIPPED: cannot create a network namespace here (ip netns add failed)"
    return 1
  fi
  ip netns del "${NETNS_PREFIX}probe"
  if ! ip link add "${NETNS_PREFIX}p0" type veth peer name "${NETNS_PREFIX}p1" 2>/dev/null; then
    echo "SKIPPED: this kernel cannot make veth pairs"
    return 1
  fi
  ip link del "${NETNS_PREFIX}p0" 2>/dev/null
  return 0
}

netns_name() { echo "${NETNS_PREFIX}n$1"; }
netns_dev() { echo "x$1"; }
netns_addr() { echo "169.254.${NETNS_NET}.$(($1 + 1))"; }
netns_exec() {
  local node=$1
  shift
  ip netns exec "$(netns_name "$node")" "$@"
}
# bridge mode: the namespace holding the bridge, and NODE's port on it (the
# switch side of its cable; taking it down leaves the node's side up).
netns_bridge() { echo "${NETNS_PREFIX}br"; }
netns_port() { echo "${NETNS_PREFIX}h$1"; }

netns_up() {
  local n=$1 mode=${2:-bridge} i
  NETNS_NODES=$n
  trap netns_down EXIT
  for ((i = 0; i < n; i++)); do
    ip netns add "$(netns_name $i)" || return 1
    ip -n "$(netns_name $i)" link set lo up
  done
  if [ "$mode" = veth ]; then
    [ "$n" -eq 2 ] || { echo "netns_up: veth mode joins exactly 2 nodes" >&2; return 1; }
    ip link add "${NETNS_PREFIX}a" type veth peer name "${NETNS_PREFIX}b" || return 1
    ip link set "${NETNS_PREFIX}a" netns "$(netns_name 0)" name "$(netns_dev 0)"
    ip link set "${NETNS_PREFIX}b" netns "$(netns_name 1)" name "$(netns_dev 1)"
  else
    local br="${NETNS_PREFIX}br"
    ip netns add "$br" || return 1
    ip -n "$br" link add br0 type bridge && ip -n "$br" link set br0 up || return 1
    for ((i = 0; i < n; i++)); do
      ip link add "${NETNS_PREFIX}h$i" type veth peer name "${NETNS_PREFIX}c$i" || return 1
      ip link set "${NETNS_PREFIX}h$i" netns "$br"
      ip -n "$br" link set "${NETNS_PREFIX}h$i" master br0 up
      ip link set "${NETNS_PREFIX}c$i" netns "$(netns_name $i)" name "$(netns_dev $i)"
    done
  fi
  for ((i = 0; i < n; i++)); do
    ip -n "$(netns_name $i)" addr add "$(netns_addr $i)/24" dev "$(netns_dev $i)"
    ip -n "$(netns_name $i)" link set "$(netns_dev $i)" up
  done
}

netns_down() {
  local i
  for ((i = 0; i < NETNS_NODES; i++)); do
    # Whatever still runs inside dies with its namespace's processes.
    ip netns pids "$(netns_name $i)" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$(netns_name $i)" 2>/dev/null
  done
  ip netns del "${NETNS_PREFIX}br" 2>/dev/null
  NETNS_NODES=0
}

# netns_launch RANKS_PER_NODE TIMEOUT_S prog args...
# Starts NODES x RANKS_PER_NODE ranks (rank = node * RANKS_PER_NODE + local,
# or with NETNS_PLACEMENT=cyclic rank = local * NODES + node), or with
# NETNS_COUNTS="1 2 2" that many on each node in turn (uneven; a node not
# named, or given 0, runs none; ranks numbered node by node),
# rendezvous at node 0, and waits; each rank's output goes to
# $NETNS_LOG.<rank>. Returns 0 if all ranks exit 0, else the first failure's
# status (124 on timeout). Sets NETNS_PIDS (rank -> pid) while they run.
netns_launch() {
  netns_start "$@"
  netns_wait
}

# netns_start RANKS_PER_NODE TIMEOUT_S prog args...
# Like netns_launch, but returns at once, so the caller can act on the job
# while it runs (the fault tests stop, kill or cut it). NETNS_PIDS[rank] is
# the pid of that rank's `timeout` wrapper (the rank is its child);
# NETNS_PORT, when set, is the rendezvous port. Wait with netns_wait.
netns_start() {
  local per=$1 limit=$2 i l r
  shift 2
  local n=$((NETNS_NODES * per)) port=${NETNS_PORT:-$((20000 + $$ % 20000))}
  local counts=() base=0 c
  if [ -n "${NETNS_COUNTS:-}" ]; then
    read -ra counts <<<"$NETNS_COUNTS"
    n=0
    for c in "${counts[@]}"; do n=$((n + c)); done
  fi
  local secret
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  NETNS_LOG=${NETNS_LOG:-$(mktemp -d)/rank}
  NETNS_PIDS=()
  for ((i = 0; i < NETNS_NODES; i++)); do
    c=$per
    [ ${#counts[@]} -gt 0 ] && c=${counts[i]:-0}
    for ((l = 0; l < c; l++)); do
      r=$((i * per + l))
      [ ${#counts[@]} -gt 0 ] && r=$((base + l))
      [ "${NETNS_PLACEMENT:-block}" = cyclic ] && r=$((l * NETNS_NODES + i))
      netns_exec "$i" env XCCL_RANK=$r XCCL_NRANKS=$n XCCL_LOCAL_RANK=$l \
        XCCL_ROOT="$(netns_addr 0):$port" XCCL_SECRET="$secret" \
        XCCL_SOCKET_IFNAME="=$(netns_dev "$i")" timeout -k 2 "$limit" "$@" >"$NETNS_LOG.$r" 2>&1 &
      NETNS_PIDS[r]=$!
    done
    base=$((base + c))
  done
}

# netns_wait [RANK...]: waits for those ranks (all of NETNS_PIDS without
# arguments); returns 0 if all exited 0, else the first failure's status.
netns_wait() {
  local ranks=("$@") status=0 s r
  [ ${#ranks[@]} -gt 0 ] || ranks=("${!NETNS_PIDS[@]}")
  for r in "${ranks[@]}"; do
    wait "${NETNS_PIDS[r]}"
    s=$?
    [ $status -eq 0 ] && [ $s -ne 0 ] && status=$s
  done
  return $status
}
