/*
 * xccl.h — the public API of xccl, a collective communication library.
 *
 * The API has the shape of NCCL's: the same arguments, the same numeric values
 * for result codes, datatypes and reduction ops, and a 128-byte unique id, so
 * that code written for NCCL reads the same here.
 *
 * Conventions for every function below:
 *  - The return value is an xcclResult_t. On anything but xcclSuccess a
 *    sentence saying what went wrong, where and who is involved can be read
 *    with xcclGetLastError().
 *  - Output parameters (pointers the caller passes to be filled) are written
 *    only on success; on failure they are left untouched.
 *  - A communicator handle that was destroyed or aborted is recognised and
 *    refused with xcclInvalidArgument; it is never dereferenced.
 *  - Host buffers: pass stream = NULL. The call returns when the result is in
 *    place in the receive buffer.
 *  - Device buffers (in a build with CUDA: xccl-info says whether this one
 *    is): pass a cudaStream_t as stream. The call checks its
 *    arguments, enqueues the work on the stream and returns at once, as
 *    NCCL's do; the result is in place when the stream reaches that point.
 *    xccl asks CUDA where each buffer lives, on every call:
 *      - device or managed memory of the current device, or page-locked
 *        host memory with a stream: the call runs on the device;
 *      - device memory of another device than the current one, device
 *        memory beside pageable host memory in one call, a stream with
 *        pageable host buffers, or, where CUDA cannot be used (no driver, no
 *        device), a stream or an address that is not host memory: refused
 *        with xcclInvalidArgument.
 *    A communicator runs all its device work on the device that was current
 *    at its first device call; later calls from another current device are
 *    refused with xcclInvalidUsage.
 *  - Device and host operations share a communicator's connections, so:
 *      - device launches on one communicator run one after the other,
 *        whatever their streams;
 *      - a host-buffer call waits (XCCL_TIMEOUT at most) for the
 *        communicator's device work to finish before it starts, and one
 *        group may not mix host and device operations on one communicator
 *        (xcclInvalidUsage);
 *      - device collectives always run the ring algorithm, so a job whose
 *        ranks mix device and host buffers in one collective must keep the
 *        host side on the ring too (XCCL_ALGO=ring);
 *      - with XCCL_CHECKSUM=1 a device call is refused (xcclInvalidUsage):
 *        the kernel does not compute the checksum yet.
 *    Device work in flight keeps the communicator busy: xcclCommDestroy waits
 *    for it, xcclCommAbort stops it, and a kernel's failure is reported by
 *    xcclCommGetAsyncError and xcclGetLastError(comm).
 */
#ifndef XCCL_H
#define XCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* XCCL_MAJOR, XCCL_MINOR, XCCL_PATCH: project()'s version (CMakeLists.txt),
 * written into xccl_version.h when xccl is configured. */
#include "xccl_version.h"

/* Same encoding as NCCL_VERSION_CODE for versions >= 2.9: X*10000 + Y*100 + Z. */
#define XCCL_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define XCCL_VERSION_CODE XCCL_VERSION(XCCL_MAJOR, XCCL_MINOR, XCCL_PATCH)

/* Result codes. Values 0..7 are NCCL's; xcclTimeout is xccl's own. */
typedef enum {
  xcclSuccess = 0,
  xcclUnhandledCudaError = 1,
  xcclSystemError = 2,      /* the OS refused something: socket, memory, thread */
  xcclInternalError = 3,    /* a bug in xccl, or a broken invariant */
  xcclInvalidArgument = 4,  /* a bad pointer, count, type, op, rank or handle */
  xcclInvalidUsage = 5,     /* arguments fine alone but the call is wrong here */
  xcclRemoteError = 6,      /* a peer failed, closed, or sent something invalid */
  xcclInProgress = 7,       /* not finished yet; not an error */
  xcclTimeout = 8,          /* a wait passed XCCL_TIMEOUT */
  xcclNumResults = 9
} xcclResult_t;

/* Datatypes: NCCL's values for 0..9; fp8 types follow NCCL 2.24+. */
typedef enum {
  xcclInt8 = 0, xcclChar = 0,
  xcclUint8 = 1,
  xcclInt32 = 2, xcclInt = 2,
  xcclUint32 = 3,
  xcclInt64 = 4,
  xcclUint64 = 5,
  xcclFloat16 = 6, xcclHalf = 6,
  xcclFloat32 = 7, xcclFloat = 7,
  xcclFloat64 = 8, xcclDouble = 8,
  xcclBfloat16 = 9,
  xcclFloat8e4m3 = 10,
  xcclFloat8e5m2 = 11,
  xcclNumTypes = 12
} xcclDataType_t;

/*
 * Reduction ops. fp16, bf16 and fp8 values are converted to float, combined,
 * and rounded back to nearest-even at every step of the reduction. avg is the
 * sum divided by the number of ranks (integer division, truncating toward
 * zero, for integer types). max and min return NaN when either input is NaN.
 */
typedef enum {
  xcclSum = 0,
  xcclProd = 1,
  xcclMax = 2,
  xcclMin = 3,
  xcclAvg = 4,
  xcclNumOps = 5
} xcclRedOp_t;

