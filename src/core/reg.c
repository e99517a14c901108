/*
 * reg.c — xcclCommRegister/Deregister, xcclCommWindowRegister/Deregister
 * and the lookups of reg.h; comm_ops_free, which releases what issue 16
 * hangs on a communicator.
 */
#include "reg.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "connect.h"
#include "error.h"
#include "log.h"
#include "mem.h"
#include "redop.h"
#include "rma.h"

/* Guards every communicator's regs and windows lists: registration is rare,
 * and a transport looking one up takes it briefly. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static int covers(const void *buff, size_t size, const void *p, size_t len) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)buff;
  return a >= b && a - b <= size && len <= size - (a - b);
}

xcclResult_t xcclCommRegister(const xcclComm_t comm, void *buff, size_t size, void **handle) {
  TRY(comm_acquire(comm));
  xcclResult_t res = xcclSuccess;
  comm_reg_t *r = NULL;
  if (!buff || !size || !handle)
    res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommRegister: %s",
                  !buff ? "buff is NULL" : !size ? "size is 0" : "handle is NULL");
  else if ((uintptr_t)buff > UINTPTR_MAX - size)
    res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommRegister: %p + %zu bytes overflows the address space", buff,
                  size);
  else if (!(r = calloc(1, sizeof(*r))))
    res = err_set(xcclSystemError, LOG_INIT, "xcclCommRegister: out of memory");
  if (res == xcclSuccess) {
    *r = (comm_reg_t){.comm = comm, .buff = buff, .size = size, .shared = mem_contains(buff, size)};
    pthread_mutex_lock(&reg_lock);
    r->next = comm->regs;
    comm->regs = r;
    pthread_mutex_unlock(&reg_lock);
    INFO(INIT, "rank %d: registered %zu bytes at %p%s", comm->rank, size, buff, r->shared ? " (xcclMemAlloc)" : "");
    *handle = r;
  }
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

xcclResult_t xcclCommDeregister(const xcclComm_t comm, void *handle) {
  TRY(comm_acquire(comm));
  comm_reg_t *found = NULL;
  pthread_mutex_lock(&reg_lock);
  for (comm_reg_t **pp = &comm->regs; *pp; pp = &(*pp)->next)
    if (*pp == handle) {
      found = *pp;
      *pp = found->next;
      break;
    }
  pthread_mutex_unlock(&reg_lock);
  xcclResult_t res = xcclSuccess;
  if (!found)
    res = err_set(xcclInvalidArgument, LOG_INIT,
                  "xcclCommDeregister: %p is not a registration of this communicator (NULL, deregistered already, "
                  "or another communicator's)",
                  handle);
  free(found);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

const comm_reg_t *reg_find(struct xcclComm *comm, const void *p, size_t len) {
  const comm_reg_t *hit = NULL;
  pthread_mutex_lock(&reg_lock);
  for (const comm_reg_t *r = comm->regs; r && !hit; r = r->next)
    if (covers(r->buff, r->size, p, len)) hit = r;
  pthread_mutex_unlock(&reg_lock);
  return hit;
}

const struct xcclWindow *reg_find_window(struct xcclComm *comm, const void *p, size_t len) {
  const struct xcclWindow *hit = NULL;
  pthread_mutex_lock(&reg_lock);
  for (const struct xcclWindow *w = comm->windows; w && !hit; w = w->next)
    if (covers(w->buff, w->size, p, len)) hit = w;
  pthread_mutex_unlock(&reg_lock);
  return hit;
}

/* ---- Windows ---- */

#define WIN_ALIGN 4096
#define WIN_KNOWN_FLAGS XCCL_WIN_COLL_SYMMETRIC

/* What each rank tells the others. */
typedef struct {
  uint64_t size;
  int32_t flags;
  int32_t refused; /* its own arguments were refused: it returns that error */
  int32_t shared;  /* its window lies in xcclMemAlloc memory, which peers on the host can map */
  int32_t pad;
} win_info_t;

/* This rank's own checks, before the exchange. */
static xcclResult_t win_check(void *buff, size_t size, xcclWindow_t *win, int flags) {
  if (!win) return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommWindowRegister: win is NULL");
  if (!buff || !size)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommWindowRegister: %s", !buff ? "buff is NULL" : "size is 0");
  if (flags & ~WIN_KNOWN_FLAGS)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "xcclCommWindowRegister: unknown flags 0x%x (known: XCCL_WIN_DEFAULT 0x0, XCCL_WIN_COLL_SYMMETRIC "
                   "0x1)",
                   (unsigned)(flags & ~WIN_KNOWN_FLAGS));
  if ((flags & XCCL_WIN_COLL_SYMMETRIC) && (uintptr_t)buff % WIN_ALIGN)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "xcclCommWindowRegister: buff %p is not aligned to %d bytes, which XCCL_WIN_COLL_SYMMETRIC needs",
                   buff, WIN_ALIGN);
  return xcclSuccess;
}

