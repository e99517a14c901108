/*
 * fault.h — fault injection rules (XCCL_FAULT), for people who test how a
 * job survives failures.
 *
 *   XCCL_FAULT="rank=2,op=allreduce,seq=10,step=3,action=close; rank=0,p=0.01,seed=7,action=delay:20"
 *
 * Rules are separated by ';', fields by ','. A rule fires when a message is
 * sent (a slot handed to a transport or written into a peer's shared memory)
 * and every field it names matches:
 *   rank=R      the sending rank (default: any); on a communicator from
 *               xcclCommShrink, the rank of the one it came from
 *   op=NAME     the operation: allreduce, allgather, reducescatter, broadcast,
 *               reduce, send, recv, gather, scatter, alltoall (default: any)
 *   seq=N       the operation's sequence number on its communicator, from 1
 *   step=N      the message's index within the operation on that connection, from 0
 *   p=P         fire with probability P at each match (default 1), drawn from
 *   seed=S      a generator seeded with S (default 1) and the rank, so a run replays exactly
 *   action=     close        shut the connection (both sides see it fail)
 *               delay:MS     hold the message MS milliseconds, then send it
 *               stall        stop the process (SIGSTOP): it neither sends nor answers
 *               corrupt      flip one bit of the message
 *               error        fail the send as a transport completion error would
 *               kill         SIGKILL the process
 * A rule without p fires once; with p it may fire at every match.
 *
 * The network path applies rules in a decorator around the transport
 * (net_fault.c); shared memory, which has no transport calls, in the
 * kernels' slot_fifo_send() (slots.c). Both ask fault_match() with the
 * sending communicator's fault_ctx_t.
 */
#ifndef XCCL_BASE_FAULT_H
#define XCCL_BASE_FAULT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "xccl.h"

typedef enum { FAULT_NONE = 0, FAULT_CLOSE, FAULT_DELAY, FAULT_STALL, FAULT_CORRUPT, FAULT_ERROR, FAULT_KILL } fault_action_t;

#define FAULT_MAX_RULES 16
#define FAULT_OP_CHARS 16

typedef struct {
  int rank;                 /* -1: any */
  char op[FAULT_OP_CHARS];  /* "": any */
  int64_t seq, step;        /* -1: any */
  double p;                 /* 0: once */
  uint64_t seed;
  fault_action_t action;
  int delay_ms;
  /* state */
  int fired;
  uint64_t rng;
} fault_rule_t;

/* Parses text into at most max rules. On error: a message naming the rule
 * and the field, *n_p untouched. */
xcclResult_t fault_parse(const char *text, fault_rule_t *rules, int max, int *n_p);

/* Whether XCCL_FAULT holds any rule (parsed once per process; a malformed
 * value is reported by fault_check_config). */
int fault_enabled(void);
/* Parses XCCL_FAULT; xcclInvalidArgument with the reason when malformed. */
xcclResult_t fault_check_config(void);

/* The context a rule matches against, one per communicator (two in one
 * process each match their own): the rank rank= means and the operation
 * the communicator runs now. Its owner writes op/seq (fault_set_op) from
 * the thread that runs the operation; senders on other threads (the proxy)
 * read them, so they are atomic. */
typedef struct {
  int rank;                 /* the job's rank: for xcclCommShrink's comm, its parent's */
  _Atomic(const char *) op; /* a static string; "" before the first operation */
  _Atomic uint64_t seq;     /* the operation's sequence number on the communicator */
} fault_ctx_t;

void fault_ctx_init(fault_ctx_t *ctx, int rank);
/* op must outlive ctx (a string constant). */
void fault_set_op(fault_ctx_t *ctx, const char *op, uint64_t seq);

/* Where a sender is in the current operation on one connection (owned by
 * the sender: a transport comm, or the producer's side of a fifo). */
typedef struct {
  uint64_t seq;  /* the operation it last counted */
  uint64_t step; /* messages sent in it so far */
} fault_stream_t;

/* Counts one message on stream s of the communicator whose context is ctx
 * and says what to do with it: FAULT_NONE, or the action of the first rule
 * that fires (delay_ms_p filled for FAULT_DELAY). ctx NULL: a connection of
 * no communicator (no rank, no operation). Logs each firing at WARN naming
 * the rule, op, seq and step; `where` says which connection ("to rank 3",
 * "socket send"). */
fault_action_t fault_match(const fault_ctx_t *ctx, fault_stream_t *s, const char *where, int *delay_ms_p);

/* fault_match, then does what the action asks of the sender itself:
 * delay sleeps, stall stops and kill ends the process, corrupt flips a bit
 * of data (none when data is NULL: memory this process cannot touch).
 * Returns FAULT_CLOSE or FAULT_ERROR when the caller must fail the
 * connection (as its transport would), else FAULT_NONE: send as usual. */
fault_action_t fault_on_send(const fault_ctx_t *ctx, fault_stream_t *s, const char *where, void *data, size_t bytes);

/* Flips one bit of data: the middle byte's highest. (Its lowest was often
 * lost to rounding: a 1-ulp change of a float vanishes when a later step of
 * the reduction adds a larger value.) */
void fault_corrupt(void *data, size_t bytes);

#endif