#define XCCL_UNIQUE_ID_BYTES 128
/* Made by xcclGetUniqueId on one process and carried to all ranks by the
 * launcher. It holds the bootstrap root's address and port, a magic, a version
 * and a random secret that authenticates every bootstrap message. Treat it as
 * a secret: whoever holds it can join the communicator. */
typedef struct {
  char internal[XCCL_UNIQUE_ID_BYTES];
} xcclUniqueId;

typedef struct xcclComm *xcclComm_t;

/* Bytes moved between the calling rank and one peer since the communicator
 * was created or last resumed (xcclCommResume after XCCL_SUSPEND_MEM),
 * counted by the transports. */
typedef struct {
  uint64_t bytesSent;
  uint64_t bytesRecv;
} xcclPeerCounters_t;

/* ---- Configured init (xcclCommInitRankConfig, xcclCommSplit) ----------- */

#define XCCL_CONFIG_UNDEF_INT (-2147483647 - 1) /* INT_MIN: "not set, use the default" */
#define XCCL_CONFIG_MAGIC 0x7863636cu
/*
 * How a communicator is made. Start from XCCL_CONFIG_INITIALIZER and set
 * only the fields you need; a config that did not start from it (size,
 * magic or version wrong) is refused with xcclInvalidArgument.
 *  - blocking: 1 (the default; XCCL_COMM_BLOCKING sets another for configs
 *    that leave it unset) init and split return when the communicator
 *    is ready; 0 they return xcclInProgress at once (or an error found in
 *    the arguments) and the work goes on in the background: poll
 *    xcclCommGetAsyncError until it is not xcclInProgress. Until then the
 *    handle takes only xcclCommGetAsyncError, xcclGetLastError,
 *    xcclCommAbort (stops the init and frees it) and xcclCommDestroy (waits
 *    for the init, then frees); other calls get xcclInvalidUsage.
 *  - commName: a name shown in log lines and in-flight dumps (copied; NULL:
 *    none).
 *  - timeoutSeconds: the per-operation timeout, as xcclCommSetTimeout (<= 0
 *    or unset: XCCL_TIMEOUT).
 *  - algo: the algorithms this communicator runs, in XCCL_ALGO's words
 *    ("tree", "allreduce:rd,broadcast:ring"), in place of XCCL_ALGO (copied;
 *    NULL or "": XCCL_ALGO). Every rank must give the same; init fails on
 *    every rank otherwise, and on a word XCCL_ALGO would refuse.
 */
typedef struct {
  size_t size;           /* sizeof(xcclConfig_t); set by the initializer */
  unsigned int magic;    /* XCCL_CONFIG_MAGIC */
  unsigned int version;  /* XCCL_VERSION_CODE of the header it was built with */
  int blocking;
  const char *commName;
  double timeoutSeconds;
  const char *algo;
} xcclConfig_t;
#define XCCL_CONFIG_INITIALIZER \
  { sizeof(xcclConfig_t), XCCL_CONFIG_MAGIC, XCCL_VERSION_CODE, XCCL_CONFIG_UNDEF_INT, NULL, -1.0, NULL }

/* Color that puts a rank in no communicator of xcclCommSplit. */
#define XCCL_SPLIT_NOCOLOR (-1)

/* Where the scalar of xcclRedOpCreatePreMulSum lives (NCCL's values). */
typedef enum {
  xcclScalarDevice = 0,        /* read when each operation using the op starts */
  xcclScalarHostImmediate = 1  /* read once, by xcclRedOpCreatePreMulSum */
} xcclScalarResidence_t;

/* A registered window (xcclCommWindowRegister). */
typedef struct xcclWindow *xcclWindow_t;
#define XCCL_WIN_DEFAULT 0x00
#define XCCL_WIN_COLL_SYMMETRIC 0x01

/* ---- Version and errors ------------------------------------------------ */

/* *version = XCCL_VERSION_CODE of the library actually loaded. */
xcclResult_t xcclGetVersion(int *version);

/* A constant string naming the result code; never NULL. */
const char *xcclGetErrorString(xcclResult_t result);

/*
 * The last detailed error message. With a live communicator: the last error
 * raised on it (valid until the communicator is destroyed). With NULL, or a
 * handle that is not a live communicator: the last error raised on the calling
 * thread. An empty string when there was none. Never NULL.
 */
const char *xcclGetLastError(xcclComm_t comm);

/* ---- Encryption --------------------------------------------------------- */

typedef enum { xcclEncryptionNone = 0, xcclEncryptionPsk = 1 } xcclEncryptionMode_t;

/*
 * Sets, for this process, whether the socket transport and the bootstrap run
 * TLS 1.3, in place of XCCL_TLS. xcclEncryptionPsk: TLS on, peers
 * authenticated by psk (a NUL-terminated string of 32 to 1024 bytes, copied;
 * the caller keeps its own), from which, with the unique id's secret, the
 * keys are derived (HKDF-SHA256): one psk still gives each job its own keys. xcclEncryptionNone: TLS off (psk
 * is ignored). Every rank must make the same call: a rank whose setting
 * differs fails init on every rank, and one with another psk is refused.
 * Call it before xcclGetUniqueId and the first communicator init: once this
 * process started a bootstrap root or a communicator init, it returns
 * xcclInvalidUsage and changes nothing. A bad mode or psk
 * is xcclInvalidArgument, the earlier setting kept. As ncclSetEncryption.
 */
