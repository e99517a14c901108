#!/bin/sh
# xccl-sim (issue 25) on small shapes: what could go wrong with its model or
# its replay of xccl's schedules.
#   sim.sh XCCL_SIM
sim=$1
fail=0
say() { echo "FAIL: $*"; fail=1; }
tmp=${TMPDIR:-/tmp}/xccl-sim-test.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# The JSON parses, every row has its fields, at most one chosen per size
# (none where the tuner picks an algorithm xccl-sim does not replay),
# time grows with bytes for every algorithm.
"$sim" --hosts 8 --gpus 8 allreduce -b 8 -e 64M -f 8 --json > "$tmp/a.json" || say "xccl-sim exited $?"
python3 - "$tmp/a.json" <<'PY' || fail=1
import json, sys
rows = json.load(open(sys.argv[1]))
bad = []
for r in rows:
    for f in ("algo", "bytes", "time_us", "busbw", "chosen", "method", "model_us"):
        if f not in r: bad.append("row %r lacks %s" % (r, f))
algos = sorted({r["algo"] for r in rows})
for a in ("ring", "rd", "tree", "rab", "hier"):
    if a not in algos: bad.append("no %s rows" % a)
for a in algos:
    ts = [r["time_us"] for r in sorted((r for r in rows if r["algo"] == a), key=lambda r: r["bytes"])]
    # never less for more bytes (8 and 64 B are the same messages), more at 64 MiB than at 8 B
    if any(t2 < t1 for t1, t2 in zip(ts, ts[1:])) or ts[-1] <= 1.5 * ts[0]:
        bad.append("%s: time does not grow with bytes: %r" % (a, ts))
for b in sorted({r["bytes"] for r in rows}):
    n = sum(1 for r in rows if r["bytes"] == b and r["chosen"])
    if n > 1: bad.append("%d B: %d rows chosen" % (b, n))
for m in bad: print("FAIL:", m)
sys.exit(1 if bad else 0)
PY

# Tree beats the ring at 8 B on 64 ranks (log2 k hops against 2(k-1)).
"$sim" --hosts 8 --gpus 8 allreduce -b 8 -e 8 --algo ring,tree --json > "$tmp/b.json" || say "xccl-sim exited $?"
python3 -c '
import json, sys
t = {r["algo"]: r["time_us"] for r in json.load(open(sys.argv[1]))}
ok = t["tree"] < t["ring"]
print(("" if ok else "FAIL: ") + "8 B on 64 ranks: tree %.2f us, ring %.2f us" % (t["tree"], t["ring"]))
sys.exit(0 if ok else 1)' "$tmp/b.json" || fail=1

# Broadcast and reduce replay the ring and the tree (rooted trees of
# host_tree_links), reduce-scatter and all-gather the ring, rab's halves
# (host_rab_item for that collective) and PAT (host_pat_item), and nothing else: those serve them
# (algo_serves). On 4 x 8 at 8 B the tree's log2 k hops beat the ring's
# chain and the tuner picks it. The sizes are the whole buffer, so a
# reduce-scatter's share is B = bytes / k; the tuner prices that share per
# level (H = 4 of a pass's k hops cross a NIC, all hops carry at once, a
# host's crossings over its 8 rails): the ring's model_us is
# (k-1)(k-H)/k alpha_l + ((k-1)H/k + ceil(B/S) - 1) alpha_n
#   + max((k-1) B / beta_l, (k-1) B / (8 beta_n)).
for c in broadcast reduce reducescatter allgather; do
  "$sim" --hosts 4 --gpus 8 --root 5 $c -b 8 -e 8M -f 1024 --json > "$tmp/r-$c.json" || say "xccl-sim $c exited $?"
