/*
 * soak_rank.c — one rank of the soak (tests/soak/soak.sh): a loop shaped
 * like training, every result checked, and the survivor's side of the
 * recovery protocol the driver (soak_driver.py) plays the agent of.
 *
 * Each iteration of an epoch (a communicator; its iterations count from 0):
 *   a 1-int max all-reduce of "the stop file exists" (all ranks stop at the
 *   same iteration), an all-reduce of 4 KiB .. 16 MiB (x4 each iteration),
 *   an all-gather of 64 KiB per rank, a 1 MiB broadcast from rank it % n and
 *   a 256 KiB send/recv ring. Every element is checked; a wrong one is
 *   counted and described in SOAK_DIR/wrong.<pid>, and the loop goes on.
 *
 * The control directory SOAK_DIR, one small file per event:
 *   st.<pid>          this process: epoch, rank, iterations, collectives
 *                     checked, wrong results, state (rewritten by rename)
 *   err.<E>.<pid>     "rank R at T: message": an operation of epoch E failed
 *   decide.<E>        the driver's: "exclude r1 r2 ..." (ranks of epoch E)
 *                     or "restart" (everyone exits; the driver starts anew)
 *   grow.<E+1>.id     the grow id, written by the shrunk comm's rank 0
 *   retry.<E>.<pid>   "rank R at T: attempt A: step: message": the shrink or
 *                     the grow of attempt A failed (a second fault landed in
 *                     the recovery); the survivor waits for decide.<E>.<A+1>
 *                     and shrinks epoch E's communicator again (it is left
 *                     as it was), writing grow.<E+1>.<A+1>.id
 *   hang.<E>.<pid>    no decision came within SOAK_DECIDE_S
 *   fail.<E>.<pid>    the grow id could not be made or read, or a joiner's
 *                     grow failed (the message)
 *   stop              the driver's: end the run
 * Survivors shrink with the driver's list, grow back to SOAK_NRANKS with the
 * driver's replacements, which start with SOAK_JOIN_RANK=r and SOAK_EPOCH=E
 * and join through grow.<E>.id (grow.<E>.<A>.id with SOAK_ATTEMPT=A). Without SOAK_JOIN_RANK the process starts
 * epoch SOAK_EPOCH from the environment (xcclCommInitFromEnv).
 * With SOAK_FORGE_JOIN=1 as well, the process is no rank: it joins the grow
 * with the id's secret changed (and its checksum right), must be refused
 * fast, and writes forgedjoin.<E>.<pid>: "refused in T ms: why" or
 * "ACCEPTED"; it exits 0 either way (the driver judges).
 * SOAK_LIMIT_S (alarm) ends the process whatever happens.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_msg.h"
#include "test_util.h"
#include "xccl.h"

#define AR_MAX (4u << 20)    /* floats: 16 MiB */
#define AG_COUNT (16u << 10) /* floats per rank: 64 KiB */
#define BC_COUNT (256u << 10)
#define RING_COUNT (64u << 10)
#define MAX_EXCLUDE 64

typedef struct {
  const char *dir;
  int nranks;
  int epoch, rank, it;
  long long colls, wrong;
  xcclComm_t comm;
  float *ar, *ag_send, *ag_recv, *bc, *ring_send, *ring_recv;
} soak_t;

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double env_num(const char *name, double dflt) {
  const char *v = getenv(name);
  return v && *v ? atof(v) : dflt;
}

/* Writes text to dir/name whole (a rename), so readers never see half. */
static void put_file(const soak_t *s, const char *name, const void *data, size_t len) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof(path), "%s/%s", s->dir, name);
  snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0 || rename(tmp, path) != 0)
    fprintf(stderr, "soak_rank %d: cannot write %s: %s\n", (int)getpid(), path, strerror(errno));
}

static void put_text(const soak_t *s, const char *name, const char *text) { put_file(s, name, text, strlen(text)); }

static void status(const soak_t *s, const char *state) {
  char name[64], text[256];
  snprintf(name, sizeof(name), "st.%d", (int)getpid());
  snprintf(text, sizeof(text), "epoch %d rank %d iter %d colls %lld wrong %lld state %s t %.6f\n", s->epoch, s->rank,
           s->it, s->colls, s->wrong, state, wall_s());
  put_text(s, name, text);
}

/* An event file name.<epoch>.<pid> holding one line. */
static void event(const soak_t *s, const char *kind, const char *msg) {
  char name[64], text[2048];
  snprintf(name, sizeof(name), "%s.%d.%d", kind, s->epoch, (int)getpid());
  snprintf(text, sizeof(text), "rank %d at %.6f: %s\n", s->rank, wall_s(), msg);
  put_text(s, name, text);
}