xcclResult_t xcclSetEncryption(xcclEncryptionMode_t mode, const char *psk);

/* ---- Communicator lifecycle -------------------------------------------- */

/*
 * Fills *uniqueId and starts the bootstrap root on a background thread of the
 * calling process. The root listens on the interface chosen by
 * XCCL_SOCKET_IFNAME (or automatically), admits exactly the ranks that prove
 * they know the id's secret, and exits once it has introduced them to each
 * other or after XCCL_TIMEOUT. The calling process must stay alive until all
 * ranks have finished xcclCommInitRank.
 *
 * With XCCL_ROOT=host:port set (or its alias NCCL_COMM_ID), it starts
 * nothing: the id names that address, with a secret derived from it and
 * XCCL_SECRET, so every rank that calls it gets the same id, and rank 0's
 * init starts the root there (rank 0 must run on that host). As NCCL does.
 */
xcclResult_t xcclGetUniqueId(xcclUniqueId *uniqueId);

/*
 * Collective over nranks processes: each calls it with the same id and
 * nranks and a distinct rank in [0, nranks). Returns when every rank is
 * connected, or with an error naming the missing or refused ranks after
 * XCCL_TIMEOUT. On failure *comm is untouched and nothing is leaked.
 */
xcclResult_t xcclCommInitRank(xcclComm_t *comm, int nranks, xcclUniqueId commId, int rank);

/*
 * Like xcclCommInitRank, with rank, size and rendezvous read from the
 * environment, first found wins:
 *  1. XCCL_UNIQUE_ID (hex of the id, as set by xccl-run) with XCCL_RANK and
 *     XCCL_NRANKS (or a launcher's rank and size variables, as in 3-7);
 *  2. XCCL_RANK, XCCL_NRANKS and XCCL_ROOT=host:port (or MASTER_ADDR and
 *     MASTER_PORT); XCCL_ROOT also with a launcher's rank and size;
 *  3. torchrun (RANK, WORLD_SIZE): with its agent store
 *     (TORCHELASTIC_USE_AGENT_STORE=True, the default rendezvous), rank 0
 *     makes a unique id and sets it in that c10d store at MASTER_ADDR:
 *     MASTER_PORT (torch 1.x's store protocol, tested with 1.13, or 2.x's,
 *     found by asking), the others read it; without (--standalone), rank 0
 *     hosts the root at MASTER_ADDR:MASTER_PORT, so a program that also calls
 *     torch's init_process_group there must use the xccl torch backend or
 *     set XCCL_ROOT;
 *  4. PMIx, served by Open MPI's mpirun and srun --mpi=pmix (PMIX_RANK,
 *     PMIX_NAMESPACE): rank and size from PMIx, rank 0's unique id put and
 *     collected by a fence. libpmix.so.2 is loaded at run time; a build
 *     without pmix.h, or a host without libpmix, goes on with 5-7 and says
 *     why PMIx was not used if those fail;
 *  5. Open MPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE (+ a root from 2);
 *  6. Slurm's srun without PMI: SLURM_PROCID, SLURM_NTASKS; rank 0 hosts the
 *     root on the first node of SLURM_STEP_NODELIST (127.0.0.1 when the step
 *     has one node) at a port in 21000-28999 derived from SLURM_JOB_ID,
 *     SLURM_STEP_ID and the number of earlier calls in the process. Task 0
 *     must run on that first node (any distribution but arbitrary);
 *  7. PMI: PMI_RANK, PMI_SIZE (+ a root from 2).
 * Under torchrun and PMIx, rank 0's root listens on the interface that
 * xcclGetUniqueId picks (XCCL_SOCKET_IFNAME, else the first that is up and
 * not loopback), so ranks on other hosts reach it. Each call of a process
 * meets the same call of the others (its own store key, PMIx key or port),
 * so every rank must call it equally often. Every wait lasts at most
 * XCCL_TIMEOUT and then fails naming the store, PMIx or root it waited on.
 * Where rank 0 hosts the root at a known address (2, --standalone, 5-7) the
 * secret is derived from XCCL_SECRET and that address (unset: from public
 * values, and the bootstrap still checks every message, but anyone who can
 * reach the port can join — a warning says so); with a unique id (1, 3 with
 * the agent store, 4) the secret is random. An INFO line (XCCL_DEBUG=INFO)
 * names the launcher and the rendezvous used.
 */
xcclResult_t xcclCommInitFromEnv(xcclComm_t *comm);

/* Frees the communicator after in-flight work on it has completed. */
xcclResult_t xcclCommDestroy(xcclComm_t comm);

/*
 * Stops everything on the communicator from any thread: a collective running
 * on another thread returns xcclRemoteError promptly, connections are closed
 * (peers see the closure and fail fast), and the communicator is freed.
 */
xcclResult_t xcclCommAbort(xcclComm_t comm);

