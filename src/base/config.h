/*
 * config.h — every knob of xccl, in one table, read from the environment once.
 *
 * An entry is X(NAME, TYPE, default, min, max, description); the variable is
 * XCCL_<NAME>. An entry written S(...), with the same columns, is a setting
 * that every rank of a communicator must share: a rank whose value differs
 * would speak another wire protocol or run another schedule, and hang its
 * peers. Each rank sends its values of the S entries with its peer info at
 * init (config_shared_t), and init fails on every rank, naming the first
 * that differs, before any connection is made. Mark an entry S when ranks
 * that differ in it cannot work together; leave it X when each rank may
 * have its own (log settings, timeouts, per-node devices). Types: INT (decimal), SIZE (bytes, with an optional K/M/G
 * suffix, powers of 1024), DOUBLE, BOOL (0/1, yes/no, true/false, on/off),
 * STR. A value that does not parse or is out of [min, max] gets a warning and
 * the default. An XCCL_* variable that is not in the table gets a warning that
 * names the nearest known one. `xccl-info` prints the table.
 *
 * NCCL's variables are aliases (config_aliases, in config.c): where XCCL_X is
 * unset and an NCCL variable with the same meaning is set, its value, in
 * xccl's syntax where NCCL's differs, is used exactly as XCCL_X would be, and
 * a bad one is named in the warning. XCCL_X wins when both are set (an INFO
 * line says the NCCL one was ignored, a WARN when their values differ); an
 * NCCL value with no xccl equivalent gets a WARN and is ignored; every other
 * NCCL_* variable gets one INFO line saying that xccl ignores it.
 *
 * To add a knob: add one line here. Nothing else reads the environment.
 */