static void wrong(soak_t *s, const char *what, size_t i, double got, double want) {
  s->wrong++;
  char name[64], path[4200];
  snprintf(name, sizeof(name), "wrong.%d", (int)getpid());
  snprintf(path, sizeof(path), "%s/%s", s->dir, name);
  FILE *f = fopen(path, "a");
  if (f) {
    fprintf(f, "epoch %d rank %d iter %d: %s: element %zu is %g, expected %g\n", s->epoch, s->rank, s->it, what, i, got,
            want);
    fclose(f);
  }
}

/* ---- one iteration ------------------------------------------------------ */

static int check_all(soak_t *s, const char *what, const float *got, size_t count, float (*want)(const soak_t *, size_t, int),
                     int arg) {
  for (size_t i = 0; i < count; i++)
    if (got[i] != want(s, i, arg)) {
      wrong(s, what, i, got[i], want(s, i, arg));
      return 0;
    }
  s->colls++;
  return 1;
}

static float ar_want(const soak_t *s, size_t i, int arg) {
  (void)arg;
  return (float)(s->nranks * (s->nranks + 1) / 2) * (float)((i + (size_t)s->it) % 7);
}
static float ag_val(const soak_t *s, size_t i, int r) { return (float)(r * 1000) + (float)((i + (size_t)s->it) % 997); }
static float bc_val(const soak_t *s, size_t i, int root) { return (float)(root * 7) + (float)((i + (size_t)s->it) % 13); }
static float ring_val(const soak_t *s, size_t i, int from) { return (float)(from * 3) + (float)((i + (size_t)s->it) % 11); }

/* xcclSuccess, or the first failed call's result (its message in the comm). */
static xcclResult_t iterate(soak_t *s, int *stop_p) {
  int n = s->nranks, me = s->rank, it = s->it;
  char path[4200];
  snprintf(path, sizeof(path), "%s/stop", s->dir);
  int32_t stop = access(path, F_OK) == 0, mine = stop;
  xcclResult_t r = xcclAllReduce(&stop, &stop, 1, xcclInt32, xcclMax, s->comm, NULL);
  if (r != xcclSuccess) return r;
  if (stop < mine || stop > 1)
    wrong(s, "stop flag all-reduce", 0, stop, mine);
  else
    s->colls++;
  *stop_p = stop == 1;
  if (*stop_p) return xcclSuccess;

  size_t count = 1024u << (2 * (it % 7)); /* 4 KiB .. 16 MiB */
  for (size_t i = 0; i < count; i++) s->ar[i] = (float)(me + 1) * (float)((i + (size_t)it) % 7);
  if ((r = xcclAllReduce(s->ar, s->ar, count, xcclFloat32, xcclSum, s->comm, NULL)) != xcclSuccess) return r;
  check_all(s, "all-reduce", s->ar, count, ar_want, 0);

  for (size_t i = 0; i < AG_COUNT; i++) s->ag_send[i] = ag_val(s, i, me);
  if ((r = xcclAllGather(s->ag_send, s->ag_recv, AG_COUNT, xcclFloat32, s->comm, NULL)) != xcclSuccess) return r;
  int ok = 1;
  for (int p = 0; p < n && ok; p++) {
    for (size_t i = 0; i < AG_COUNT && ok; i++)
      if (s->ag_recv[(size_t)p * AG_COUNT + i] != ag_val(s, i, p)) {
        wrong(s, "all-gather", (size_t)p * AG_COUNT + i, s->ag_recv[(size_t)p * AG_COUNT + i], ag_val(s, i, p));
        ok = 0;
      }
  }
  s->colls += ok;

  int root = it % n;
  for (size_t i = 0; i < BC_COUNT; i++) s->bc[i] = me == root ? bc_val(s, i, root) : -1.0f;
  if ((r = xcclBroadcast(s->bc, s->bc, BC_COUNT, xcclFloat32, root, s->comm, NULL)) != xcclSuccess) return r;
  check_all(s, "broadcast", s->bc, BC_COUNT, bc_val, root);

  int next = (me + 1) % n, prev = (me + n - 1) % n;
  for (size_t i = 0; i < RING_COUNT; i++) {
    s->ring_send[i] = ring_val(s, i, me);
    s->ring_recv[i] = -1.0f;
  }
  if ((r = xcclGroupStart()) != xcclSuccess) return r;
  xcclResult_t rs = xcclSend(s->ring_send, RING_COUNT, xcclFloat32, next, s->comm, NULL);
  xcclResult_t rr = xcclRecv(s->ring_recv, RING_COUNT, xcclFloat32, prev, s->comm, NULL);
  r = xcclGroupEnd();
  if (r == xcclSuccess) r = rs != xcclSuccess ? rs : rr;
  if (r != xcclSuccess) return r;
  check_all(s, "send/recv ring", s->ring_recv, RING_COUNT, ring_val, prev);
  return xcclSuccess;
}

