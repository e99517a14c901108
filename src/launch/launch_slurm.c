/*
 * launch_slurm.c — the rendezvous of a Slurm job step started by srun
 * without PMI (MpiDefault=none, no --mpi): nothing is exchanged before the
 * bootstrap, so every rank computes the same root from what srun gives each
 * task.
 *
 * Where: task 0 runs on the first node of SLURM_STEP_NODELIST with every
 * distribution srun has but arbitrary (a host file), which rank 0 checks
 * against SLURMD_NODENAME. When the step has one node the root is 127.0.0.1.
 * Port: launch_slurm_port of SLURM_JOB_ID, SLURM_STEP_ID and the call, in
 * [LAUNCH_SLURM_PORT_MIN, LAUNCH_SLURM_PORT_MAX]; rank 0 listens on every
 * address of its host there, so a host name that resolves to 127.0.1.1 on
 * the node itself still works. Secret: XCCL_SECRET, else one derived from the
 * job and step ids, which anyone who can list the jobs knows (a warning says
 * so, as for XCCL_ROOT without XCCL_SECRET).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "config.h"
#include "error.h"
#include "launch.h"
#include "log.h"

#define HOSTLIST_MAX_HOSTS (1 << 24)
#define HOSTLIST_NAME_MAX 256

/* ---- Hostlist expressions ---- */

/* The next top-level item of list (commas inside brackets do not split).
 * Returns its length; *next_p is where the following item starts, or NULL. */
static size_t hostlist_item(const char *list, const char **next_p) {
  int depth = 0;
  const char *c = list;
  for (; *c; c++) {
    if (*c == '[') depth++;
    else if (*c == ']') depth--;
    else if (*c == ',' && depth == 0) break;
  }
  *next_p = *c ? c + 1 : NULL;
  return (size_t)(c - list);
}

typedef struct {
  unsigned long lo, hi;
  int width; /* digits of lo as written: zero padding */
} hl_range_t;

#define HOSTLIST_MAX_RANGES 256

/* The ranges of a bracket's body [s, s + len): "a" or "a-b" (a <= b),
 * comma separated. Returns how many, or -1 with why. */
static int bracket_parse(const char *s, size_t len, hl_range_t *out, char *why, size_t whylen) {
  int n = 0;
  const char *end = s + len, *p = s;
  while (p <= end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *stop = comma ? comma : end;
    char buf[48], *dash, *e1, *e2 = NULL;
    size_t k = (size_t)(stop - p);
    if (k == 0 || k >= sizeof(buf) || n == HOSTLIST_MAX_RANGES) goto bad;
    memcpy(buf, p, k);
    buf[k] = '\0';
    dash = strchr(buf, '-');
    if (dash) *dash = '\0';
    if (buf[0] < '0' || buf[0] > '9' || (dash && (dash[1] < '0' || dash[1] > '9'))) goto bad;
    out[n].lo = strtoul(buf, &e1, 10);
    out[n].hi = dash ? strtoul(dash + 1, &e2, 10) : out[n].lo;
    if (*e1 || (e2 && *e2) || out[n].hi < out[n].lo || out[n].hi - out[n].lo >= HOSTLIST_MAX_HOSTS) goto bad;
    out[n++].width = (int)strlen(buf);
    p = stop + 1;
  }
  return n;
bad:
  snprintf(why, whylen, "'[%.*s]' is not a list of numbers and ranges such as [01-03,7]", (int)len, s);
  return -1;
}