/*
 * Makes *newcomm from the ranks of comm that are not in excludeRanks
 * (excludeCount distinct ranks of comm, in any order; 0 <= excludeCount <
 * nranks): the ranks keep their order, so rank r becomes r minus the number
 * of excluded ranks below it. As NCCL's ncclCommShrink (2.27), without its
 * config and flags.
 *
 * Who calls it: every rank that is not excluded, with the same list; an
 * excluded rank must not (if it does, it gets xcclInvalidArgument, and the
 * others are not disturbed). Ranks that died belong in the list.
 *
 * comm may have failed (a peer killed, stopped or disconnected, an operation
 * that returned an error): the call needs none of comm's data connections,
 * only each survivor's bootstrap listener, so a rank may call it right after
 * an operation on comm returned an error. It may also be called on a healthy
 * comm, which stays usable afterwards (a rank that is not excluded must then
 * not have operations of comm in flight on other threads: like every call on
 * comm, it must not run concurrently with another, xcclCommAbort excepted).
 *
 * The lowest rank that stays leads: it checks that every survivor passed the
 * same list and starts the new communicator's bootstrap. It never waits
 * forever: the leader waits comm's timeout (XCCL_TIMEOUT, or what
 * xcclCommSetTimeout set) + 5 s for the others (one may be blocked that long
 * in an operation before it sees the failure), the others up to 2 x the timeout + 5 s
 * for the leader, then the new communicator's init has its own XCCL_TIMEOUT; an xcclCommAbort(comm) on another thread ends the
 * wait with xcclRemoteError.
 *
 * Errors: xcclInvalidArgument for a NULL newcomm, a bad excludeCount, a NULL
 * list, a rank out of range or repeated, or the caller in the list (checked
 * before anything is sent). A survivor that passed another list fails the
 * call on every rank that took part with xcclInvalidUsage, naming both lists;
 * a survivor that never calls it is named in an xcclTimeout error; a rank
 * that the leader's list excludes although its own does not gets
 * xcclInvalidArgument. xcclInvalidUsage inside a group.
 *
 * The new communicator shares nothing with comm (its own bootstrap, secret,
 * sockets and shared-memory segments; XCCL_FAULT rules keep matching the
 * rank each process had in the communicator it started with), so
 * xcclCommAbort or xcclCommDestroy of comm, which the caller still owes,
 * does not disturb it. On failure *newcomm is untouched and comm is as it
 * was: still live, and still usable if it was healthy.
 */
xcclResult_t xcclCommShrink(xcclComm_t comm, const int *excludeRanks, int excludeCount, xcclComm_t *newcomm);

/*
 * Makes a larger communicator of comm's ranks and new ones: a replacement
 * for a rank that died (after xcclCommShrink), or more ranks. As NCCL's
 * ncclCommGrow and ncclCommGetUniqueId (2.29).
 *
 * One rank of comm (usually rank 0) calls xcclCommGetUniqueId(comm, &id) and
 * carries id to every rank of comm and to every joining process, as a
 * launcher carries xcclGetUniqueId's. Then, together:
 *   - every rank of comm: xcclCommGrow(comm, nranks, &id, -1, &newcomm, config);
 *     it keeps its number in newcomm;
 *   - every joining process: xcclCommGrow(NULL, nranks, &id, rank, &newcomm,
 *     config), rank one of comm's size .. nranks-1, each once.
 * The id holds a new random secret that authenticates every bootstrap message
 * of newcomm, as xcclGetUniqueId's does (treat it as a secret), and names comm:
 * a rank of another communicator that passes it is refused. The process that
 * called xcclCommGetUniqueId serves the new communicator's bootstrap root
 * until every rank has met it or XCCL_TIMEOUT (comm's timeout) passed since
 * the id was made: it must live that long, and joiners must call within it.
 *
 * comm must be ready (not failed nor revoked: shrink a failed one first) and
 * every rank of comm must take part; newcomm shares nothing with comm, which
 * the caller still destroys. config NULL: ranks of comm take comm's options
 * (blocking, name, timeout, algorithms), joiners the defaults.
 *
 * Errors, checked before anything is sent, *newcomm untouched: NULL id or
 * newcomm, an id not made by xcclCommGetUniqueId or made by another
 * communicator, nranks not above comm's size, a rank of comm passing a rank
 * other than -1, a joiner's rank outside comm's size .. nranks-1
 * (xcclInvalidArgument); inside a group (xcclInvalidUsage). A rank that
 * never calls is named in an xcclTimeout error; two joiners with one rank, or
 * one with the wrong secret, fail the init with a sentence naming them.
 */
xcclResult_t xcclCommGetUniqueId(xcclComm_t comm, xcclUniqueId *uniqueId);
xcclResult_t xcclCommGrow(xcclComm_t comm, int nranks, const xcclUniqueId *uniqueId, int rank, xcclComm_t *newcomm,
                          const xcclConfig_t *config);

xcclResult_t xcclCommCount(const xcclComm_t comm, int *count);
xcclResult_t xcclCommUserRank(const xcclComm_t comm, int *rank);

/*
 * The per-operation timeout of comm's later operations, in seconds, in place
 * of XCCL_TIMEOUT (which was init's): an operation that sees no progress
 * from a peer for this long fails with xcclTimeout naming the peer; the
 * same bound holds for what an operation waits for on the way (a first
 * connection to a peer, XCCL_CHECK's comparison, xcclCommShrink). For frameworks that carry their own timeout
 * (torch.distributed's process-group timeout). Not while an operation of
 * comm runs on another thread. xcclInvalidArgument unless 0 < seconds <= 1e9.
 */