/* ---- recovery ----------------------------------------------------------- */

/* Waits for decide.<epoch>; fills the excluded ranks. -1: restart; -2: none
 * came in time. */
static int wait_decision(const soak_t *s, int attempt, int *excl, int max) {
  char path[4200];
  if (attempt == 0)
    snprintf(path, sizeof(path), "%s/decide.%d", s->dir, s->epoch);
  else
    snprintf(path, sizeof(path), "%s/decide.%d.%d", s->dir, s->epoch, attempt);
  for (double end = test_now_s() + env_num("SOAK_DECIDE_S", 60); test_now_s() < end; usleep(20000)) {
    size_t len = 0;
    char *b = test_read_file(path, &len);
    if (!b) continue;
    int k = 0;
    if (strncmp(b, "exclude", 7) == 0) {
      char *save = NULL;
      for (char *t = strtok_r(b + 7, " \n", &save); t && k < max; t = strtok_r(NULL, " \n", &save)) excl[k++] = atoi(t);
    } else {
      k = -1;
    }
    free(b);
    return k;
  }
  return -2;
}

/* grow.<epoch>.id, or grow.<epoch>.<attempt>.id after a failed attempt. */
static void grow_id_name(char *name, size_t len, int epoch, int attempt) {
  if (attempt == 0)
    snprintf(name, len, "grow.%d.id", epoch);
  else
    snprintf(name, len, "grow.%d.%d.id", epoch, attempt);
}

static int read_grow_id(const soak_t *s, int epoch, int attempt, xcclUniqueId *id) {
  char name[64], path[4200];
  grow_id_name(name, sizeof(name), epoch, attempt);
  snprintf(path, sizeof(path), "%s/%s", s->dir, name);
  return test_wait_file(path, id, sizeof(*id), env_num("SOAK_DECIDE_S", 60));
}

static void give_up(soak_t *s, const char *kind, const char *what, xcclComm_t comm, int code) {
  char msg[1800];
  snprintf(msg, sizeof(msg), "%s: %s", what, comm ? xcclGetLastError(comm) : xcclGetLastError(NULL));
  event(s, kind, msg);
  status(s, kind);
  fprintf(stderr, "soak_rank %d (epoch %d rank %d): %s\n", (int)getpid(), s->epoch, s->rank, msg);
  exit(code);
}

/* One attempt: shrink epoch E's comm without excl, grow back. NULL and
 * *grown_p, or the step that failed (its message in msg; s->comm as it was). */
static const char *shrink_grow(soak_t *s, int attempt, const int *excl, int k, xcclComm_t *grown_p, char *msg,
                               size_t len) {
  xcclComm_t small = NULL;
  const char *step = NULL;
  if (xcclCommShrink(s->comm, excl, k, &small) != xcclSuccess) {
    snprintf(msg, len, "%s", xcclGetLastError(s->comm));
    return "shrink";
  }
  int srank = -1;
  xcclCommUserRank(small, &srank);
  xcclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (srank == 0) {
    if (xcclCommGetUniqueId(small, &id) != xcclSuccess) give_up(s, "fail", "xcclCommGetUniqueId", small, 4);
    char name[64];
    grow_id_name(name, sizeof(name), s->epoch + 1, attempt);
    put_file(s, name, &id, sizeof(id));
  }
  if (xcclBroadcast(&id, &id, sizeof(id), xcclUint8, 0, small, NULL) != xcclSuccess)
    step = "grow id broadcast on the shrunk comm";
  else if (xcclCommGrow(small, s->nranks, &id, -1, grown_p, NULL) != xcclSuccess)
    step = "grow";
  if (step) {
    snprintf(msg, len, "%s", xcclGetLastError(small));
    xcclCommAbort(small);
  } else {
    xcclCommDestroy(small);
  }
  return step;
}

/* After a failed operation: report, wait for the decision, shrink, grow
 * back; again with the driver's next decision while an attempt fails.
 * Returns with s->comm the grown communicator, or exits. */