#ifndef XCCL_BASE_CONFIG_H
#define XCCL_BASE_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define XCCL_CONFIG_TABLE(X, S)                                                                    \
  X(DEBUG, STR, "WARN", 0, 0, "Log level: NONE, VERSION, WARN, INFO or TRACE.")                    \
  X(DEBUG_SUBSYS, STR, "ALL", 0, 0,                                                                \
    "Subsystems to log, comma separated: INIT,COLL,NET,PROXY,BOOTSTRAP,TOPO,ENV or ALL; "          \
    "a leading ^ logs all but those listed.")                                                      \
  X(DEBUG_FILE, STR, "", 0, 0,                                                                     \
    "Write the log to this file instead of stderr; %h becomes the host name, %p the pid.")        \
  X(TIMEOUT, DOUBLE, "300", 0.001, 1e7,                                                            \
    "Seconds any wait may last (bootstrap, connection set-up, each step of a collective) "        \
    "before the operation fails with xcclTimeout naming the peer it waited on.")                   \
  X(COMM_BLOCKING, BOOL, "1", 0, 1,                                                                 \
    "What a config that leaves blocking unset gets (xcclCommInitRankConfig, xcclCommSplit): "     \
    "1 blocking, 0 non-blocking (xcclInProgress, then poll xcclCommGetAsyncError).")              \
  X(RANK, INT, "-1", -1, 1 << 30, "This process's rank for xcclCommInitFromEnv (set by xccl-run).") \
  X(NRANKS, INT, "-1", -1, 1 << 30, "Number of ranks for xcclCommInitFromEnv (set by xccl-run).")   \
  X(LOCAL_RANK, INT, "-1", -1, 1 << 30, "Rank among the processes of this host (set by xccl-run).") \
  X(ROOT, STR, "", 0, 0,                                                                           \
    "host:port of the bootstrap root for xcclCommInitFromEnv; rank 0 listens there. "             \
    "IPv6 as [addr]:port.")                                                                        \
  X(UNIQUE_ID, STR, "", 0, 0,                                                                      \
    "The unique id in hex (256 digits), as set by xccl-run; takes precedence over XCCL_ROOT.")     \
  X(SECRET, STR, "", 0, 0,                                                                         \
    "Shared secret for bootstrap authentication when the job starts from XCCL_ROOT or a "         \
    "launcher's variables instead of a unique id. Every rank must set the same value.")            \
  X(LIBRARY, STR, "", 0, 0,                                                                        \
    "Path of the libxccl.so that the Python package (import xccl) loads, in place of the one it "  \
    "was built or installed with. The C library itself does not read it.")                         \
  X(HOME, STR, "", 0, 0,                                                                           \
    "Prefix xccl was installed to; where import xccl.torch looks for lib/ and include/ when it "   \
    "has to build its extension on the fly (pip installs). Not read by the C library.")            \
  X(INCLUDE_DIR, STR, "", 0, 0,                                                                    \
    "Directory holding xccl.h, for xccl.torch's on-the-fly build. Not read by the C library.")    \
  X(TORCH_EXT_DIR, STR, "", 0, 0,                                                                  \
    "Where xccl.torch's on-the-fly build goes (default ~/.cache/xccl/torch_ext/<versions>). "      \
    "Not read by the C library.")                                                                  \
  X(SOCKET_IFNAME, STR, "", 0, 0,                                                                  \
    "Network interfaces for bootstrap and the socket transport: prefixes, comma separated "       \
    "(eth,ib); =name for exact names; ^ to exclude. Each one that matches is a socket device "    \
    "(channels spread over them; the bootstrap takes the first). Default: those that are up and " \
    "not loopback or a container bridge, else loopback.")                                          \
  X(SOCKET_FAMILY, STR, "", 0, 0, "Restrict interfaces to AF_INET or AF_INET6.")                   \
  S(NSOCKS, INT, "4", 1, 16, "TCP streams per socket-transport connection (messages of 64 KiB and more are split).") \
  S(TLS, BOOL, "0", 0, 1,                                                                          \
    "1: the socket transport's streams run TLS 1.3 (OpenSSL; kernel offload where the tls ULP is " \
    "loaded), the peer authenticated by a key derived from the bootstrap secret (and from the "    \
    "program's key, xcclSetEncryption/ncclSetEncryption, which also sets this). Every rank must " \
    "set it. The bootstrap's connections run TLS too (their own key); the ib transport does not.") \
  X(TLS_CERT, STR, "", 0, 0,                                                                      \
    "With XCCL_TLS=1: this rank's certificate (PEM file); with XCCL_TLS_KEY and XCCL_TLS_CA, "     \
    "peers authenticate by certificates verified against the CA, both ways, instead of the key "   \
    "derived from the secret. Unset: the pre-shared key.")                                         \
  X(TLS_KEY, STR, "", 0, 0, "The private key of XCCL_TLS_CERT (PEM file).")                         \
  X(TLS_CA, STR, "", 0, 0, "The CA certificates (PEM file) a peer's certificate must chain to.")   \
  S(NET, STR, "", 0, 0, "Force a network transport by name: socket or ib.")                        \
  S(TRANSPORT, STR, "", 0, 0,                                                                      \
    "Force how ranks on one host talk: shm or socket. Default: shm between ranks of one host.")   \
  S(SHM_DISABLE, BOOL, "0", 0, 1, "1: never use shared memory (same as XCCL_TRANSPORT=socket).")  \
  S(SHM_COPY, STR, "auto", 0, 0,                                                                  \
    "How collectives between ranks of one host move host memory: slot (through the connections' "   \
    "slots), single (each rank reads its peers' buffers where they are with the kernel's cross-"    \
    "memory attach, process_vm_readv), zero (as single, but buffers from xcclMemAlloc are mapped "  \
    "and read in place), auto (the cost model: the slots for small messages, zero/single for "     \
    "large). Where the ranks cannot read each other's memory, one INFO line and the slots.")       \
  X(SHM_MEMFD, BOOL, "1", 0, 1,                                                                   \
    "1: shared memory between ranks of one host has no name (memfd), so a rank killed at any "      \
    "moment leaves nothing in /dev/shm; peers in another PID namespace or of another user get a "    \
    "named segment, unlinked once mapped. 0: always named segments.")                               \
  S(NET_GDR_LEVEL, STR, "PXB", 0, 0,                                                              \
    "How close a GPU and a NIC must be for GPUDirect RDMA (the NIC reading and writing GPU "       \
    "memory): LOC never, PIX one PCI switch, PXB several switches, PHB through the CPU's host "     \
    "bridge, SYS anywhere (also where the topology does not show them). Farther: staged through "  \
    "host memory.")                                                                                \
  S(P2P_DISABLE, BOOL, "0", 0, 1,                                                                 \
    "1: device operations between ranks of one host move their data through mapped host memory "   \
    "instead of the receiving GPU's memory shared through CUDA IPC (the p2p transport).")          \
  X(HOSTID, STR, "", 0, 0,                                                                         \
    "Host identity for choosing shared memory, instead of host name + network namespace: ranks "  \
    "with equal values are on one host.")                                                          \
  S(NCHANNELS, INT, "2", 1, 32,                                                                    \
    "Channels (independent rings, each with its own connections) a collective is split over.")    \
  S(MIN_NCHANNELS, INT, "1", 1, 32,                                                                \
    "Fewest channels: the rings the topology search finds (or XCCL_GRAPH_FILE gives) are repeated, " \
    "each copy with its share of the bandwidth, up to this many; when set, also raises "            \
    "XCCL_NCHANNELS to it.")                                                                       \
  S(MAX_NCHANNELS, INT, "16", 1, 32,                                                               \
    "Most channels: the cap on the rings the topology search finds (or XCCL_GRAPH_FILE gives); "    \
    "when set, also lowers XCCL_NCHANNELS to it. A larger XCCL_MIN_NCHANNELS is lowered to it.")  \
  S(CHUNK_SIZE, SIZE, "512K", 4096, 1 << 30,                                                       \
    "Bytes per slot: the unit a collective moves in one step. Each connection has 8 slots.")       \
  S(TUNE, STR, "table", 0, 0,                                                                      \
    "Where the cost model that picks each call's algorithm gets its per-step latency and "         \
    "bandwidth: table (the documented constants of tuning.c, by link kind) or measure (once per "  \
    "communicator at init: a 8-byte and a 4 MiB ring all-reduce, timed on every rank, the "          \
    "medians taken by all; about 2(k-1) x 25 steps). Every rank must use the same value.")        \
  S(ALGO_CHUNK_SIZE, SIZE, "64K", 4096, 1 << 30,                                                   \
    "Bytes per slot of the connections the algorithms other than the ring make to their peers "    \
    "(rd, tree, rab, hier, direct; made on first use): they carry small messages, or many at once, so a " \
    "rank with many peers spends 8 x this per peer instead of 8 x XCCL_CHUNK_SIZE.")               \
  S(RMA_CHUNK_SIZE, SIZE, "64K", 4096, 1 << 30,                                                    \
    "Bytes per slot of the connections the one-sided calls (xcclPutSignal) use, made between every " \
    "pair at a communicator's first window: each rank spends 8 x this per peer from then on. Larger " \
    "moves large puts faster (fewer, bigger steps) for more memory.")                               \
  S(ALGO, STR, "", 0, 0,                                                                           \
    "Force an algorithm: ring, rd (recursive doubling), tree (double binary tree: all-reduce, "    \
    "broadcast, reduce), "                                                                          \
    "rab (Rabenseifner: all-reduce; reduce-scatter by halving, all-gather by doubling), hier "     \
    "(hierarchical: inside hosts, then across them; all-reduce), "                                 \
    "direct (one host: peers' buffers read in place, see XCCL_SHM_COPY) or line (one host: "       \
    "all-reduce of at most 12 bytes through cache lines the ranks share), for every collective it " \
    "serves or per "                                                                              \
    "collective (allreduce:rd,broadcast:ring). Default: the cost model picks per call.")           \
  S(HIER_INTER, STR, "auto", 0, 0,                                                                \
    "How hier's all-reduce runs between hosts, among each shard's owners: ring (2(H-1) steps, the " \
    "fewest bytes), tree (2 ceil(log2 H) steps) or auto (the cheaper by the cost model, per call).") \
  S(CHECKSUM, BOOL, "0", 0, 1,                                                                     \
    "1: every chunk carries a CRC32C of its data, checked by the receiving rank; a mismatch fails "  \
    "the call naming the peer and chunk. Every rank must use the same value.")                      \
  S(CHECK, BOOL, "0", 0, 1,                                                                        \
    "Before each collective, compare what every rank called (collective, count, type, op, root) "   \
    "over the bootstrap and fail with the ranks that differ instead of hanging. Costs one "         \
    "bootstrap all-gather per call.")                                                              \
  X(CPU_BIND, BOOL, "1", 0, 1,                                                                     \
    "1: where the ranks of a host, each its own process, outnumber the CPUs they share (the same " \
    "set for each), the thread that creates a rank's first such communicator is bound to one CPU " \
    "of the set, by local rank, so that waiting ranks are not piled onto fewer cores. 0: leave "   \
    "CPU affinity alone.")                                                                         \
  X(LONE, BOOL, "1", 0, 1,                                                                         \
    "1: a collective alone (outside any group) whose algorithm keeps its tables in the "           \
    "communicator, such as a small all-reduce by recursive doubling over shared memory, skips the " \
    "group launch's bookkeeping. 0: every call takes the group launch (to compare the two).")      \
  X(SPIN_COUNT, INT, "200", 0, 1 << 30,                                                            \
    "Idle passes of the proxy thread over its connections before it sleeps in poll().")              \
  X(SPIN_US, INT, "-1", -1, 100000,                                                                \
    "Microseconds a caller waiting for a peer polls the slot counters before it sleeps (-1: 50). "   \
    "When this host runs more ranks than the process may use cores, the caller gives its core away " \
    "(sched_yield) between polls, so the peer it waits for can run.") \
  X(FAULT, STR, "", 0, 0,                                                                          \
    "Fault injection rules for failure tests, e.g. rank=2,op=allreduce,seq=10,step=3,action=close; "  \
    "several separated by ';'. Actions: close, delay:<ms>, stall, corrupt, error, kill; p=<prob> "   \
    "with seed=<n> for random faults that replay exactly. See src/base/fault.h.")                  \
  X(DUMP_DIR, STR, "/tmp", 0, 0,                                                                   \
    "Directory for in-flight state dumps (xccl-<comm>-r<rank>.dump), written when an operation "   \
    "times out or loses a connection and on XCCL_DUMP_SIGNAL; xccl-stuck reads them and names the " \
    "rank everyone waits on. none: no dumps.")                                                     \
  X(DUMP_SIGNAL, STR, "0", 0, 0,                                                                   \
    "Signal (name such as USR1, or number) on which every communicator of the process writes its " \
    "in-flight state dump to XCCL_DUMP_DIR. 0: off.")                                              \
  X(STATS_FILE, STR, "", 0, 0,                                                                     \
    "Write the process's metrics in Prometheus text format (node_exporter's textfile collector) to " \
    "this file, every XCCL_STATS_INTERVAL seconds and when a communicator is destroyed, aborted or " \
    "fails; %r becomes the rank (of the process's first communicator), %h the host name, %p the " \
    "pid. One file per process: each communicator is a comm label. Empty: off.")                   \
  X(STATS_INTERVAL, DOUBLE, "10", 0, 86400,                                                        \
    "Seconds between rewrites of XCCL_STATS_FILE; 0: only when a communicator is destroyed, "      \
    "aborted or fails.")                                                                           \
  X(TRACE, STR, "", 0, 0,                                                                          \
    "Write each rank's timeline (Chrome trace-event JSON: collectives, kernel steps, waits, network " \
    "sends and receives) to DIR/xccl-trace-<comm>-r<rank>.json at destroy, abort or failure; "     \
    "tools/xccl-trace merges the ranks' files onto rank 0's clock. Empty: off.")                    \
  X(TRACE_EVENTS, INT, "65536", 1024, 1 << 24,                                                     \
    "Events each communicator keeps for XCCL_TRACE (80 bytes each); when full the oldest "    \
    "are dropped and the file counts them.")                                                       \
  /* ---- topology (src/topo) ---- */                                                              \
  X(TOPO_FILE, STR, "", 0, 0,                                                                      \
    "Read this node's topology from this file instead of detecting it: an hwloc XML export "       \
    "(lstopo --of xml; formats 1.x, 2.x, 3.0) or NCCL topology XML (full dump or hint file).")    \
  X(TOPO_DUMP_FILE, STR, "", 0, 0,                                                                 \
    "At communicator init, write the topology xccl sees to this file as NCCL topology XML, "       \
    "which NCCL (NCCL_TOPO_FILE) and XCCL_TOPO_FILE read back.")                                   \
  X(GRAPH_FILE, STR, "", 0, 0,                                                                     \
    "Use the rings of this NCCL graph file (what NCCL_GRAPH_DUMP_FILE and xccl-topo --format "      \
    "nccl-graph write) instead of searching: each channel's GPU order and NIC. A file that does "   \
    "not fit this node's topology fails with its line and the reason.")                            \
  X(GRAPH_DUMP_FILE, STR, "", 0, 0,                                                                \
    "At communicator init, the lowest rank of each host writes the rings its communicator runs "  \
    "there to this file, as NCCL's graph XML (what XCCL_GRAPH_FILE and NCCL_GRAPH_FILE read).")   \
  /* ---- ib transport (src/net/net_ib*.c) ---- */                                                \
  X(IB_HCA, STR, "", 0, 0,                                                                         \
    "Verbs devices and ports the ib transport may use: mlx5_0:1,mlx5_1 (prefixes, optional "       \
    "port); =name for exact names; ^ to exclude. Default: every active port with an IP address.") \
  X(IB_GID_INDEX, INT, "-1", -1, 1024,                                                             \
    "GID table index whose address connections use (rdma_cm resolves from it). -1: the first "    \
    "RoCE v2 IPv4 GID, else the first address of the port's network interface.")                   \
  X(IB_ADDR_FAMILY, STR, "", 0, 0,                                                                 \
    "RoCE: the address family of the GID connections use when XCCL_IB_GID_INDEX is -1: AF_INET "   \
    "or AF_INET6. Empty: IPv4 first, else IPv6.")                                                  \
  X(IB_ADDR_RANGE, STR, "", 0, 0,                                                                  \
    "RoCE: only GIDs whose address lies in this CIDR range (10.0.0.0/8, fd00::/8) when "            \
    "XCCL_IB_GID_INDEX is -1. Empty: any.")                                                        \
  X(IB_ROCE_VERSION_NUM, INT, "0", 0, 2,                                                           \
    "RoCE: the GID type connections use when XCCL_IB_GID_INDEX is -1: 1 or 2; 0: v2 first, then "  \
    "v1. rdma_cm sends with its own default type for the address (its configfs "                 \
    "default_roce_mode); this setting chooses the address by the GIDs it has.")                    \
  X(IB_TC, INT, "0", 0, 255, "Traffic class (IP TOS on RoCE) of ib connections.")                  \
  X(IB_SL, INT, "-1", -1, 15, "InfiniBand service level of ib connections; -1: the route's.")      \
  X(IB_PKEY, INT, "0", 0, 65535,                                                                   \
    "InfiniBand partition key of ib connections; 0: the route's (that of the IPoIB interface).")    \
  X(IB_TIMEOUT, INT, "18", 1, 31,                                                                  \
    "ib ack timeout exponent: a packet is retried after 4.096 us * 2^value without an ack.")        \
  X(IB_RETRY_CNT, INT, "7", 0, 7, "ib transport retries before a send fails with retry exceeded.") \
  S(IB_QPS_PER_CONNECTION, INT, "1", 1, 16,                                                        \
    "Queue pairs per ib connection; messages go round-robin over them (or are split, "             \
    "XCCL_IB_SPLIT_DATA_ON_QPS).")                                                                 \
  X(IB_SPLIT_DATA_ON_QPS, BOOL, "0", 0, 1,                                                         \
    "ib: 1: each message of 16 KiB or more is split over every queue pair of its connection; 0: "  \
    "each message goes whole on one queue pair, the next message on the next.")                    \
  X(IB_ADAPTIVE_ROUTING, INT, "-1", -1, 1,                                                         \
    "ib: 1: a message of XCCL_IB_AR_THRESHOLD bytes or more goes as an RDMA write followed by an "  \
    "empty write with immediate (safe when the fabric reorders packets); 0: one write with "       \
    "immediate; -1: 1 on InfiniBand, 0 on RoCE.")                                                  \
  X(IB_AR_THRESHOLD, INT, "8192", 0, 2147483647,                                                   \
    "ib: smallest message sent in XCCL_IB_ADAPTIVE_ROUTING's two-write form.")                     \
  X(IB_PCI_RELAXED_ORDERING, INT, "2", 0, 2,                                                       \
    "ib: register memory with PCI relaxed ordering: 1 on (init fails where verbs lacks it), 0 "   \
    "off, 2 where the verbs library offers it.")                                                   \
  X(IB_CONNECT_RETRIES, INT, "5", 0, 30,                                                           \
    "ib: times a connection's address or route resolution is tried again after it failed, waiting " \
    "100 ms, 200 ms, ... (at most 3.2 s) between tries.")                                            \
  X(IB_FAULT_UNREACHABLE, INT, "0", 0, 30,                                                         \
    "Test only: the first n address resolutions of each ib connection aim at 192.0.2.1 (routed "   \
    "nowhere), as if the peer's route were missing for a while.")                                   \
  X(IB_FAULT_RKEY, BOOL, "0", 0, 1,                                                                \
    "Test only: the ib receiver advertises a wrong remote key, so the sender's RDMA write fails "  \
    "with a remote access error.")

