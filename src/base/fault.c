/* fault.c — XCCL_FAULT rules: parsing and matching (fault.h). */
#include "fault.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "log.h"

static const char *const action_names[] = {"none", "close", "delay", "stall", "corrupt", "error", "kill"};

/* Field `key=value` of rule number `idx` (1-based), already split. */
static xcclResult_t rule_field(fault_rule_t *r, int idx, const char *key, const char *val) {
  char *end = NULL;
  if (strcmp(key, "rank") == 0 || strcmp(key, "seq") == 0 || strcmp(key, "step") == 0 ||
      strcmp(key, "seed") == 0) {
    long long v = strtoll(val, &end, 10);
    if (!*val || *end || v < 0 || v > (1LL << 40))
      return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_FAULT rule %d: %s=%s is not a number from 0 to 2^40", idx,
                     key, val);
    if (key[0] == 'r') r->rank = (int)v;
    else if (key[1] == 'e' && key[2] == 'q') r->seq = v;
    else if (key[1] == 't') r->step = v;
    else r->seed = (uint64_t)v;
    return xcclSuccess;
  }
  if (strcmp(key, "op") == 0) {
    static const char *const ops[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                      "send",      "recv",      "gather",        "scatter",   "alltoall"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
      if (strcasecmp(val, ops[i]) == 0) {
        snprintf(r->op, sizeof(r->op), "%s", ops[i]);
        return xcclSuccess;
      }
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "XCCL_FAULT rule %d: op=%s is not one of allreduce, allgather, reducescatter, broadcast, reduce, "
                   "send, recv, gather, scatter, alltoall",
                   idx, val);
  }
  if (strcmp(key, "p") == 0) {
    double p = strtod(val, &end);
    if (!*val || *end || !(p > 0 && p <= 1))
      return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_FAULT rule %d: p=%s is not a probability in (0, 1]", idx,
                     val);
    r->p = p;
    return xcclSuccess;
  }
  if (strcmp(key, "action") == 0) {
    if (strncmp(val, "delay:", 6) == 0) {
      long ms = strtol(val + 6, &end, 10);
      if (!val[6] || *end || ms < 0 || ms > 3600000)
        return err_set(xcclInvalidArgument, LOG_INIT,
                       "XCCL_FAULT rule %d: action=%s: the delay is milliseconds from 0 to 3600000", idx, val);
      r->action = FAULT_DELAY;
      r->delay_ms = (int)ms;
      return xcclSuccess;
    }
    for (int a = FAULT_CLOSE; a <= FAULT_KILL; a++)
      if (a != FAULT_DELAY && strcmp(val, action_names[a]) == 0) {
        r->action = (fault_action_t)a;
        return xcclSuccess;
      }
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "XCCL_FAULT rule %d: action=%s is not one of close, delay:<ms>, stall, corrupt, error, kill", idx,
                   val);
  }
  return err_set(xcclInvalidArgument, LOG_INIT,
                 "XCCL_FAULT rule %d: unknown field '%s' (fields: rank, op, seq, step, p, seed, action)", idx, key);
}

xcclResult_t fault_parse(const char *text, fault_rule_t *rules, int max, int *n_p) {
  char buf[2048];
  if (strlen(text) >= sizeof(buf))
    return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_FAULT is longer than %zu characters", sizeof(buf) - 1);
  snprintf(buf, sizeof(buf), "%s", text);
  int n = 0;
  char *save_rule = NULL;
  for (char *rule = strtok_r(buf, ";", &save_rule); rule; rule = strtok_r(NULL, ";", &save_rule)) {
    while (*rule == ' ') rule++;
    if (!*rule) continue;
    if (n == max) return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_FAULT has more than %d rules", max);
    fault_rule_t r = {.rank = -1, .seq = -1, .step = -1, .seed = 1};
    char *save_field = NULL;
    for (char *f = strtok_r(rule, ",", &save_field); f; f = strtok_r(NULL, ",", &save_field)) {
      while (*f == ' ') f++;
      char *eq = strchr(f, '=');
      if (!eq) return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_FAULT rule %d: '%s' is not key=value", n + 1, f);
      *eq = '\0';
      char *v = eq + 1, *e = v + strlen(v);
      while (e > v && e[-1] == ' ') *--e = '\0';
      TRY(rule_field(&r, n + 1, f, v));
    }
    if (r.action == FAULT_NONE)
      return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_FAULT rule %d has no action=", n + 1);
    rules[n++] = r;
  }
  *n_p = n;
  return xcclSuccess;
}

/* ---- the process's rules ---- */

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static fault_rule_t fault_rules[FAULT_MAX_RULES];
static int fault_nrules;
static xcclResult_t fault_config_result;
static char fault_config_msg[ERR_MSG_MAX];