done
python3 - "$tmp" <<'PY' || fail=1
import json, math, sys
bad = []
k, H, rails, alpha, beta, alpha_l, beta_l, S = 32, 4, 8, 3e-6, 400e9 / 8, 1e-6, 3600e9 / 8, 512 << 10
for c, want in (("broadcast", ("tree",)), ("reduce", ("tree",)), ("reducescatter", ("rab", "pat")), ("allgather", ("rab", "pat"))):
    rows = json.load(open("%s/r-%s.json" % (sys.argv[1], c)))
    if sorted({r["algo"] for r in rows}) != sorted(("ring",) + want):
        bad.append("%s: rows of %s, not ring and %s" % (c, sorted({r["algo"] for r in rows}), " and ".join(want)))
        continue
    for b in sorted({r["bytes"] for r in rows}):
        if sum(r["chosen"] for r in rows if r["bytes"] == b) != 1: bad.append("%s %d B: not one row chosen" % (c, b))
    at = {(r["algo"], r["bytes"]): r for r in rows}
    if c in ("broadcast", "reduce"):
        t, g = at[("tree", 8)], at[("ring", 8)]
        if not (t["time_us"] < g["time_us"] and t["chosen"]):
            bad.append("%s 8 B on 32 ranks: tree %.2f us (chosen %s), ring %.2f us" % (c, t["time_us"], t["chosen"], g["time_us"]))
    else:
        g = at[("ring", 8 << 20)]
        B = (8 << 20) / k
        model = ((k - 1) * (k - H) / k * alpha_l + ((k - 1) * H / k + math.ceil(B / S) - 1) * alpha
                 + max((k - 1) * B / beta_l, (k - 1) * B / (rails * beta))) * 1e6
        if abs(g["model_us"] - model) > 1e-3 * model:
            bad.append("%s 8 MiB: ring priced at %.2f us, its model for a share of %d B is %.2f" % (c, g["model_us"], B, model))
for m in bad: print("FAIL:", m)
print("" if bad else "broadcast, reduce: ring and tree; reduce-scatter, all-gather: ring, rab and pat; tree 8 B under the ring's")
sys.exit(1 if bad else 0)
PY

# Bytes per rank (net_bytes; one GPU per host, so every byte crosses):
# rab's halves move (p2-1) T in all, T = kB the buffer, and the fold r (T +
# B) (reduce-scatter) or r T (all-gather); on 4 x 8 only the levels h >= G
# cross hosts, (k - G) B. The rooted trees deliver each half once to every
# other rank: (k-1)/k B. And at one piece the replay is the model:
# tree (ceil(log2 k) + 1 - 1) alpha + 2B / beta, rab (log2 k + 1 - 1) alpha
# + (k-1)/k T / beta (within 5 %). PAT moves (k-1) B per rank on any k, and
# at one piece on 8 ranks takes rab's time.
for k in 8 6; do
  for c in broadcast reduce reducescatter allgather; do
    "$sim" --hosts $k --gpus 1 $c -b 8K -e 8M -f 1024 --json > "$tmp/n$k-$c.json" || say "xccl-sim $c exited $?"
  done
done
"$sim" --hosts 4 --gpus 8 reducescatter -b 8M -e 8M --algo rab --json > "$tmp/n32.json" || say "xccl-sim exited $?"
python3 - "$tmp" <<'PY' || fail=1
import json, math, sys
bad = []
alpha, beta = 3e-6, 400e9 / 8
def load(f): return {(r["algo"], r["bytes"]): r for r in json.load(open(sys.argv[1] + "/" + f))}
def near(got, want, tol, what):
    if abs(got - want) > tol * want: bad.append("%s: %.2f, want %.2f" % (what, got, want))