typedef enum {
#define XCCL_CFG_ENUM(name, type, def, lo, hi, desc) CFG_##name,
  XCCL_CONFIG_TABLE(XCCL_CFG_ENUM, XCCL_CFG_ENUM)
#undef XCCL_CFG_ENUM
  CFG_COUNT
} config_id_t;

/* The S entries, numbered in table order. */
typedef enum {
#define XCCL_CFG_OWN(name, type, def, lo, hi, desc)
#define XCCL_CFG_SHARED(name, type, def, lo, hi, desc) CFG_SHARED_##name,
  XCCL_CONFIG_TABLE(XCCL_CFG_OWN, XCCL_CFG_SHARED)
#undef XCCL_CFG_OWN
#undef XCCL_CFG_SHARED
  CFG_SHARED_COUNT
} config_shared_id_t;

typedef enum { CFG_T_INT, CFG_T_SIZE, CFG_T_DOUBLE, CFG_T_BOOL, CFG_T_STR } config_type_t;

typedef struct {
  const char *name;  /* without the XCCL_ prefix */
  config_type_t type;
  const char *def;
  double min, max;
  const char *desc;
  int shared; /* its config_shared_id_t for an S entry; -1 for an X entry */
} config_entry_t;

extern const config_entry_t config_table[CFG_COUNT];