/* "1, 3" : the ranks for which differs(all, r) holds, cut to fit. */
static int win_ranks(const win_info_t *all, int n, int (*differs)(const win_info_t *, int), char *buf, size_t len) {
  int count = 0;
  size_t at = 0;
  buf[0] = '\0';
  for (int r = 0; r < n; r++) {
    if (!differs(all, r)) continue;
    if (at + 16 < len) at += (size_t)snprintf(buf + at, len - at, "%s%d", count ? ", " : "", r);
    else if (at + 4 < len) at += (size_t)snprintf(buf + at, len - at, "...");
    count++;
  }
  return count;
}
static int win_refused(const win_info_t *all, int r) { return all[r].refused != 0; }
static int win_flags_differ(const win_info_t *all, int r) { return all[r].flags != all[0].flags; }
static int win_size_differs(const win_info_t *all, int r) { return all[r].size != all[0].size; }

static int win_first(const win_info_t *all, int n, int (*differs)(const win_info_t *, int)) {
  for (int r = 0; r < n; r++)
    if (differs(all, r)) return r;
  return -1;
}

/* What every rank decides alike from every rank's info. */
static xcclResult_t win_agree(const win_info_t *all, int n) {
  char ranks[200];
  int k, f;
  if ((k = win_ranks(all, n, win_refused, ranks, sizeof(ranks))))
    return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommWindowRegister: rank%s %s refused %s arguments (see %s error)",
                   k > 1 ? "s" : "", ranks, k > 1 ? "their" : "its", k > 1 ? "their" : "its");
  if ((k = win_ranks(all, n, win_flags_differ, ranks, sizeof(ranks))) && (f = win_first(all, n, win_flags_differ)) > 0)
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "xcclCommWindowRegister: the ranks pass different flags: rank 0 passes 0x%x, rank%s %s other flags "
                   "(rank %d: 0x%x); every rank must pass the same",
                   (unsigned)all[0].flags, k > 1 ? "s" : "", ranks, f, (unsigned)all[f].flags);
  if ((all[0].flags & XCCL_WIN_COLL_SYMMETRIC) && (k = win_ranks(all, n, win_size_differs, ranks, sizeof(ranks))) &&
      (f = win_first(all, n, win_size_differs)) > 0)
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "xcclCommWindowRegister: XCCL_WIN_COLL_SYMMETRIC needs one size on every rank: rank 0 registers "
                   "%llu bytes, rank%s %s another size (rank %d: %llu bytes)",
                   (unsigned long long)all[0].size, k > 1 ? "s" : "", ranks, f, (unsigned long long)all[f].size);
  return xcclSuccess;
}

/* The one-sided calls' connections (rma.h), both ways between every pair,
 * made by the first window: the registration is collective, and a put's
 * target takes no part in it, so this is the last time every rank is here
 * together before one may put. Later windows find them made. */
static xcclResult_t win_connect_rma(struct xcclComm *comm) {
  int n = comm->nranks;
  if (n < 2 || atomic_load(&comm->rma_connected)) return xcclSuccess;
  int *peers = malloc(sizeof(*peers) * (size_t)(n - 1));
  if (!peers) return err_set(xcclSystemError, LOG_INIT, "xcclCommWindowRegister: out of memory for %d peers", n);
  for (int i = 1; i < n; i++) peers[i - 1] = (comm->rank + i) % n; /* pairwise: no rank is everyone's first */
  xcclResult_t res = comm_connect_p2p(comm, COMM_P2P_RMA, peers, n - 1, peers, n - 1);
  free(peers);
  if (res != xcclSuccess) return err_prefix(res, "xcclCommWindowRegister: connecting for one-sided calls");
  TRY(rma_start(comm)); /* the thread that consumes puts while this rank is elsewhere */
  atomic_store(&comm->rma_connected, 1);
  return xcclSuccess;
}

xcclResult_t win_rma_reconnect(struct xcclComm *comm) {
  if (!atomic_exchange(&comm->rma_connected, 0)) return xcclSuccess;
  rma_comm_reset(comm);
  return win_connect_rma(comm);
}