for k in (8, 6):
    p2 = 1 << int(math.log2(k))
    r = k - p2
    for c in ("broadcast", "reduce", "reducescatter", "allgather"):
        rows = load("n%d-%s.json" % (k, c))
        for T in (8 << 10, 8 << 20):
            if c in ("broadcast", "reduce"):
                near(rows[("tree", T)]["net_bytes"], (k - 1) / k * T, 1e-3, "%s tree, %d ranks, %d B: bytes per rank" % (c, k, T))
            else:
                B = T / k
                fold = r * (T + B if c == "reducescatter" else T)
                near(rows[("rab", T)]["net_bytes"], ((p2 - 1) * T + fold) / k, 1e-3, "%s rab, %d ranks, %d B: bytes per rank" % (c, k, T))
                near(rows[("pat", T)]["net_bytes"], (k - 1) * (T // 4 // k * 4), 1e-9, "%s pat, %d ranks, %d B: bytes per rank" % (c, k, T))
        if k == 8:
            T = 8 << 10
            if c in ("broadcast", "reduce"):
                model = 3 * alpha + 2 * T / beta
                near(rows[("tree", T)]["time_us"], model * 1e6, 0.05, "%s tree, 8 ranks, 8 KiB: time against the model" % c)
            else:
                model = 3 * alpha + 7 / 8 * T / beta
                near(rows[("rab", T)]["time_us"], model * 1e6, 0.05, "%s rab, 8 ranks, 8 KiB: time against the model" % c)
                near(rows[("pat", T)]["time_us"], model * 1e6, 0.05, "%s pat, 8 ranks, 8 KiB: time against the model" % c)
                near(rows[("pat", T)]["model_us"], model * 1e6, 1e-3, "%s pat, 8 ranks, 8 KiB: the model" % c)
near(load("n32.json")[("rab", 8 << 20)]["net_bytes"], (32 - 8) * (8 << 20) / 32, 1e-3, "reduce-scatter rab, 4 x 8, 8 MiB: bytes per rank between hosts")
for m in bad: print("FAIL:", m)
print("" if bad else "rab's halves, pat and the rooted trees move the model's bytes, and their time at one piece")
sys.exit(1 if bad else 0)
PY

# A row the tuner refuses (hier on one host) is priced null, and the JSON
# still parses.
"$sim" --hosts 1 --gpus 8 allreduce -b 1M -e 1M --algo hier --json > "$tmp/null.json" || say "xccl-sim exited $?"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[0]
ok = r["model_us"] is None
print(("" if ok else "FAIL: ") + "hier on one host: model_us %r" % r["model_us"])
sys.exit(0 if ok else 1)' "$tmp/null.json" || fail=1

# --root must name a rank: one sentence, exit 2.
"$sim" --hosts 4 --gpus 8 --root 32 broadcast > "$tmp/root.out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/root.out")" = 1 ] && grep -q "^xccl-sim: --root 32 is not a rank of the 32 ranks" "$tmp/root.out" ||
  say "--root 32 on 32 ranks: exit $rc, $(cat "$tmp/root.out")"

# The ring at 1 GiB on one host runs at the link's bandwidth: within 10 %
# of the modelled 1000 Gb/s (125 GB/s).
"$sim" --hosts 1 --gpus 8 --nvlink-gbps 1000 allreduce -b 1G -e 1G --algo ring --json > "$tmp/c.json" ||
  say "xccl-sim exited $?"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[0]
ok = abs(r["busbw"] - 125) <= 12.5
print(("" if ok else "FAIL: ") + "ring, 1 GiB, 1 host x 8: busbw %.2f GB/s of 125" % r["busbw"])
sys.exit(0 if ok else 1)' "$tmp/c.json" || fail=1

# The folded ring gives the event-by-event ring's time on a uniform cluster.
"$sim" --hosts 4 --gpus 4 allreduce -b 1M -e 1M --algo ring --json > "$tmp/d.json" || say "xccl-sim exited $?"
"$sim" --hosts 4 --gpus 4 --max-msgs 1000 allreduce -b 1M -e 1M --algo ring --json > "$tmp/e.json" ||
  say "xccl-sim exited $?"
python3 -c '
import json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
ok = a["method"] == "event" and b["method"] == "symmetric" and abs(a["time_us"] - b["time_us"]) <= 0.01 * a["time_us"]
print(("" if ok else "FAIL: ") + "ring 1 MiB on 16 ranks: %s %.2f us, %s %.2f us" % (a["method"], a["time_us"], b["method"], b["time_us"]))
sys.exit(0 if ok else 1)' "$tmp/d.json" "$tmp/e.json" || fail=1

# hier (host_hier.c) on 4 hosts x 8 GPUs sharing one 100 Gb/s NIC per host:
# at 64 MiB it sends 2(H-1)/H B per host where the flat ring sends
# 2(k-1)/k B, so it beats the ring, the tuner picks it, and its bytes
# between hosts per rank are 2(H-1)/H * B/G (3/4 of 8 MiB).
"$sim" --hosts 4 --gpus 8 --nics 1 --nic-gbps 100 allreduce -b 64M -e 64M --algo ring,hier --json > "$tmp/h.json" ||
  say "xccl-sim exited $?"
python3 -c '
import json, sys
r = {x["algo"]: x for x in json.load(open(sys.argv[1]))}
h, g = r["hier"], r["ring"]
want = 2 * 3 / 4 * (64 << 20) / 8
ok = h["time_us"] < g["time_us"] and h["chosen"] and abs(h["net_bytes"] - want) <= 0.01 * want
print(("" if ok else "FAIL: ") + "4x8, one NIC per host, 64 MiB: hier %.0f us (%s, %.0f B/rank between hosts, want %.0f), ring %.0f us"
      % (h["time_us"], "chosen" if h["chosen"] else "not chosen", h["net_bytes"], want, g["time_us"]))
sys.exit(0 if ok else 1)' "$tmp/h.json" || fail=1

# hier's phase (2) between hosts: forced to rings (XCCL_HIER_INTER=ring),
# the replay folded onto host 0 (--max-msgs small) gives the full replay's
# times on 4 hosts x 8, at 1 and 16 MiB; at 8 B on 16 hosts the trees
# (2 log2 H steps) beat the rings (2(H-1)), and auto takes the trees.
for m in "full 1e9 1e9" "fold 1000 5000"; do # --max-msgs at 1 and 16 MiB: the folded replay's messages fit, the full's not
  set -- $m
  XCCL_HIER_INTER=ring "$sim" --hosts 4 --gpus 8 --max-msgs $2 allreduce -b 1M -e 1M --algo hier --json > "$tmp/h$1-1.json" &&
    XCCL_HIER_INTER=ring "$sim" --hosts 4 --gpus 8 --max-msgs $3 allreduce -b 16M -e 16M --algo hier --json \
      > "$tmp/h$1-16.json" || say "xccl-sim exited $?"
done
for i in ring tree auto; do
  XCCL_HIER_INTER=$i "$sim" --hosts 16 --gpus 8 allreduce -b 8 -e 8 --algo hier --json > "$tmp/hi$i.json" ||
    say "xccl-sim exited $?"
done
python3 - "$tmp" <<'PY' || fail=1
import json, sys
d = sys.argv[1]
full, fold = ([json.load(open("%s/h%s-%d.json" % (d, m, b)))[0] for b in (1, 16)] for m in ("full", "fold"))
bad = []
for a, b in zip(full, fold):
    if a["method"] != "event" or b["method"] != "symmetric" or a["time_us"] != b["time_us"]:
        bad.append("hier rings, %d B on 4x8: %s %.2f us, %s %.2f us" % (a["bytes"], a["method"], a["time_us"], b["method"], b["time_us"]))
t = {i: json.load(open("%s/hi%s.json" % (d, i)))[0]["time_us"] for i in ("ring", "tree", "auto")}
if not (t["tree"] < t["ring"] and t["auto"] == t["tree"]):
    bad.append("hier 8 B on 16x8: rings %.2f us, trees %.2f us, auto %.2f us" % (t["ring"], t["tree"], t["auto"]))
for m in bad: print("FAIL:", m)
if not bad:
    print("hier: folded rings = full replay at %s; 8 B on 16x8: rings %.2f us, trees %.2f us" %
          (", ".join("%d B %.2f us" % (b["bytes"], b["time_us"]) for b in fold), t["ring"], t["tree"]))
sys.exit(1 if bad else 0)
PY

# The slot window: a tree that may fill one slot per connection waits a
# round trip per piece (20 us NICs: the round trip dwarfs a piece's time),
# slower than with XCCL_STEPS slots. (Unlimited is not
# always faster: senders that run ahead queue the messages others wait on.)
for w in 1 8 0; do
  "$sim" --hosts 4 --gpus 4 --nic-us 20 --window $w allreduce -b 16M -e 16M --algo tree --json > "$tmp/w$w.json" ||
    say "xccl-sim exited $?"
done
python3 -c '
import json, sys
t = [json.load(open(f))[0]["time_us"] for f in sys.argv[1:4]]
ok = t[0] > 2 * t[1]
print(("" if ok else "FAIL: ") + "tree 16 MiB on 16 ranks: window 1 %.0f us, 8 %.0f us, unlimited %.0f us" % tuple(t))
sys.exit(0 if ok else 1)' "$tmp/w1.json" "$tmp/w8.json" "$tmp/w0.json" || fail=1

# Bootstrap on 65,536 ranks: the ring takes k-1 steps, Bruck 16 rounds and
# less than a tenth of the ring's time, both moving k-1 blocks per rank.
"$sim" --hosts 8192 --gpus 8 --bootstrap --json > "$tmp/boot.json" || say "xccl-sim --bootstrap exited $?"
python3 -c '
import json, sys
r = {x["algo"]: x for x in json.load(open(sys.argv[1]))}
g, b = r["bootstrap_ring"], r["bootstrap_bruck"]
ok = g["steps"] == 65535 and b["steps"] == 16 and 0 < b["time_us"] < g["time_us"] / 10 and g["bytes_per_rank"] == b["bytes_per_rank"]
print(("" if ok else "FAIL: ") + "bootstrap, 65536 ranks: ring %.1f ms, bruck %.2f ms" % (g["time_us"] / 1e3, b["time_us"] / 1e3))
sys.exit(0 if ok else 1)' "$tmp/boot.json" || fail=1

# 65,536 ranks, 8 B, the tree event by event: under 60 s.
start=$(date +%s)
"$sim" --hosts 8192 --gpus 8 allreduce -b 8 -e 8 --algo tree --json > "$tmp/f.json" || say "xccl-sim exited $?"
secs=$(($(date +%s) - start))
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[0]
ok = r["method"] == "event" and r["time_us"] > 0 and int(sys.argv[2]) < 60
print(("" if ok else "FAIL: ") + "tree, 8 B, 65536 ranks: %s, %.2f us simulated in %s s" % (r["method"], r["time_us"], sys.argv[2]))
sys.exit(0 if ok else 1)' "$tmp/f.json" "$secs" || fail=1

# --topo: a host is the machine of a topology file (sim_topo.c). An NCCL
# dump of an 8 x H100 NVSwitch VM with 8 CX7 200G NICs, and an hwloc export
# of a 4 x A100 PCIe node with 4 mlx5 HDR (speed not in the file: 100 Gb/s
# for an RDMA NIC) and two Ethernet ports that no channel uses. The line
# that says what was taken is on stdout (text) or stderr (--json, which
# stays a plain list).
topos=$(dirname "$0")/../data/topologies
h100=$topos/nccl/ibmcloud-gx3d-160x1792x8h100-vsi-topo.xml
a100=$topos/hwloc/psmgmt-jureca-dc-gpu-4xA100-4xHDR-hwloc22.xml
topo_check() { # name, output file, then grep -E patterns that must all match
  name=$1 out=$2
  shift 2
  for pat; do grep -Eq -- "$pat" "$out" || say "--topo $name: no '$pat' in: $(cat "$out")"; done
}
"$sim" --hosts 2 --topo "$h100" allreduce -b 1M -e 1M --algo ring > "$tmp/t1.txt" || say "--topo h100 exited $?"
topo_check h100 "$tmp/t1.txt" '^# xccl-sim: --topo .*: 8 of its 8 GPUs per host, GPU link NVLink 3600 Gb/s, 8 rail NIC\(s\) mlx5_7,.*,mlx5_0 of 200 Gb/s, 8 channel\(s\)$' \
  '2 hosts x 8 GPUs = 16 ranks.* 8 NIC\(s\) per host of 200 Gb/s .*; 8 channels' '^ +1048576 +ring'
"$sim" --hosts 2 --topo "$a100" allreduce -b 1M -e 1M --algo ring > "$tmp/t2.txt" || say "--topo a100 exited $?"
topo_check a100 "$tmp/t2.txt" '^# xccl-sim: --topo .*: 4 of its 4 GPUs per host, GPU link PHB 252 Gb/s, [1-4] rail NIC\(s\) mlx5_[0-3](,mlx5_[0-3])* of 100 Gb/s' \
  '2 hosts x 4 GPUs = 8 ranks, allreduce \(float\); NVLink 252 Gb/s .*, [1-4] NIC\(s\) per host of 100 Gb/s' '^ +1048576 +ring'
# Flags win, given before or after --topo; --json keeps its rows.
"$sim" --nic-gbps 50 --hosts 2 --topo "$h100" --gpus 4 --channels 2 allreduce -b 1M -e 1M --json > "$tmp/t3.json" 2> "$tmp/t3.err" ||
  say "--topo with flags exited $?"
topo_check flags "$tmp/t3.err" ': 4 of its 8 GPUs per host, .*4 rail NIC\(s\) .*\(--nic-gbps kept\), 4 channel\(s\) \(--channels kept\)'
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
ok = rows and all(set(("algo", "bytes", "time_us", "busbw", "chosen")) <= set(r) for r in rows)
print(("" if ok else "FAIL: ") + "--topo --json: %d rows" % len(rows))
sys.exit(0 if ok else 1)' "$tmp/t3.json" || fail=1
# A file that is not a topology, and one without a GPU: one sentence, exit 2.
echo "not a topology" > "$tmp/bad.xml"
"$sim" --hosts 2 --topo "$tmp/bad.xml" allreduce > "$tmp/t4.out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/t4.out")" = 1 ] && grep -q "^xccl-sim: --topo: .*bad.xml: neither an hwloc XML export" "$tmp/t4.out" ||
  say "--topo on a bad file: exit $rc, $(cat "$tmp/t4.out")"