/* Reads the environment once (thread-safe, idempotent) and applies the log
 * settings. Every accessor calls it, so callers need not. */
void config_load(void);

int64_t config_int(config_id_t id);
size_t config_size(config_id_t id);
double config_double(config_id_t id);
int config_bool(config_id_t id);
const char *config_str(config_id_t id); /* never NULL; "" when empty */
/* 1 when the variable, or an NCCL alias of it, was set in the environment
 * (valid or not). */
int config_is_set(config_id_t id);
/* Where the value came from, for messages: "XCCL_X", the NCCL variable(s)
 * ("NCCL_X", or "NCCL_A, NCCL_B" for one made of two), or "default". */
const char *config_source(config_id_t id);

/* A value the program chose through the API (xcclSetEncryption sets TLS),
 * in place of the environment's, for an INT or BOOL entry: from names the
 * call in config_source. Call before any communicator reads it. */
void config_override(config_id_t id, int64_t value, const char *from);

/*
 * Parses text as a value of entry e. On success returns 0 and writes the
 * integer value (INT, SIZE, BOOL) or double (DOUBLE) to *i_p / *d_p; on
 * failure returns -1, writes a sentence to why and leaves outputs alone.
 */
int config_parse(const config_entry_t *e, const char *text, int64_t *i_p, double *d_p, char *why,
                 size_t whylen);