static void fault_load(void) {
  const char *text = config_str(CFG_FAULT);
  if (!text[0]) return;
  err_quiet(1);
  fault_config_result = fault_parse(text, fault_rules, FAULT_MAX_RULES, &fault_nrules);
  if (fault_config_result != xcclSuccess) snprintf(fault_config_msg, sizeof(fault_config_msg), "%s", err_last());
  err_quiet(0);
  if (fault_config_result == xcclSuccess)
    WARN(INIT, "fault injection is on: XCCL_FAULT=%s (%d rule%s)", text, fault_nrules, fault_nrules == 1 ? "" : "s");
}

int fault_enabled(void) {
  static _Atomic int known; /* 0: not read yet, 1: no rules, 2: rules (a load on every send) */
  int k = atomic_load_explicit(&known, memory_order_acquire);
  if (k) return k == 2;
  pthread_once(&fault_once, fault_load);
  atomic_store_explicit(&known, fault_nrules > 0 ? 2 : 1, memory_order_release);
  return fault_nrules > 0;
}

xcclResult_t fault_check_config(void) {
  pthread_once(&fault_once, fault_load);
  if (fault_config_result != xcclSuccess) return err_set(fault_config_result, LOG_INIT, "%s", fault_config_msg);
  return xcclSuccess;
}

void fault_ctx_init(fault_ctx_t *ctx, int rank) {
  ctx->rank = rank;
  atomic_init(&ctx->op, "");
  atomic_init(&ctx->seq, 0);
}

void fault_set_op(fault_ctx_t *ctx, const char *op, uint64_t seq) { /* once per operation: no fence */
  atomic_store_explicit(&ctx->op, op, memory_order_relaxed);
  atomic_store_explicit(&ctx->seq, seq, memory_order_release);
}

/* xorshift64*: a generator per rule, seeded from the rule's seed and the rank. */
static double rule_draw(fault_rule_t *r, int rank) {
  if (!r->rng) r->rng = (r->seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(rank + 1) << 32) ^ 0x2545F4914F6CDD1Dull;
  r->rng ^= r->rng >> 12;
  r->rng ^= r->rng << 25;
  r->rng ^= r->rng >> 27;
  return (double)((r->rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

fault_action_t fault_match(const fault_ctx_t *ctx, fault_stream_t *s, const char *where, int *delay_ms_p) {
  if (!fault_enabled()) return FAULT_NONE;
  uint64_t seq = ctx ? atomic_load(&ctx->seq) : 0;
  const char *op = ctx ? atomic_load(&ctx->op) : "";
  if (s->seq != seq) s->seq = seq, s->step = 0;
  uint64_t step = s->step++;
  int rank = ctx ? ctx->rank : -1;
  fault_action_t act = FAULT_NONE;
  pthread_mutex_lock(&fault_lock);
  for (int i = 0; i < fault_nrules && act == FAULT_NONE; i++) {
    fault_rule_t *r = &fault_rules[i];
    if ((r->rank >= 0 && r->rank != rank) || (r->op[0] && strcmp(r->op, op) != 0) ||
        (r->seq >= 0 && (uint64_t)r->seq != seq) || (r->step >= 0 && (uint64_t)r->step != step))
      continue;
    if (r->p > 0 ? rule_draw(r, rank) >= r->p : r->fired) continue;
    r->fired++;
    act = r->action;
    *delay_ms_p = r->delay_ms;
    WARN(INIT, "fault injection: rule %d (action %s) fires on rank %d, %s #%llu, step %llu, %s", i + 1,
         action_names[act], rank, op[0] ? op : "(no operation)", (unsigned long long)seq, (unsigned long long)step,
         where);
  }
  pthread_mutex_unlock(&fault_lock);
  return act;
}

void fault_corrupt(void *data, size_t bytes) {
  if (data && bytes) ((unsigned char *)data)[bytes / 2] ^= 0x80;
}

fault_action_t fault_on_send(const fault_ctx_t *ctx, fault_stream_t *s, const char *where, void *data, size_t bytes) {
  int ms = 0;
  fault_action_t act = fault_match(ctx, s, where, &ms);
  switch (act) {
    case FAULT_CLOSE:
    case FAULT_ERROR: return act;
    case FAULT_KILL: raise(SIGKILL); break;
    case FAULT_STALL: raise(SIGSTOP); break;
    case FAULT_CORRUPT: fault_corrupt(data, bytes); break;
    case FAULT_DELAY: { /* in order: later messages on this connection wait behind it */
      struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
      break;
    }
    case FAULT_NONE: break;
  }
  return FAULT_NONE;
}