"$sim" --hosts 2 --topo "$topos/nccl/aws-g5.48xlarge-a10g-topo.xml" allreduce > "$tmp/t5.out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/t5.out")" = 1 ] && grep -q "^xccl-sim: --topo .*: the topology has no GPU" "$tmp/t5.out" ||
  say "--topo on a file without GPUs: exit $rc, $(cat "$tmp/t5.out")"
[ $fail = 0 ] && echo "--topo: H100 and A100 files read, flags kept, bad files refused"

# All-to-all: pairwise and Bruck on 64 ranks. With a per-message cost
# (--msg-us 1) Bruck's log2 k rounds beat pairwise's k-1 messages for small
# blocks and lose for large ones, and the tuner picks the faster at both ends; each rank sends between
# hosts what the rounds' formula says (the mean over ranks): Bruck round j
# moves the blocks whose number has bit j set to rank + 2^j, pairwise B to each
# of the k - G ranks on other hosts.
"$sim" --hosts 16 --gpus 4 --msg-us 1 alltoall -b 16K -e 64M -f 4096 --json > "$tmp/a2a.json" || say "alltoall exited $?"
python3 -c '
import json, sys
rows = {(r["algo"], r["bytes"]): r for r in json.load(open(sys.argv[1]))}
k, G, bad = 64, 4, []
for b in (16384, 64 << 20):
    p, q = rows.get(("pairwise", b)), rows.get(("bruck", b))
    if not p or not q: bad.append("%d B: rows missing" % b); continue
    fast = "bruck" if b == 16384 else "pairwise"
    if (q["time_us"] < p["time_us"]) != (fast == "bruck"): bad.append("%d B: %s not faster" % (b, fast))
    if not rows[(fast, b)]["chosen"]: bad.append("%d B: %s not chosen" % (b, fast))
    B = b // k
    if p["net_bytes"] != (k - G) * B: bad.append("%d B: pairwise net_bytes %s" % (b, p["net_bytes"]))
    want = 0  # the mean over ranks r: round j sends to r + 2^j, counted when that is on another host
    for r in range(k):
        for j in range(6):
            d = 1 << j
            if r // G != (r + d) % k // G: want += sum(1 for i in range(1, k) if i & d) * B
    want /= k
    if q["net_bytes"] != want: bad.append("%d B: bruck net_bytes %s, want %g" % (b, q["net_bytes"], want))