/* The table's name nearest to `name` (both without XCCL_), or NULL when
 * nothing is close (edit distance more than a third of the length). */
const char *config_nearest(const char *name);

/* A variable set by another launcher (RANK, SLURM_PROCID, ...): the one
 * place xccl reads a non-XCCL variable. NULL when unset or empty. */
const char *config_foreign_env(const char *name);

/*
 * This process's values of the S entries, in the fixed-size form that travels
 * in the init all-gather (a few hundred bytes per rank): numbers as parsed,
 * strings as given. Strings compare without regard to case, as every shared
 * string setting reads its value. A string too long for text[] (which the S
 * strings share) is compared by its hash alone.
 */
#define CONFIG_SHARED_MAX 24   /* S entries the form has room for */
#define CONFIG_SHARED_TEXT 192 /* bytes for the S strings together */
typedef struct {
  uint32_t set;   /* bit k: S entry k is set in the environment */
  uint32_t shown; /* bit k: S entry k is a string and its text is in text[] */
  uint64_t value[CONFIG_SHARED_MAX]; /* the number as parsed; a string's FNV-1a hash, lower-cased */
  char text[CONFIG_SHARED_TEXT];     /* the shown strings, each NUL-terminated, in table order */
} config_shared_t;

/* Fills *out with this process's values (reading the environment first). */
void config_shared_pack(config_shared_t *out);