xcclResult_t xcclCommSetTimeout(xcclComm_t comm, double seconds);

/* xcclSuccess, or the error a failed operation left the communicator in: a
 * host call that failed half-done, or device work that failed on its stream
 * (reported by the CUDA watcher). A peer that closes while the communicator
 * is idle is not an error here until an operation needs that peer. */
xcclResult_t xcclCommGetAsyncError(xcclComm_t comm, xcclResult_t *asyncError);

/* Bytes exchanged with one peer (0 <= peer < nranks). */
xcclResult_t xcclCommGetPeerCounters(xcclComm_t comm, int peer, xcclPeerCounters_t *counters);

/*
 * The algorithm comm runs for one collective of count elements of datatype
 * on host buffers (device buffers run the ring): its name in XCCL_ALGO's
 * words ("ring", "rd", "tree", "direct", "pat", "rab"...), a static string, into
 * *algorithm.
 * collective is "allreduce", "allgather", "reducescatter", "broadcast" or
 * "reduce"; count is per rank as the collective takes it (all-gather's
 * sendcount, reduce-scatter's recvcount). The same answer on every rank.
 * xcclInvalidArgument for another name, an unknown type or a NULL pointer.
 */
xcclResult_t xcclCommGetAlgorithm(xcclComm_t comm, const char *collective, size_t count, xcclDataType_t datatype,
                                  const char **algorithm);

/* The algorithms that serve collective (as for xcclCommGetAlgorithm), in
 * the order the tuner prefers on a tie: the first min(*count, how many)
 * names (static strings) into names, then *count = how many there are.
 * names may be NULL when *count is 0. xcclInvalidArgument for another
 * collective or a NULL count. */
xcclResult_t xcclGetAlgorithms(const char *collective, const char **names, int *count);

/* ---- Communicators from communicators, configured and non-blocking ----- */

/*
 * xcclCommInitRank with a config (NULL: the defaults). With
 * config->blocking = 0 it returns xcclInProgress once the arguments are
 * checked and *comm holds a handle; init goes on in the background (see
 * xcclConfig_t). Called between xcclGroupStart and xcclGroupEnd (blocking
 * or not) it starts the init and returns xcclSuccess (blocking) or
 * xcclInProgress, and the outermost xcclGroupEnd waits for every init
 * started in the group (blocking configs) and returns the first error:
 * how one thread makes the communicators of several ranks, as with NCCL.
 */
xcclResult_t xcclCommInitRankConfig(xcclComm_t *comm, int nranks, xcclUniqueId commId, int rank,
                                    const xcclConfig_t *config);

/*
 * ndev communicators of one clique in this process, ranks 0..ndev-1, made on
 * ndev threads: comms[i] is rank i. devlist (NULL: 0..ndev-1) names each
 * rank's CUDA device, which becomes current on its thread during init; in a
 * build without CUDA, or where none is usable, it is checked for range only
 * (0 <= devlist[i], distinct) and the communicators serve host buffers.
 * On failure no communicator is left and comms is untouched.
 */
xcclResult_t xcclCommInitAll(xcclComm_t *comms, int ndev, const int *devlist);

/*
 * Collective over every rank of comm: ranks that pass the same color >= 0
 * get a new communicator of their own, ordered by key (ties by their rank in
 * comm); XCCL_SPLIT_NOCOLOR gives *newcomm = NULL. config NULL: the new
 * communicator takes comm's (blocking, name, timeout). Like xcclCommShrink it
 * needs only each rank's bootstrap listener, and the new communicators share
 * nothing with comm. Rank 0 of comm hosts every color's bootstrap root: its
 * blocking split returns only once they are done (a non-blocking one at
 * once, and that process must live until the new communicators are
 * ready). Errors: xcclInvalidArgument for color < -1 or a NULL
 * newcomm (checked before anything is sent); a rank that never calls it is
 * named in an xcclTimeout error; xcclInvalidUsage inside a group.
 */
xcclResult_t xcclCommSplit(xcclComm_t comm, int color, int key, xcclComm_t *newcomm, const xcclConfig_t *config);

/*
 * Every operation of comm has been issued and its device work finished; the
 * communicator takes no further operation (xcclInvalidUsage), and
 * xcclCommDestroy then frees it. Returns xcclSuccess once that holds.
 */
xcclResult_t xcclCommFinalize(xcclComm_t comm);

/*
 * Stops the operations of comm in flight on any thread (they return an
 * error saying the communicator was revoked) and refuses later ones with
 * xcclInvalidUsage; returns once none is running. The communicator stays
 * allocated for xcclCommShrink, xcclCommSplit and xcclCommDestroy;
 * xcclCommGetAsyncError reports xcclSuccess after it. flags must be 0.
 */
xcclResult_t xcclCommRevoke(xcclComm_t comm, int flags);

/* The CUDA device comm runs device work on: the one bound at its first
 * device call, else the one current at init; -1 in a build without CUDA or
 * where none was usable. */