for m in bad: print("FAIL: alltoall:", m)
sys.exit(1 if bad else 0)' "$tmp/a2a.json" || fail=1
[ $fail = 0 ] && echo "alltoall: Bruck for small blocks, pairwise for large, bytes as their formulas"

# PAT at 65,535 hosts of one rank (issue 45): the all-gather and the
# reduce-scatter of 8-byte shares (about 512 KiB in all) replay, each in
# ceil(log2 k) = 16 hops: far under the ring's 65,534 hops, and the tuner's
# pick, rab's halves taking 2 more for their fold; each rank sends (k-1)
# shares between hosts; under a minute. (On a power of two PAT and rab's
# half are priced the same and rab, the earlier entry, runs.)
for c in allgather reducescatter; do
  "$sim" --hosts 65535 --gpus 1 $c -b 512K -e 512K --algo ring,pat --json >"$tmp/pat-$c.json" ||
    say "xccl-sim $c on 65536 ranks exited $?"
done
python3 -c '
import json, sys
bad = []
k, B = 65535, 8
for f in sys.argv[1:]:
    t = {r["algo"]: r for r in json.load(open(f))}
    p, g = t.get("pat"), t.get("ring")
    if not p or not g: bad.append("%s: rows %s" % (f, sorted(t))); continue
    if not (p["time_us"] * 100 < g["time_us"] and p["chosen"]): bad.append("%s: pat %.1f us (chosen %s), ring %.1f us" % (f, p["time_us"], p["chosen"], g["time_us"]))
    if p["net_bytes"] != (k - 1) * B: bad.append("%s: pat net_bytes %s, want %d" % (f, p["net_bytes"], (k - 1) * B))
    if p["sim_ms"] > 60e3: bad.append("%s: pat took %.0f s to replay" % (f, p["sim_ms"] / 1e3))
    print("65535 ranks, 8-byte shares, %s: pat %.1f us, ring %.1f us (replayed in %.1f s)" % (f.split("pat-")[1][:-5], p["time_us"], g["time_us"], p["sim_ms"] / 1e3))
