/*
 * host_engine.h — runs host kernels: the calling thread drives a set of work
 * items over slot fifos (slots.h) until all are done, polling the transport
 * while it waits, with a deadline and the abort flag checked throughout.
 *
 * A work item is one stream of actions on one lane (a fifo pair: a ring
 * channel, or the connection to one peer in one direction). Items on the
 * same lane run in issue order; items on different lanes interleave, which
 * is what lets a group of sends and receives, or of collectives, complete
 * without deadlock. An item is done when its last action ran and the
 * transport took all its sends.
 */
#ifndef XCCL_KERNELS_HOST_ENGINE_H
#define XCCL_KERNELS_HOST_ENGINE_H

#include <stdatomic.h>
#include <stdint.h>

#include "slots.h"
#include "xccl.h"

/* How the items of one communicator wait and make the transport move. */
typedef struct {
  double timeout_s;              /* longest an item may go without progress */
  const _Atomic int *abort_flag; /* non-zero: stop now */
  uint64_t spin_ns;              /* how long an idle caller polls before it sleeps */
  int yield;                     /* 1: give the core away between idle polls (more ranks than cores) */
  slot_bell_t *bell;             /* rung by whoever fills recv or frees send slots */
  /* Moves data for the fifos on this thread if it can. Returns 1 if anything moved. */
  int (*progress)(void *ctx);
  /* When set, called instead of sleeping on the bell: waits for the
   * transport (at most timeout_us) and moves data. Returns 1 if anything moved. */
  int (*wait)(void *ctx, int timeout_us);
  void *progress_ctx;
} kern_env_t;

/* Why a host kernel stopped early: what it was waiting on, and where. */
typedef enum {
  KERN_FAIL_NONE = 0,
  KERN_FAIL_TIMEOUT,  /* no progress for timeout_s */
  KERN_FAIL_CONN,     /* a fifo was marked failed by the proxy or peer */
  KERN_FAIL_ABORT,    /* abort_flag was raised */
  KERN_FAIL_PROTOCOL, /* the peer's slot did not have the size the schedule expects */
  KERN_FAIL_CHECKSUM  /* XCCL_CHECKSUM: a message's data did not match its CRC32C */
} kern_fail_kind_t;

typedef struct {
  kern_fail_kind_t kind;
  int item;            /* index of the item that failed */
  int peer;            /* the item's peer, -1 when the caller knows it */
  int channel;
  int waiting_on_recv; /* 1: waiting for data from the peer; 0: for room at the peer */
  int action;          /* step of the loop */
  uint64_t loop;       /* loop iteration */
  size_t got_bytes, want_bytes; /* PROTOCOL */
  char msg[SLOT_ERROR_MAX];     /* CONN: the fifo's error text */
  int conn_result;              /* CONN: the fifo's xcclResult_t */
  uint32_t crc_computed, crc_carried; /* CHECKSUM: over want_bytes of data; step = the fifo's step */
  uint64_t step;                      /* CHECKSUM: the message's step on its fifo */
} kern_failure_t;

typedef struct kern_item kern_item_t;

typedef struct {
  /* Runs the next actions whose slots are ready. Returns 1 if one ran, 0 if
   * it must wait, -1 on a protocol error (fail's PROTOCOL fields filled).
   * Sets it->finished after the last action. */
  int (*step)(kern_item_t *it, kern_failure_t *fail);
  /* The fifo the item waits on now, the step it waits for, and whether it
   * is a receive (wait for tail > step) or a send (wait for head + STEPS > step). */
  slot_fifo_t *(*waiting)(kern_item_t *it, uint64_t *step_p, int *is_recv_p);
  /* Optional, for items that send on several fifos: all sends taken by the
   * transport. Without it the engine looks at `sends`. */
  int (*drained)(kern_item_t *it);
} kern_item_ops_t;

struct kern_item {
  const kern_item_ops_t *ops;
  const kern_env_t *env;
  int lane;             /* items on one lane run in order */
  slot_fifo_t *sends;   /* the fifo it sends on (NULL: none): drained before done */
  uint64_t *send_step;
  /* Where it is, for failure messages (peer: whom `waiting` said it waits
   * on, -1 when the caller knows it from the lane): */
  int channel, action, peer;
  uint64_t loop;
  /* The engine's: */
  int finished, done, progressed;
  uint64_t last_progress_ns;
};

/* Runs items to completion. xcclSuccess, or the error of the first item
 * that failed with *fail filled in. */
xcclResult_t kern_run(kern_item_t *const *items, int n, kern_failure_t *fail);

#endif