xcclResult_t xcclCommCuDevice(const xcclComm_t comm, int *device);

/* ---- Suspend and resume ------------------------------------------------ */

#define XCCL_SUSPEND_MEM 0x01 /* xcclCommSuspend: release the connections' memory too */

/*
 * Suspends comm: from here every operation on it (and a second suspend) is
 * refused with xcclInvalidUsage until xcclCommResume. Waits, at most
 * XCCL_TIMEOUT, for the calls on other threads to end first (xcclTimeout
 * then, comm left as it was). flags is 0 or XCCL_SUSPEND_MEM.
 *
 * XCCL_SUSPEND_MEM is collective: every rank calls it with XCCL_SUSPEND_MEM,
 * each on its own thread (ranks that one thread drives, as after
 * xcclCommInitAll, cannot). Once every rank is idle each releases its
 * connections: the slot fifos (shared-memory segments, the network
 * transport's buffers), the sockets and the progress thread with its
 * per-connection state. Registrations and windows stay. A rank that does
 * not take part, fails or dies makes the call fail (xcclRemoteError,
 * xcclTimeout) within XCCL_TIMEOUT; comm then stays suspended, its
 * connections released, and a resume makes them again only if every rank
 * resumes. Without XCCL_SUSPEND_MEM it is local and nothing is released.
 * Not between xcclGroupStart and xcclGroupEnd.
 */
xcclResult_t xcclCommSuspend(xcclComm_t comm, int flags);

/*
 * Resumes a suspended comm. After XCCL_SUSPEND_MEM it is collective: the
 * connections are made again as init makes them, and operations then give
 * the same results as before; xcclCommGetPeerCounters counts from 0 again.
 * A comm that is not suspended: xcclInvalidUsage.
 * On failure (a peer gone, XCCL_TIMEOUT) comm stays suspended with its
 * connections released; destroy or abort it. Not in a group.
 */
xcclResult_t xcclCommResume(xcclComm_t comm);

/* What xcclCommMemStats reports: the memory xccl holds for a communicator
 * (host memory in a host build), in bytes, and whether it is released. */
typedef enum {
  xcclStatMemSuspend = 0,   /* bytes XCCL_SUSPEND_MEM would release now: its connections' (0 while released) */
  xcclStatMemSuspended = 1, /* 1 while XCCL_SUSPEND_MEM has released them, else 0 */
  xcclStatMemPersist = 2,   /* bytes it keeps through a suspend: 0, xccl counts only the connections */
  xcclStatMemTotal = 3      /* Suspend + Persist */
} xcclCommMemStat_t;

/* *value = stat of comm (any state but initializing). xcclInvalidArgument
 * for a NULL value or an unknown stat, *value left alone. */
xcclResult_t xcclCommMemStats(xcclComm_t comm, xcclCommMemStat_t stat, uint64_t *value);

/* ---- Reduction ops made at run time ------------------------------------ */

/*
 * *op = a new op for collectives of comm on datatype only: each rank
 * multiplies its input by *scalar (of datatype; fp16, bf16 and fp8 in
 * float, then rounded) and the results are summed: sum over r of scalar_r *
 * x_r (each rank may pass its own scalar). xcclScalarHostImmediate reads
 * *scalar now; xcclScalarDevice reads it when each operation starts (host
 * memory only on host buffers). The values are >= xcclNumOps. Host buffers
 * only for now: a device call with such an op gets xcclInvalidUsage. Using
 * it with another comm or datatype: xcclInvalidArgument.
 */
xcclResult_t xcclRedOpCreatePreMulSum(xcclRedOp_t *op, void *scalar, xcclDataType_t datatype,
                                      xcclScalarResidence_t residence, xcclComm_t comm);
/* Frees an op of xcclRedOpCreatePreMulSum once no call using it runs; a
 * built-in op or another comm's: xcclInvalidArgument. */
xcclResult_t xcclRedOpDestroy(xcclRedOp_t op, xcclComm_t comm);

/* ---- Memory ------------------------------------------------------------ */

/*
 * size bytes that peers on the same host can map (shared memory, page
 * aligned, zero-filled), for registration and the zero-copy host path; in a
 * build with CUDA and a usable current device, device memory. Free with
 * xcclMemFree only. size 0 or NULL ptr: xcclInvalidArgument.
 */
xcclResult_t xcclMemAlloc(void **ptr, size_t size);
/* ptr from xcclMemAlloc (NULL is a no-op); anything else: xcclInvalidArgument. */
xcclResult_t xcclMemFree(void *ptr);

/*
 * Tells comm that buff..buff+size will be used by its operations, so that
 * transports may read and write it in place; *handle is for
 * xcclCommDeregister. Any host (or, with CUDA, device) buffer; one from
 * xcclMemAlloc is what peers can map. Local: no other rank takes part.
 * Registrations left at xcclCommDestroy are released with it.
 */
xcclResult_t xcclCommRegister(const xcclComm_t comm, void *buff, size_t size, void **handle);
xcclResult_t xcclCommDeregister(const xcclComm_t comm, void *handle);