for m in bad: print("FAIL: pat:", m)
sys.exit(1 if bad else 0)' "$tmp/pat-allgather.json" "$tmp/pat-reducescatter.json" || fail=1

# --cores: 2 hosts of 1 GPU with half a core each (f = 2): the ring's two
# 8-byte steps each wait one hand-over more (tuning.h's 8 us), and 64 MiB
# takes over twice as long (bandwidth / 2, and a hand-over more where a
# piece's step waits on the last); a negative count is refused.
for c in 0 0.5; do
  "$sim" --hosts 2 --gpus 1 --cores $c allreduce -b 8 -e 64M -f 8388608 --algo ring --json >"$tmp/cores$c.json" ||
    say "--cores $c exited $?"
done
python3 -c '
import json, sys
a, b = ({r["bytes"]: r["time_us"] for r in json.load(open(f))} for f in sys.argv[1:3])
bad = []
if abs(b[8] - a[8] - 2 * 8.0) > 0.01: bad.append("8 B: %g us against %g without" % (b[8], a[8]))
r = b[64 << 20] / a[64 << 20]
if not 2 < r < 2.6: bad.append("64 MiB: %.3g times the time without" % r)
for m in bad: print("FAIL: --cores:", m)
sys.exit(1 if bad else 0)' "$tmp/cores0.json" "$tmp/cores0.5.json" || fail=1
"$sim" --hosts 2 --gpus 1 --cores -1 allreduce >/dev/null 2>&1 && say "--cores -1 accepted"
[ $fail = 0 ] && echo "--cores: a hand-over per step and half the bandwidth at two ranks per core"

[ $fail = 0 ] && echo "xccl-sim: all checks passed"
exit $fail