static void recover(soak_t *s) {
  char msg[1800];
  snprintf(msg, sizeof(msg), "%s", xcclGetLastError(s->comm));
  event(s, "err", msg);
  status(s, "recover");
  for (int attempt = 0;; attempt++) {
    int excl[MAX_EXCLUDE];
    int k = wait_decision(s, attempt, excl, MAX_EXCLUDE);
    if (k == -2) give_up(s, "hang", "no decision in time", NULL, 3);
    int out = k < 0;
    for (int i = 0; i < k; i++) out |= excl[i] == s->rank;
    if (out) { /* excluded, or the driver starts anew */
      xcclCommAbort(s->comm);
      status(s, "excluded");
      exit(0);
    }
    xcclComm_t grown = NULL;
    char why[1700], line[1800];
    const char *step = shrink_grow(s, attempt, excl, k, &grown, why, sizeof(why));
    if (!step) {
      xcclCommAbort(s->comm); /* it holds the excluded ranks */
      s->comm = grown;
      s->epoch++;
      s->it = 0;
      xcclCommUserRank(grown, &s->rank);
      return;
    }
    snprintf(line, sizeof(line), "attempt %d: %s: %s", attempt, step, why);
    event(s, "retry", line);
    fprintf(stderr, "soak_rank %d (epoch %d rank %d): %s\n", (int)getpid(), s->epoch, s->rank, line);
  }
}

/* SOAK_FORGE_JOIN: the grow's id with another secret; the grow's root must
 * refuse it while the real joiners get in. */
static int forged_join(soak_t *s) {
  xcclUniqueId id, forged;
  bs_id_t b;
  char why[160], msg[1800];
  if (read_grow_id(s, s->epoch, (int)env_num("SOAK_ATTEMPT", 0), &id) != 0)
    give_up(s, "forgedjoin", "no grow id in time", NULL, 3);
  if (bs_id_decode(&id, &b, why, sizeof(why)) != 0) give_up(s, "forgedjoin", why, NULL, 3);
  b.secret[0] ^= 0x5a;
  bs_id_encode(&b, &forged);
  xcclComm_t nc = NULL;
  double t0 = test_now_s();
  xcclResult_t r = xcclCommGrow(NULL, s->nranks, &forged, s->rank, &nc, NULL);
  double ms = (test_now_s() - t0) * 1e3;
  if (r == xcclSuccess) {
    snprintf(msg, sizeof(msg), "ACCEPTED after %.1f ms", ms);
    xcclCommAbort(nc);
  } else {
    snprintf(msg, sizeof(msg), "refused in %.1f ms: %s", ms, xcclGetLastError(NULL));
  }
  event(s, "forgedjoin", msg);
  return 0;
}

static void *alloc_floats(size_t count) {
  void *p = malloc(count * sizeof(float));
  if (!p) {
    fprintf(stderr, "soak_rank: out of memory\n");
    exit(2);
  }
  return p;
}

int main(void) {
  soak_t s = {0};
  s.dir = getenv("SOAK_DIR");
  s.nranks = (int)env_num("SOAK_NRANKS", 8);
  s.epoch = (int)env_num("SOAK_EPOCH", 0);
  if (!s.dir) {
    fprintf(stderr, "soak_rank: SOAK_DIR is not set (run by tests/soak/soak.sh)\n");
    return 2;
  }
  alarm((unsigned)env_num("SOAK_LIMIT_S", 600));
  const char *join = getenv("SOAK_JOIN_RANK");
  if (join && env_num("SOAK_FORGE_JOIN", 0) != 0) {
    s.rank = atoi(join);
    return forged_join(&s);
  }
  s.ar = alloc_floats(AR_MAX);
  s.ag_send = alloc_floats(AG_COUNT);
  s.ag_recv = alloc_floats((size_t)AG_COUNT * (size_t)s.nranks);
  s.bc = alloc_floats(BC_COUNT);
  s.ring_send = alloc_floats(RING_COUNT);
  s.ring_recv = alloc_floats(RING_COUNT);
  if (join) {
    s.rank = atoi(join);
    status(&s, "join");
    xcclUniqueId id;
    if (read_grow_id(&s, s.epoch, (int)env_num("SOAK_ATTEMPT", 0), &id) != 0)
      give_up(&s, "hang", "no grow id in time", NULL, 3);
    if (xcclCommGrow(NULL, s.nranks, &id, s.rank, &s.comm, NULL) != xcclSuccess)
      give_up(&s, "fail", "grow (joining)", NULL, 4);
  } else {
    s.rank = (int)env_num("XCCL_RANK", -1);
    status(&s, "init");
    if (xcclCommInitFromEnv(&s.comm) != xcclSuccess) give_up(&s, "fail", "init", NULL, 4);
  }
  for (;;) {
    status(&s, "run");
    int stop = 0;
    xcclResult_t r = iterate(&s, &stop);
    if (r != xcclSuccess) {
      recover(&s);
      continue;
    }
    if (stop) break;
    s.it++;
  }
  xcclResult_t r = xcclCommDestroy(s.comm);
  status(&s, r == xcclSuccess ? "done" : "fail");
  free(s.ar);
  free(s.ag_send);
  free(s.ag_recv);
  free(s.bc);
  free(s.ring_send);
  free(s.ring_recv);
  return r == xcclSuccess ? 0 : 1;
}