/*
 * A window: buff..buff+size registered on every rank of comm, each rank
 * calling it in the same order (collective, like NCCL's): with
 * XCCL_WIN_COLL_SYMMETRIC every rank's buffer has the same size and
 * operations on it may address peers' windows directly. buff must be
 * aligned to 4096 bytes for XCCL_WIN_COLL_SYMMETRIC. Unknown flags:
 * xcclInvalidArgument. A rank that refuses its own arguments still takes
 * part, and the others return xcclInvalidUsage naming it; flags that differ
 * between ranks, or XCCL_WIN_COLL_SYMMETRIC sizes that do: xcclInvalidUsage
 * on every rank, naming the ranks. xcclCommWindowDeregister is local.
 */
xcclResult_t xcclCommWindowRegister(xcclComm_t comm, void *buff, size_t size, xcclWindow_t *win, int winFlags);
xcclResult_t xcclCommWindowDeregister(xcclComm_t comm, xcclWindow_t win);

/* ---- One-sided: put with signal, signal, wait -------------------------- */

/* How many signals xcclWaitSignal waits for: opCnt from rank peer on
 * (sigIdx, ctx). NCCL's ncclWaitSignalDesc_t, field for field. */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} xcclWaitSignalDesc_t;

/* The signal indices and contexts one-sided calls take: 0 <= sigIdx <
 * XCCL_RMA_SIGNALS, 0 <= ctx < XCCL_RMA_CTXS. */
#define XCCL_RMA_SIGNALS 32
#define XCCL_RMA_CTXS 4

/*
 * Writes count elements of datatype from localbuff into rank peer's window
 * at peerWinOffset bytes, then adds one to peer's signal (this rank, sigIdx,
 * ctx). peerWin is this rank's handle of a window every rank registered
 * (xcclCommWindowRegister); the target takes no part in the call. Host
 * buffers only: stream must be NULL. flags must be 0.
 *
 * Order: the puts and signals from one rank to one peer land in the order
 * they were issued, so a signal counted by xcclWaitSignal means every put
 * issued before it by that rank is in the target's window. The call
 * returns once localbuff may be reused (the data is in the connection's
 * buffers, or in the peer's window); it may wait for room in those buffers
 * while the peer's thread consumes earlier messages, at most XCCL_TIMEOUT
 * without progress. xcclCommDestroy waits until the transport has taken
 * the puts issued before it.
 *
 * The first window registration of a communicator connects every pair of
 * its ranks for these calls (one connection each way, with its buffers of
 * 8 x XCCL_RMA_CHUNK_SIZE) and starts a thread that consumes incoming puts,
 * collectively; the calls need no other set-up. Refused, changing nothing,
 * with xcclInvalidArgument: peer not a rank, peerWin NULL or not a window
 * of comm, offset + bytes beyond the peer's window, sigIdx or ctx out of
 * range, flags not 0. A timeout is xcclTimeout naming the peer. Inside a
 * group (xcclGroupStart) the one-sided calls run at once, not at GroupEnd.
 */
xcclResult_t xcclPutSignal(const void *localbuff, size_t count, xcclDataType_t datatype, int peer,
                           xcclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                           xcclComm_t comm, void *stream);
/* A signal alone: adds one to peer's signal (this rank, sigIdx, ctx) after
 * every earlier put and signal from this rank to peer. As xcclPutSignal. */
xcclResult_t xcclSignal(int peer, int sigIdx, int ctx, unsigned int flags, xcclComm_t comm, void *stream);
/*
 * Waits until, for each of the nDesc descriptors, opCnt signals from its
 * peer on (sigIdx, ctx) have arrived that no earlier wait consumed, then
 * consumes them (descriptors naming the same signal add up). Returns when
 * the data of every put they count is in this rank's windows. nDesc 0:
 * returns at once. Refused, consuming nothing, with xcclInvalidArgument:
 * nDesc < 0, signalDescs NULL with nDesc > 0, a peer not a rank, sigIdx or
 * ctx out of range, opCnt < 0. XCCL_TIMEOUT without a signal arriving:
 * xcclTimeout naming the peer, and nothing is consumed.
 */
xcclResult_t xcclWaitSignal(int nDesc, xcclWaitSignalDesc_t *signalDescs, xcclComm_t comm, void *stream);

/* ---- Collectives -------------------------------------------------------- */

/*
 * recvbuff[i] = op over ranks of sendbuff[i], for i < count, on every rank.
 * In place when sendbuff == recvbuff. Every rank gets bit-identical results.
 * count = 0 is a valid no-op. Buffers must be aligned to the type's size.
 */
xcclResult_t xcclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           xcclDataType_t datatype, xcclRedOp_t op, xcclComm_t comm,
                           void *stream);

/*
 * Every rank gets every rank's sendcount elements, in rank order:
 * recvbuff[r * sendcount + i] = sendbuff of rank r [i]. recvbuff holds
 * nranks * sendcount elements. In place when sendbuff == recvbuff + rank * sendcount.
 */
xcclResult_t xcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, xcclDataType_t datatype,
                           xcclComm_t comm, void *stream);

/*
 * sendbuff holds nranks * recvcount elements; rank r gets block r of their
 * reduction: recvbuff[i] = op over ranks of sendbuff[r * recvcount + i].
 * In place when recvbuff == sendbuff + rank * recvcount.
 */