xcclResult_t xcclCommWindowRegister(xcclComm_t comm, void *buff, size_t size, xcclWindow_t *win, int winFlags) {
  TRY(comm_acquire(comm));
  int n = comm->nranks;
  /* A rank whose arguments are refused still takes part, so that the others
   * learn of it at once instead of waiting for it (as collectives do). */
  xcclResult_t own = win_check(buff, size, win, winFlags);
  win_info_t *all = calloc((size_t)n, sizeof(*all));
  struct xcclWindow *w = calloc(1, sizeof(*w));
  size_t *sizes = calloc((size_t)n, sizeof(*sizes));
  xcclResult_t res = xcclSuccess;
  if (!all || !w || !sizes) {
    res = err_set(xcclSystemError, LOG_INIT, "xcclCommWindowRegister: out of memory for %d ranks", n);
    goto out;
  }
  all[comm->rank] = (win_info_t){.size = size, .flags = winFlags, .refused = own != xcclSuccess,
                                  .shared = own == xcclSuccess && mem_contains(buff, size)};
  if ((res = bootstrap_allgather(comm->bs, all, sizeof(*all))) != xcclSuccess) {
    res = err_prefix(res, "xcclCommWindowRegister");
    goto out;
  }
  if (own != xcclSuccess) {
    res = own; /* its sentence is the last error still: nothing since set one */
    goto out;
  }
  if ((res = win_agree(all, n)) != xcclSuccess) goto out;
  if ((res = win_connect_rma(comm)) != xcclSuccess) goto out;
  int all_shared = 1;
  for (int r = 0; r < n; r++) sizes[r] = (size_t)all[r].size, all_shared &= all[r].shared != 0;
  *w = (struct xcclWindow){.comm = comm, .buff = buff, .size = size, .flags = winFlags,
                           .shared = mem_contains(buff, size), .all_shared = all_shared, .nranks = n, .sizes = sizes};
  pthread_mutex_lock(&reg_lock);
  w->id = comm->windows_made++;
  w->next = comm->windows;
  comm->windows = w;
  if (all_shared) atomic_fetch_add(&comm->windows_shared, 1);
  atomic_fetch_add(&comm->windows_gen, 1);
  pthread_mutex_unlock(&reg_lock);
  *win = w;
  w = NULL, sizes = NULL; /* the comm's now */
out:
  free(all);
  free(w);
  free(sizes);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

int reg_window_by_id(struct xcclComm *comm, uint64_t id, void **buff_p, size_t *size_p) {
  int found = 0;
  pthread_mutex_lock(&reg_lock);
  for (const struct xcclWindow *w = comm->windows; w && !found; w = w->next)
    if (w->id == id) found = 1, *buff_p = w->buff, *size_p = w->size;
  if (!found && id >= comm->windows_made) found = -1;
  pthread_mutex_unlock(&reg_lock);
  return found;
}

int reg_window_peer(struct xcclComm *comm, const struct xcclWindow *win, int peer, uint64_t *id_p, size_t *size_p) {
  int found = 0;
  pthread_mutex_lock(&reg_lock);
  for (const struct xcclWindow *w = comm->windows; w && !found; w = w->next)
    if (w == win) found = 1, *id_p = w->id, *size_p = w->sizes[peer];
  pthread_mutex_unlock(&reg_lock);
  return found;
}

xcclResult_t reg_window_buff(struct xcclComm *comm, const struct xcclWindow *win, void **buff_p) {
  void *buff = NULL;
  int found = 0;
  pthread_mutex_lock(&reg_lock);
  for (const struct xcclWindow *w = comm->windows; w && !found; w = w->next)
    if (w == win) found = 1, buff = w->buff;
  pthread_mutex_unlock(&reg_lock);
  if (!found)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "%p is not a window of this communicator (NULL, deregistered already, or another communicator's)",
                   (const void *)win);
  *buff_p = buff;
  return xcclSuccess;
}

xcclResult_t xcclCommWindowDeregister(xcclComm_t comm, xcclWindow_t win) {
  TRY(comm_acquire(comm));
  struct xcclWindow *found = NULL;
  pthread_mutex_lock(&reg_lock);
  for (struct xcclWindow **pp = &comm->windows; *pp; pp = &(*pp)->next)
    if (*pp == win) {
      found = *pp;
      *pp = found->next;
      if (found->all_shared) atomic_fetch_sub(&comm->windows_shared, 1);
      atomic_fetch_add(&comm->windows_gen, 1);
      break;
    }
  pthread_mutex_unlock(&reg_lock);
  xcclResult_t res = xcclSuccess;
  if (!found)
    res = err_set(xcclInvalidArgument, LOG_INIT,
                  "xcclCommWindowDeregister: %p is not a window of this communicator (NULL, deregistered already, or "
                  "another communicator's)",
                  (void *)win);
  if (found) {
    rma_window_gone(comm, found->buff, found->size);
    free(found->sizes);
  }
  free(found);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

void comm_ops_free(struct xcclComm *comm) {
  pthread_mutex_lock(&reg_lock);
  comm_reg_t *r = comm->regs;
  struct xcclWindow *w = comm->windows;
  comm->regs = NULL;
  comm->windows = NULL;
  atomic_store(&comm->windows_shared, 0);
  atomic_fetch_add(&comm->windows_gen, 1);
  pthread_mutex_unlock(&reg_lock);
  while (r) {
    comm_reg_t *next = r->next;
    free(r);
    r = next;
  }
  while (w) {
    struct xcclWindow *next = w->next;
    free(w->sizes);
    free(w);
    w = next;
  }
}