/* Hosts an item [s, s + len) names, or -1 with why. */
static long item_count(const char *s, size_t len, char *why, size_t whylen) {
  const char *lb = memchr(s, '[', len);
  if (!lb) {
    if (memchr(s, ']', len)) return snprintf(why, whylen, "'%.*s' has ']' without '['", (int)len, s), -1;
    return 1;
  }
  const char *rb = memchr(lb, ']', len - (size_t)(lb - s));
  if (!rb || memchr(s, ']', (size_t)(lb - s)))
    return snprintf(why, whylen, "'%.*s' has brackets that do not pair", (int)len, s), -1;
  hl_range_t r[HOSTLIST_MAX_RANGES];
  int nr = bracket_parse(lb + 1, (size_t)(rb - lb - 1), r, why, whylen);
  if (nr < 0) return -1;
  long n = 0;
  for (int k = 0; k < nr; k++) n += (long)(r[k].hi - r[k].lo + 1);
  long m = item_count(rb + 1, len - (size_t)(rb + 1 - s), why, whylen);
  if (m < 0) return -1;
  if (n > HOSTLIST_MAX_HOSTS || n * m > HOSTLIST_MAX_HOSTS)
    return snprintf(why, whylen, "more than %d hosts", HOSTLIST_MAX_HOSTS), -1;
  return n * m;
}

/* The n-th host of an item already counted: the first bracket varies slowest. */
static void item_nth(const char *s, size_t len, long n, char *out, size_t outlen) {
  const char *lb = memchr(s, '[', len);
  if (!lb) {
    snprintf(out, outlen, "%.*s", (int)len, s);
    return;
  }
  const char *rb = memchr(lb, ']', len - (size_t)(lb - s)), *rest = rb + 1;
  size_t restlen = len - (size_t)(rest - s);
  char why[160];
  hl_range_t r[HOSTLIST_MAX_RANGES];
  int nr = bracket_parse(lb + 1, (size_t)(rb - lb - 1), r, why, sizeof(why));
  long m = item_count(rest, restlen, why, sizeof(why)), idx = n / m;
  int k = 0;
  for (; k < nr - 1 && idx >= (long)(r[k].hi - r[k].lo + 1); k++) idx -= (long)(r[k].hi - r[k].lo + 1);
  int used = snprintf(out, outlen, "%.*s%0*lu", (int)(lb - s), s, r[k].width, r[k].lo + (unsigned long)idx);
  if (used >= 0 && (size_t)used < outlen) item_nth(rest, restlen, n % m, out + used, outlen - (size_t)used);
}

int launch_hostlist_count(const char *list, char *why, size_t whylen) {
  if (!list || !*list) return snprintf(why, whylen, "the host list is empty"), -1;
  long total = 0;
  for (const char *s = list, *next; s; s = next) {
    size_t len = hostlist_item(s, &next);
    if (len == 0) return snprintf(why, whylen, "'%s' has an empty host name", list), -1;
    long n = item_count(s, len, why, whylen);
    if (n < 0) return -1;
    total += n;
    if (total > HOSTLIST_MAX_HOSTS) return snprintf(why, whylen, "more than %d hosts", HOSTLIST_MAX_HOSTS), -1;
  }
  return (int)total;
}

int launch_hostlist_nth(const char *list, int n, char *out, size_t outlen, char *why, size_t whylen) {
  int total = launch_hostlist_count(list, why, whylen);
  if (total < 0) return -1;
  if (n < 0 || n >= total) return snprintf(why, whylen, "host %d of a list of %d", n, total), -1;
  for (const char *s = list, *next; s; s = next) {
    size_t len = hostlist_item(s, &next);
    long cnt = item_count(s, len, why, whylen);
    if (n < cnt) {
      item_nth(s, len, n, out, outlen);
      return 0;
    }
    n -= (int)cnt;
  }
  return snprintf(why, whylen, "internal error walking the host list"), -1;
}

/* ---- Port ---- */

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint16_t launch_slurm_port(uint64_t job, uint64_t step, unsigned call) {
  const uint64_t span = LAUNCH_SLURM_PORT_MAX - LAUNCH_SLURM_PORT_MIN + 1;
  uint64_t h = mix64(mix64(job) ^ step);
  return (uint16_t)(LAUNCH_SLURM_PORT_MIN + (h + call) % span);
}

/* ---- The rendezvous ---- */

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  if (!s || *s < '0' || *s > '9') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end) return -1;
  *out = v;
  return 0;
}

