/*
 * group_init.c — what xcclGroupEnd does for communicators made or used in
 * its group, beside their operations: waits for the blocking-config inits
 * started inside it (lifecycle.c adds them), and makes the point-to-point
 * connections of communicators whose ranks share this process before the
 * group's operations run (group.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "connect.h"
#include "group.h"
#include "log.h"
#include "registry.h"

/* ---- Inits started inside a group ---- */

/* This thread's blocking-config inits since the outermost xcclGroupStart. */
static _Thread_local xcclComm_t *group_inits;
static _Thread_local int group_ninits, group_inits_cap;

xcclResult_t group_inits_add(xcclComm_t comm) {
  if (group_ninits == group_inits_cap) {
    int cap = group_inits_cap ? 2 * group_inits_cap : 8;
    xcclComm_t *l = realloc(group_inits, sizeof(*l) * (size_t)cap);
    if (!l) return err_set(xcclSystemError, LOG_INIT, "out of memory for the inits of a group");
    group_inits = l;
    group_inits_cap = cap;
  }
  group_inits[group_ninits++] = comm;
  return xcclSuccess;
}

xcclResult_t comm_group_inits_finish(void) {
  xcclResult_t first = xcclSuccess;
  char msg[ERR_MSG_MAX] = "";
  for (int i = 0; i < group_ninits; i++) {
    xcclComm_t c = group_inits[i];
    if (!comm_acquire_quiet(c)) continue; /* destroyed or aborted meanwhile: that call waited for it */
    comm_init_join(c);
    xcclResult_t r = atomic_load(&c->init_result);
    if (r != xcclSuccess && first == xcclSuccess) {
      first = r;
      pthread_mutex_lock(&c->err_lock);
      snprintf(msg, sizeof(msg), "%s", c->last_error);
      pthread_mutex_unlock(&c->err_lock);
    }
    comm_release(c);
  }
  free(group_inits);
  group_inits = NULL;
  group_ninits = group_inits_cap = 0;
  if (first != xcclSuccess) return err_set(first, LOG_INIT, "xcclGroupEnd: an init of the group failed: %s", msg);
  return xcclSuccess;
}

/* ---- A group's connections on communicators that share this process ---- */

typedef struct {
  xcclComm_t comm;
  int *send, *recv, ns, nr;
  xcclResult_t res;
  char msg[ERR_MSG_MAX];
  pthread_t thread;
  int started;
} shared_conn_t;

static void *shared_conn_thread(void *arg) {
  shared_conn_t *j = arg;
  j->res = comm_connect_p2p(j->comm, COMM_P2P_USER, j->send, j->ns, j->recv, j->nr);
  if (j->res != xcclSuccess) snprintf(j->msg, sizeof(j->msg), "%s", err_last());
  return NULL;
}

/* The user connections comm's operations in ops still need; 0 when none. */
static int shared_conn_collect(const group_op_t *ops, int n, shared_conn_t *j) {
  for (int i = 0; i < n; i++) {
    const group_op_t *op = &ops[i];
    if (op->comm != j->comm || op->kind == GROUP_COLL || op->peer == j->comm->rank) continue;
    int send = op->kind == GROUP_SEND;
    const comm_p2p_t *d = send ? &j->comm->p2p_send[COMM_P2P_USER][op->peer]
                               : &j->comm->p2p_recv[COMM_P2P_USER][op->peer];
    if (d->ready) continue;
    if (send) j->send[j->ns++] = op->peer;
    else j->recv[j->nr++] = op->peer;
  }
  return j->ns + j->nr > 0;
}

xcclResult_t comm_group_connect_shared(const void *ops_v, int n) {
  const group_op_t *ops = ops_v;
  shared_conn_t *jobs = NULL;
  int nj = 0;
  xcclResult_t res = xcclSuccess;
  for (int i = 0; i < n && res == xcclSuccess; i++) {
    xcclComm_t c = ops[i].comm;
    int seen = 0;
    for (int k = 0; k < nj && !seen; k++) seen = jobs[k].comm == c;
    if (seen || ops[i].kind == GROUP_COLL || !comm_acquire_quiet(c)) continue;
    int life = atomic_load(&c->life);
    if (life != COMM_READY || !c->shares_process) { /* group_launch says what is wrong, or needs nothing */
      comm_release(c);
      continue;
    }
    if (!jobs && !(jobs = calloc((size_t)n, sizeof(*jobs)))) {
      comm_release(c);
      return err_set(xcclSystemError, LOG_COLL, "out of memory for a group's connections");
    }
    shared_conn_t *j = &jobs[nj++];
    j->comm = c;
    j->send = malloc(sizeof(int) * (size_t)n);
    j->recv = malloc(sizeof(int) * (size_t)n);
    if (!j->send || !j->recv) res = err_set(xcclSystemError, LOG_COLL, "out of memory for a group's connections");
  }
  for (int k = 0; k < nj && res == xcclSuccess; k++) {
    if (!shared_conn_collect(ops, n, &jobs[k])) continue;
    int rc = pthread_create(&jobs[k].thread, NULL, shared_conn_thread, &jobs[k]);
    if (rc != 0) res = err_set(xcclSystemError, LOG_COLL, "cannot start a connecting thread: %s", strerror(rc));
    jobs[k].started = rc == 0;
  }
  for (int k = 0; k < nj; k++) {
    if (jobs[k].started) pthread_join(jobs[k].thread, NULL);
    if (jobs[k].started && jobs[k].res != xcclSuccess && res == xcclSuccess)
      res = err_set(jobs[k].res, LOG_COLL, "%s", jobs[k].msg);
    free(jobs[k].send);
    free(jobs[k].recv);
    comm_release(jobs[k].comm);
  }
  free(jobs);
  return res;
}