/* The first S entry, in table order, whose value differs between a and b;
 * CFG_COUNT when they agree on all. An unset entry has its default's value,
 * so unset and set to the default agree. */
config_id_t config_shared_diff(const config_shared_t *a, const config_shared_t *b);

/* Entry id's value in s for a message: the number, the string as given,
 * "(unset)", or "(a value too long to show)". Returns buf. */
const char *config_shared_show(const config_shared_t *s, config_id_t id, char *buf, size_t len);

/*
 * An NCCL variable (or two that make one value) read in place of XCCL_<id>
 * when that is unset. xlate turns NCCL's value into xccl's syntax; it is
 * given the values of names[0] and names[1] (NULL when unset) and returns
 * CONFIG_XLATE_OK with the text in out (why may then say what part of the
 * value was dropped), CONFIG_XLATE_NONE when the value has no xccl
 * equivalent (why says so; it is ignored), or CONFIG_XLATE_DEFAULT when it
 * means NCCL's default (as if unset). No xlate: the value as it is.
 */
enum { CONFIG_XLATE_OK = 0, CONFIG_XLATE_NONE = -1, CONFIG_XLATE_DEFAULT = 1 };
typedef int (*config_xlate_t)(const char *const vals[2], char *out, size_t outlen, char *why, size_t whylen);
typedef struct {
  const char *names[2]; /* names[1]: NULL, or a second variable that makes the value with the first */
  config_id_t id;
  config_xlate_t xlate;
  const char *how; /* how the value translates, for xccl-info */
} config_alias_t;

extern const config_alias_t config_aliases[];
extern const int config_alias_count;

/* 1 when name (NCCL_...) is one of the aliases' variables. */
int config_alias_known(const char *name);

/* Prints the table with current values and where each came from, the NCCL
 * aliases, and the NCCL_* variables set that xccl ignores, for xccl-info;
 * S entries say "shared". */
void config_print(FILE *out);

/* xcclResetDebugInit (xccl.h) is in config.c: it reads XCCL_DEBUG,
 * XCCL_DEBUG_SUBSYS and XCCL_DEBUG_FILE and their aliases again and applies
 * them with log_configure. config_str(CFG_DEBUG...) and xccl-info keep the
 * values of the first load. */

/* Tests only: forget what was read so the next access reads again. */
void config_reset_for_test(void);

#endif