xcclResult_t launch_slurm(unsigned call, int rank, int nranks, bs_id_t *id_p, char *how, size_t howlen) {
  (void)nranks;
  const char *job_s = config_foreign_env("SLURM_JOB_ID"), *step_s = config_foreign_env("SLURM_STEP_ID");
  const char *list = config_foreign_env("SLURM_STEP_NODELIST");
  uint64_t job, step;
  if (parse_u64(job_s, &job) || parse_u64(step_s, &step))
    return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: under Slurm, SLURM_JOB_ID=%s and SLURM_STEP_ID=%s "
                   "are not both numbers (is this a batch script rather than a task of srun?); start the program with "
                   "srun, or set XCCL_ROOT=host:port", job_s ? job_s : "(unset)", step_s ? step_s : "(unset)");
  char why[256], first[HOSTLIST_NAME_MAX];
  int nodes = launch_hostlist_count(list, why, sizeof(why));
  if (nodes < 0 || launch_hostlist_nth(list, 0, first, sizeof(first), why, sizeof(why)) != 0)
    return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: SLURM_STEP_NODELIST=%s: %s; set XCCL_ROOT=host:port",
                   list ? list : "(unset)", why);
  uint16_t port = launch_slurm_port(job, step, call);
  char root[HOSTLIST_NAME_MAX + 16];
  snprintf(root, sizeof(root), "%s:%u", nodes == 1 ? "127.0.0.1" : first, port);
  if (rank == 0 && nodes > 1) {
    const char *me = config_foreign_env("SLURMD_NODENAME");
    if (me && strcmp(me, first) != 0)
      return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: task 0 runs on %s, not on %s, the first node of "
                     "SLURM_STEP_NODELIST=%s, so the other tasks cannot find it (an arbitrary distribution?); use "
                     "srun's default block distribution or set XCCL_ROOT=host:port", me, first, list);
  }
  bs_id_t id;
  sock_addr_t addr;
  xcclResult_t r = sock_addr_parse(root, &addr);
  if (r != xcclSuccess)
    return err_prefix(r, "xcclCommInitFromEnv: the root of Slurm job %s step %s, on the step's first node", job_s, step_s);
  const char *secret = config_str(CFG_SECRET);
  char text[HOSTLIST_NAME_MAX + 128];
  snprintf(text, sizeof(text), "slurm|%s.%s.%u|%s", job_s, step_s, call, root);
  launch_id_derive(secret, text, &addr, &id);
  if (rank == 0) {
    if (!*secret)
      WARN(INIT, "bootstrap of Slurm job %s step %s at %s without XCCL_SECRET: its secret is derived from the job and "
                 "step ids, which anyone on the cluster can read, so anyone who can reach that port can join; set the "
                 "same XCCL_SECRET on every rank to authenticate them", job_s, step_s, root);
    bs_id_t bind = id; /* every address of this host, at the derived port */
    memset(&bind.root, 0, sizeof(bind.root));
    if (addr.sa.sa_family == AF_INET6) {
      bind.root.sin6.sin6_family = AF_INET6;
      bind.root.sin6.sin6_addr = in6addr_any;
    } else {
      bind.root.sin.sin_family = AF_INET;
      bind.root.sin.sin_addr.s_addr = htonl(nodes == 1 ? INADDR_LOOPBACK : INADDR_ANY);
    }
    sock_addr_set_port(&bind.root, port);
    r = bootstrap_root_start(&bind, config_double(CFG_TIMEOUT));
    if (r != xcclSuccess)
      return err_prefix(r, "xcclCommInitFromEnv: the bootstrap root of Slurm job %s step %s at port %u (derived from "
                           "the job and step ids, in %d-%d) cannot start; if another program holds that port, set "
                           "XCCL_ROOT=host:port of a free one", job_s, step_s, port, LAUNCH_SLURM_PORT_MIN,
                        LAUNCH_SLURM_PORT_MAX);
  }
  snprintf(how, howlen, "Slurm job %s step %s: root at %s (first of %d node%s, port from the job and step ids)", job_s,
           step_s, root, nodes, nodes == 1 ? "" : "s");
  *id_p = id;
  return xcclSuccess;
}