xcclResult_t xcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, xcclDataType_t datatype,
                               xcclRedOp_t op, xcclComm_t comm, void *stream);

/*
 * recvbuff = the root's sendbuff on every rank. sendbuff is read on the root
 * only (others may pass NULL). In place when sendbuff == recvbuff.
 */
xcclResult_t xcclBroadcast(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, int root,
                           xcclComm_t comm, void *stream);

/* xcclBroadcast in place: buff on every rank. */
xcclResult_t xcclBcast(void *buff, size_t count, xcclDataType_t datatype, int root, xcclComm_t comm, void *stream);

/*
 * The root's recvbuff = op over ranks of sendbuff. recvbuff is written on the
 * root only (others may pass NULL). In place when sendbuff == recvbuff.
 */
xcclResult_t xcclReduce(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, xcclRedOp_t op,
                        int root, xcclComm_t comm, void *stream);

/*
 * The root's recvbuff[r * sendcount + i] = sendbuff of rank r [i]; recvbuff
 * is used on the root only. In place when sendbuff == recvbuff + root * sendcount.
 */
xcclResult_t xcclGather(const void *sendbuff, void *recvbuff, size_t sendcount, xcclDataType_t datatype, int root,
                        xcclComm_t comm, void *stream);

/*
 * Rank r's recvbuff[i] = the root's sendbuff[r * recvcount + i]; sendbuff is
 * used on the root only. In place when recvbuff == sendbuff + root * recvcount.
 */
xcclResult_t xcclScatter(const void *sendbuff, void *recvbuff, size_t recvcount, xcclDataType_t datatype, int root,
                         xcclComm_t comm, void *stream);

/*
 * recvbuff[p * count + i] = sendbuff of rank p [me * count + i]: count
 * elements to and from every rank. Both buffers hold nranks * count
 * elements and must not overlap.
 */
xcclResult_t xcclAllToAll(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype,
                          xcclComm_t comm, void *stream);

/*
 * All-to-all with a count per pair: this rank sends sendcounts[p] elements
 * starting at sendbuff + sdispls[p] to rank p, and receives recvcounts[p]
 * elements from rank p into recvbuff + rdispls[p] (counts and displacements
 * in elements; each array has nranks entries). As MPI_Alltoallv: rank p's
 * recvcounts[me] must equal this rank's sendcounts[p]: a mismatch fails
 * with an error naming both sizes, or, where one side's count is zero, a
 * timeout naming the peer; with XCCL_CHECK=1 every rank refuses the call
 * before anything moves, naming the pair. Zero counts are allowed; the send
 * and receive regions must not overlap. In a group it joins the group.
 */
xcclResult_t xcclAllToAllv(const void *sendbuff, const size_t *sendcounts, const size_t *sdispls, void *recvbuff,
                           const size_t *recvcounts, const size_t *rdispls, xcclDataType_t datatype, xcclComm_t comm,
                           void *stream);

/*
 * Point to point: count elements to / from peer, matched in posting order
 * per pair and direction; both sides must use the same count and type.
 * Outside a group each call completes before it returns, so a rank that
 * sends and receives with the same peer must put both in a group. Sending
 * to and receiving from oneself is allowed inside a group (a copy).
 */
xcclResult_t xcclSend(const void *sendbuff, size_t count, xcclDataType_t datatype, int peer, xcclComm_t comm,
                      void *stream);
xcclResult_t xcclRecv(void *recvbuff, size_t count, xcclDataType_t datatype, int peer, xcclComm_t comm,
                      void *stream);

/*
 * Operations between xcclGroupStart and xcclGroupEnd are queued (their
 * arguments are checked at once) and issued together by the outermost
 * xcclGroupEnd, which returns when all have completed, so a ring of sends
 * and receives, or several collectives, never deadlock. Groups nest; only
 * the outermost end runs them. Every rank must issue the collectives of a
 * communicator in the same order.
 */
xcclResult_t xcclGroupStart(void);
xcclResult_t xcclGroupEnd(void);

/*
 * Ends the group like xcclGroupEnd but runs nothing: the operations queued
 * since the outermost xcclGroupStart are dropped, and *estimatedTimeUs is
 * the cost model's estimate of how long they would take, in microseconds
 * (the algorithm each would use, its steps' latency and the bandwidth of
 * the links they cross; the group's operations added up). Inits started in
 * the group still complete. xcclInvalidUsage when no group is open;
 * xcclInvalidArgument for a NULL estimatedTimeUs (the group stays open).
 */
xcclResult_t xcclGroupSimulateEnd(float *estimatedTimeUs);

/* Returns on every rank once every rank has called it (a one-byte
 * all-reduce). Not allowed inside a group: it would not wait there. */
xcclResult_t xcclBarrier(xcclComm_t comm);

/* Reads XCCL_DEBUG, XCCL_DEBUG_SUBSYS and XCCL_DEBUG_FILE (and their NCCL_
 * aliases) again, for the calls that follow. */
void xcclResetDebugInit(void);

/* Size in bytes of one element of a type, 0 for an unknown type. */
size_t xcclTypeSize(xcclDataType_t datatype);

#ifdef __cplusplus
}
#endif

#endif /* XCCL_H */
