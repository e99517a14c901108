#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "xccl.h"

extern char **environ;

const config_entry_t config_table[CFG_COUNT] = {
#define XCCL_CFG_ROW(name_, type_, def_, lo_, hi_, desc_)                                                    \
  [CFG_##name_] = {.name = #name_, .type = CFG_T_##type_, .def = def_, .min = lo_, .max = hi_, .desc = desc_, \
                   .shared = -1},
#define XCCL_CFG_SHARED_ROW(name_, type_, def_, lo_, hi_, desc_)                                             \
  [CFG_##name_] = {.name = #name_, .type = CFG_T_##type_, .def = def_, .min = lo_, .max = hi_, .desc = desc_, \
                   .shared = CFG_SHARED_##name_},
    XCCL_CONFIG_TABLE(XCCL_CFG_ROW, XCCL_CFG_SHARED_ROW)
#undef XCCL_CFG_ROW
#undef XCCL_CFG_SHARED_ROW
};

#define CONFIG_TEXT 256 /* room for an alias's value in xccl's syntax */

typedef struct {
  int64_t i;
  double d;
  const char *s; /* points into the environment, the table's default or text[] */
  int set;       /* present in the environment (XCCL_X or an alias) */
  int valid;     /* the environment's value was used */
  int alias;     /* the config_aliases index it came from; -1: XCCL_X or the default */
  char from[64]; /* config_source's answer */
  char text[CONFIG_TEXT]; /* an alias's value translated */
} config_value_t;

static config_value_t config_values[CFG_COUNT];
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static int parse_int(const char *text, int64_t *out) {
  char *end;
  errno = 0;
  if (isspace((unsigned char)text[0])) return -1;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end) return -1;
  *out = v;
  return 0;
}

static int parse_size(const char *text, int64_t *out) {
  char *end;
  errno = 0;
  if (!isdigit((unsigned char)text[0])) return -1;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text) return -1;
  unsigned long long mult = 1;
  switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mult = 1ull << 10; end++; break;
    case 'M': mult = 1ull << 20; end++; break;
    case 'G': mult = 1ull << 30; end++; break;
    case 'B': case 'b': break; /* plain bytes: "4096B" */
    default: return -1;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end || v > (unsigned long long)INT64_MAX / mult) return -1;
  *out = (int64_t)(v * mult);
  return 0;
}

static int parse_bool(const char *text, int64_t *out) {
  static const char *yes[] = {"1", "y", "yes", "true", "on"}, *no[] = {"0", "n", "no", "false", "off"};
  for (int i = 0; i < 5; i++) {
    if (strcasecmp(text, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(text, no[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

/* config_parse, with the messages naming `shown` ("NCCL_X=value") instead of
 * XCCL_<name>=text. */
static int parse_shown(const config_entry_t *e, const char *text, const char *shown, int64_t *i_p, double *d_p,
                       char *why, size_t whylen) {
  int64_t i = 0;
  double d = 0;
  int rc = 0;
  switch (e->type) {
    case CFG_T_INT: rc = parse_int(text, &i); d = (double)i; break;
    case CFG_T_SIZE: rc = parse_size(text, &i); d = (double)i; break;
    case CFG_T_BOOL: rc = parse_bool(text, &i); d = (double)i; break;
    case CFG_T_DOUBLE: {
      char *end;
      errno = 0;
      d = strtod(text, &end);
      rc = (errno || end == text || *end || !isfinite(d) || isspace((unsigned char)text[0])) ? -1 : 0;
      break;
    }
    case CFG_T_STR: return 0;
  }
  static const char *kind[] = {"an integer", "a size in bytes (e.g. 4096, 512K, 4M)", "a number",
                               "a boolean (0/1, yes/no, true/false, on/off)", "a string"};
  if (rc) {
    snprintf(why, whylen, "%s is not %s", shown, kind[e->type]);
    return -1;
  }
  if (e->type != CFG_T_BOOL && (d < e->min || d > e->max)) {
    snprintf(why, whylen, "%s is outside [%g, %g]", shown, e->min, e->max);
    return -1;
  }
  *i_p = i;
  *d_p = d;
  return 0;
}

int config_parse(const config_entry_t *e, const char *text, int64_t *i_p, double *d_p, char *why,
                 size_t whylen) {
  char shown[CONFIG_TEXT + 96];
  snprintf(shown, sizeof(shown), "XCCL_%s=%s", e->name, text);
  return parse_shown(e, text, shown, i_p, d_p, why, whylen);
}

/* Levenshtein distance, for "did you mean". Names are short. */
static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return (size_t)-1;
  size_t prev[64], cur[64];
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t sub = prev[j - 1] + (toupper((unsigned char)a[i - 1]) != toupper((unsigned char)b[j - 1]));
      size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, sizeof(size_t) * (lb + 1));
  }
  return prev[lb];
}

const char *config_nearest(const char *name) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  for (int i = 0; i < CFG_COUNT; i++) {
    size_t d = edit_distance(name, config_table[i].name);
    if (d < best_d) best_d = d, best = config_table[i].name;
  }
  size_t len = strlen(name);
  return best_d <= (len + 2) / 3 ? best : NULL;
}

/* ---- NCCL's variables: translation of their values ------------------------ */

/* An integer as NCCL reads one (strtoll, base 0: 0x1f and 017 too). */
static int nccl_int(const char *s, long long *v_p) {
  char *end;
  errno = 0;
  if (!*s || isspace((unsigned char)s[0])) return -1;
  long long v = strtoll(s, &end, 0);
  if (errno || end == s || *end) return -1;
  *v_p = v;
  return 0;
}

/* Appends "; "-separated text to why. */
static void why_add(char *why, size_t whylen, const char *fmt, const char *a, const char *b) {
  size_t n = strlen(why);
  if (n + 3 >= whylen) return;
  if (n) n += (size_t)snprintf(why + n, whylen - n, "; ");
  snprintf(why + n, whylen - n, fmt, a, b);
}

/* An integer in NCCL's syntax as a decimal; anything else as it is, for
 * xccl's parser to refuse in its own words. */
static int xlate_int(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  (void)why, (void)wl;
  long long x;
  if (nccl_int(v[0], &x) == 0) snprintf(out, len, "%lld", x);
  else snprintf(out, len, "%s", v[0]);
  return CONFIG_XLATE_OK;
}

/* Like xlate_int, but a negative number is NCCL's "not set". */
static int xlate_int_unset_below_0(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  long long x;
  if (nccl_int(v[0], &x) == 0 && x < 0) return CONFIG_XLATE_DEFAULT;
  return xlate_int(v, out, len, why, wl);
}

/* NCCL's switches are integers, any but 0 meaning on. */
static int xlate_flag(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  (void)why, (void)wl;
  long long x;
  snprintf(out, len, "%s", nccl_int(v[0], &x) == 0 ? (x ? "1" : "0") : v[0]);
  return CONFIG_XLATE_OK;
}

static int xlate_debug(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  static const char *same[] = {"NONE", "VERSION", "WARN", "INFO", "TRACE"};
  for (size_t k = 0; k < sizeof(same) / sizeof(same[0]); k++)
    if (strcasecmp(v[0], same[k]) == 0) return snprintf(out, len, "%s", same[k]), CONFIG_XLATE_OK;
  if (strcasecmp(v[0], "ABORT") == 0) {
    snprintf(why, wl, "ABORT has no xccl equivalent");
    return CONFIG_XLATE_NONE;
  }
  snprintf(out, len, "%s", v[0]); /* log_configure says what is wrong with it */
  return CONFIG_XLATE_OK;
}

/* NCCL's subsystem names to xccl's; NCCL's that xccl lacks are dropped. */
static int xlate_subsys(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  static const char *const map[][2] = {{"INIT", "INIT"}, {"COLL", "COLL"},   {"NET", "NET"},
                                       {"PROXY", "PROXY"}, {"BOOTSTRAP", "BOOTSTRAP"}, {"ENV", "ENV"},
                                       {"ALL", "ALL"},   {"GRAPH", "TOPO"},  {"TOPO", "TOPO"}};
  static const char *const none[] = {"P2P", "SHM", "ALLOC", "CALL", "TUNING", "NVLS", "REG", "PROFILE", "RAS"};
  char buf[CONFIG_TEXT];
  int neg = v[0][0] == '^', kept = 0;
  snprintf(buf, sizeof(buf), "%s", v[0] + neg);
  size_t n = (size_t)snprintf(out, len, "%s", neg ? "^" : "");
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    const char *to = tok; /* not NCCL's either: log_configure warns */
    for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
      if (strcasecmp(tok, map[k][0]) == 0) to = map[k][1];
    for (size_t k = 0; k < sizeof(none) / sizeof(none[0]); k++)
      if (strcasecmp(tok, none[k]) == 0) to = NULL;
    if (!to) {
      why_add(why, wl, "%s has no xccl equivalent%s", tok, "");
      continue;
    }
    if (n < len) n += (size_t)snprintf(out + n, len - n, "%s%s", kept++ ? "," : "", to);
  }
  if (kept) return CONFIG_XLATE_OK;
  return neg ? CONFIG_XLATE_DEFAULT : CONFIG_XLATE_NONE; /* ^ of nothing xccl has: all */
}

/*
 * NCCL_ALGO: a list of algorithms NCCL may use ("Tree,Ring"; "^Tree": all but
 * these), for every collective or per collective ("allreduce:tree,ring;
 * broadcast:ring"). xccl's algorithms NCCL knows are ring, for all-reduce
 * tree, and for all-gather and reduce-scatter PAT: a list that allows Ring
 * forces ring; one that allows Tree or PAT and not Ring forces all-reduce's
 * tree or all-gather's and reduce-scatter's PAT where the collective has
 * one; one that excludes algorithms other than Ring changes nothing; any
 * other has no equivalent.
 */
static int xlate_algo(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  static const char *colls[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"};
  char buf[CONFIG_TEXT];
  snprintf(buf, sizeof(buf), "%s", v[0]);
  size_t n = 0;
  out[0] = '\0';
  for (char *gs = NULL, *group = strtok_r(buf, ";", &gs); group; group = strtok_r(NULL, ";", &gs)) {
    while (isspace((unsigned char)*group)) group++;
    char *colon = strchr(group, ':'), *list = colon ? colon + 1 : group;
    const char *coll = NULL;
    if (colon) {
      *colon = '\0';
      for (size_t k = 0; k < sizeof(colls) / sizeof(colls[0]); k++)
        if (strcasecmp(group, colls[k]) == 0) coll = colls[k];
      if (!coll) {
        why_add(why, wl, "%s is not a collective xccl has algorithms for%s", group, "");
        continue;
      }
    }
    int neg = list[0] == '^', ring = 0, tree = 0, pat = 0;
    char algos[CONFIG_TEXT];
    snprintf(algos, sizeof(algos), "%s", list + neg);
    for (char *as = NULL, *a = strtok_r(algos, ",", &as); a; a = strtok_r(NULL, ",", &as)) {
      ring |= strcasecmp(a, "ring") == 0;
      tree |= strcasecmp(a, "tree") == 0;
      pat |= strcasecmp(a, "pat") == 0;
    }
    if (neg && !ring) continue; /* excludes only algorithms xccl does not have */
    /* Tree or PAT without Ring: xccl's tree, which like NCCL's serves
     * all-reduce, and its PAT, which like NCCL's serves all-gather and
     * reduce-scatter. */
    int as_tree = !neg && !ring && tree && (!coll || strcmp(coll, "allreduce") == 0);
    int as_pat = !neg && !ring && pat && (!coll || strcmp(coll, "allgather") == 0 || strcmp(coll, "reducescatter") == 0);
    if (!as_tree && !as_pat && (neg || !ring)) {
      why_add(why, wl,
              "%s has no xccl equivalent (xccl's algorithms NCCL names: ring; tree for allreduce; PAT for allgather "
              "and reducescatter)",
              list, "");
      continue;
    }
    if (!as_tree && !as_pat) {
      if (n < len)
        n += (size_t)snprintf(out + n, len - n, "%s%s%s", n ? "," : "", coll ? coll : "", coll ? ":ring" : "ring");
      continue;
    }
    if (as_tree && n < len) n += (size_t)snprintf(out + n, len - n, "%sallreduce:tree", n ? "," : "");
    for (int g = 0; as_pat && g < 2; g++) {
      const char *c = g ? "reducescatter" : "allgather";
      if ((!coll || strcmp(coll, c) == 0) && n < len) n += (size_t)snprintf(out + n, len - n, "%s%s:pat", n ? "," : "", c);
    }
  }
  if (n) return CONFIG_XLATE_OK;
  return why[0] ? CONFIG_XLATE_NONE : CONFIG_XLATE_DEFAULT;
}

/* NCCL's path words, or its numbers of old (0 LOC ... 4 SYS, 5 SYS too). */
static int xlate_gdr(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  static const char *words[] = {"LOC", "PIX", "PXB", "PHB", "SYS", "SYS"};
  long long x;
  for (size_t k = 0; k < 5; k++)
    if (strcasecmp(v[0], words[k]) == 0) return snprintf(out, len, "%s", words[k]), CONFIG_XLATE_OK;
  if (nccl_int(v[0], &x) == 0 && x >= 0) return snprintf(out, len, "%s", words[x > 5 ? 5 : x]), CONFIG_XLATE_OK;
  snprintf(why, wl, "%s has no xccl equivalent (xccl: LOC, PIX, PXB, PHB, SYS or 0-5)", v[0]);
  return CONFIG_XLATE_NONE;
}

static int xlate_family(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  if (strcasecmp(v[0], "AF_INET") != 0 && strcasecmp(v[0], "AF_INET6") != 0) {
    snprintf(why, wl, "%s is not AF_INET or AF_INET6", v[0]);
    return CONFIG_XLATE_NONE;
  }
  snprintf(out, len, "%s", v[0]);
  return CONFIG_XLATE_OK;
}

/* NCCL's built-in networks are IB and Socket; others are plugins. */
static int xlate_net(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  if (strcasecmp(v[0], "IB") == 0 || strcasecmp(v[0], "Socket") == 0) {
    snprintf(out, len, "%s", strcasecmp(v[0], "IB") == 0 ? "ib" : "socket");
    return CONFIG_XLATE_OK;
  }
  snprintf(why, wl, "%s has no xccl equivalent (xccl's networks: ib, socket; no plugins)", v[0]);
  return CONFIG_XLATE_NONE;
}

static int xlate_ib_disable(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  long long x;
  if (nccl_int(v[0], &x) != 0) {
    snprintf(why, wl, "%s is not an integer", v[0]);
    return CONFIG_XLATE_NONE;
  }
  if (!x) return CONFIG_XLATE_DEFAULT;
  snprintf(out, len, "socket");
  return CONFIG_XLATE_OK;
}

/* The two integers, each 1 when unset, multiplied; a bad one (or one below 1,
 * NCCL's "choose for me") as it is, for the range check to name. */
static int xlate_product(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  (void)why, (void)wl;
  long long a = 1, b = 1;
  if (v[0] && (nccl_int(v[0], &a) != 0 || a < 1)) return snprintf(out, len, "%s", v[0]), CONFIG_XLATE_OK;
  if (v[1] && (nccl_int(v[1], &b) != 0 || b < 1)) return snprintf(out, len, "%s", v[1]), CONFIG_XLATE_OK;
  snprintf(out, len, "%lld", (a > 1 << 20 || b > 1 << 20) ? (long long)1 << 40 : a * b);
  return CONFIG_XLATE_OK;
}

/* NCCL's buffer per connection is 8 steps, xccl's 8 slots of CHUNK_SIZE. */
static int xlate_buffsize(const char *const v[2], char *out, size_t len, char *why, size_t wl) {
  (void)why, (void)wl;
  long long x;
  if (nccl_int(v[0], &x) == 0 && x >= 0) snprintf(out, len, "%lld", x / 8);
  else snprintf(out, len, "%s", v[0]);
  return CONFIG_XLATE_OK;
}

#define AS_IS "the same value"
#define AS_INT "an integer (NCCL's 0x.. too)"
const config_alias_t config_aliases[] = {
    {{"NCCL_DEBUG"}, CFG_DEBUG, xlate_debug, "NONE..TRACE as they are; ABORT has no equivalent"},
    {{"NCCL_DEBUG_SUBSYS"}, CFG_DEBUG_SUBSYS, xlate_subsys,
     "INIT,COLL,NET,PROXY,BOOTSTRAP,ENV,ALL, GRAPH as TOPO, ^ as ^; "
     "P2P,SHM,ALLOC,CALL,TUNING,NVLS,REG,PROFILE,RAS dropped"},
    {{"NCCL_DEBUG_FILE"}, CFG_DEBUG_FILE, NULL, AS_IS " (%h, %p)"},
    {{"NCCL_COMM_ID"}, CFG_ROOT, NULL, AS_IS " (host:port of the bootstrap root)"},
    {{"NCCL_SOCKET_IFNAME"}, CFG_SOCKET_IFNAME, NULL, AS_IS},
    {{"NCCL_SOCKET_FAMILY"}, CFG_SOCKET_FAMILY, xlate_family, "AF_INET or AF_INET6"},
    {{"NCCL_NSOCKS_PERTHREAD", "NCCL_SOCKET_NTHREADS"}, CFG_NSOCKS, xlate_product,
     "their product, an unset one counting 1"},
    {{"NCCL_NET"}, CFG_NET, xlate_net, "IB as ib, Socket as socket; plugin names have no equivalent"},
    {{"NCCL_IB_DISABLE"}, CFG_NET, xlate_ib_disable, "not 0: socket; 0: as if unset"},
    {{"NCCL_SHM_DISABLE"}, CFG_SHM_DISABLE, xlate_flag, "0 or not 0"},
    {{"NCCL_COMM_BLOCKING"}, CFG_COMM_BLOCKING, xlate_flag, "0 or not 0"},
    {{"NCCL_NET_GDR_LEVEL"}, CFG_NET_GDR_LEVEL, xlate_gdr, "LOC, PIX, PXB, PHB, SYS; 0-4 as those, 5 and up SYS"},
    {{"NCCL_IB_GDR_LEVEL"}, CFG_NET_GDR_LEVEL, xlate_gdr, "NCCL's old name of NCCL_NET_GDR_LEVEL"},
    {{"NCCL_P2P_DISABLE"}, CFG_P2P_DISABLE, xlate_flag, "0 or not 0"},
    {{"NCCL_HOSTID"}, CFG_HOSTID, NULL, AS_IS},
    {{"NCCL_MIN_NCHANNELS"}, CFG_MIN_NCHANNELS, xlate_int, AS_INT},
    {{"NCCL_MAX_NCHANNELS"}, CFG_MAX_NCHANNELS, xlate_int, AS_INT},
    {{"NCCL_BUFFSIZE"}, CFG_CHUNK_SIZE, xlate_buffsize, "bytes per connection: an eighth of it per slot"},
    {{"NCCL_ALGO"}, CFG_ALGO, xlate_algo,
     "a list allowing Ring (for all or per collective) as ring; Tree without Ring as allreduce:tree; others none"},
    {{"NCCL_TOPO_FILE"}, CFG_TOPO_FILE, NULL, AS_IS},
    {{"NCCL_TOPO_DUMP_FILE"}, CFG_TOPO_DUMP_FILE, NULL, AS_IS},
    {{"NCCL_GRAPH_FILE"}, CFG_GRAPH_FILE, NULL, AS_IS},
    {{"NCCL_GRAPH_DUMP_FILE"}, CFG_GRAPH_DUMP_FILE, NULL, AS_IS},
    {{"NCCL_IB_HCA"}, CFG_IB_HCA, NULL, AS_IS},
    {{"NCCL_IB_GID_INDEX"}, CFG_IB_GID_INDEX, xlate_int, AS_INT},
    {{"NCCL_IB_ADDR_FAMILY"}, CFG_IB_ADDR_FAMILY, NULL, AS_IS},
    {{"NCCL_IB_ADDR_RANGE"}, CFG_IB_ADDR_RANGE, NULL, AS_IS},
    {{"NCCL_IB_ROCE_VERSION_NUM"}, CFG_IB_ROCE_VERSION_NUM, xlate_int, AS_INT},
    {{"NCCL_IB_TC"}, CFG_IB_TC, xlate_int_unset_below_0, AS_INT "; -1 as if unset"},
    {{"NCCL_IB_SL"}, CFG_IB_SL, xlate_int, AS_INT},
    {{"NCCL_IB_PKEY_VALUE"}, CFG_IB_PKEY, xlate_int_unset_below_0, AS_INT "; -1 as if unset"},
    {{"NCCL_IB_TIMEOUT"}, CFG_IB_TIMEOUT, xlate_int, AS_INT},
    {{"NCCL_IB_RETRY_CNT"}, CFG_IB_RETRY_CNT, xlate_int, AS_INT},
    {{"NCCL_IB_QPS_PER_CONNECTION"}, CFG_IB_QPS_PER_CONNECTION, xlate_int, AS_INT},
    {{"NCCL_IB_SPLIT_DATA_ON_QPS"}, CFG_IB_SPLIT_DATA_ON_QPS, xlate_int, AS_INT},
    {{"NCCL_IB_ADAPTIVE_ROUTING"}, CFG_IB_ADAPTIVE_ROUTING, xlate_int, AS_INT},
    {{"NCCL_IB_AR_THRESHOLD"}, CFG_IB_AR_THRESHOLD, xlate_int, AS_INT},
    {{"NCCL_IB_PCI_RELAXED_ORDERING"}, CFG_IB_PCI_RELAXED_ORDERING, xlate_int, AS_INT},
};
const int config_alias_count = (int)(sizeof(config_aliases) / sizeof(config_aliases[0]));

/* NCCL variables whose name suggests a meaning xccl has, but whose is another. */
static const char *const nccl_unlike[][2] = {
    {"NCCL_IB_PKEY",
     "it is an index in the partition key table; xccl takes the key (NCCL_IB_PKEY_VALUE, XCCL_IB_PKEY)"},
    {"NCCL_CHUNK_SIZE", "xccl's step is its slot (NCCL_BUFFSIZE / 8, XCCL_CHUNK_SIZE)"},
    {"NCCL_CHECKS_DISABLE", "xccl always checks arguments (XCCL_CHECK compares calls across ranks)"},
};

int config_alias_known(const char *name) {
  for (int a = 0; a < config_alias_count; a++)
    for (int k = 0; k < 2; k++)
      if (config_aliases[a].names[k] && strcmp(name, config_aliases[a].names[k]) == 0) return 1;
  return 0;
}

static void config_warn(const char *fmt, const char *a, const char *b) {
  if (log_enabled_configured(LOG_WARN, LOG_ENV)) log_write(LOG_WARN, LOG_ENV, __FILE__, __LINE__, fmt, a, b);
}

/* ---- Reading the environment ---------------------------------------------- */

/* Messages about the values, kept until log_configure has applied the log
 * settings that decide whether they are shown. */
typedef struct {
  int n;
  struct {
    log_level_t level;
    char text[CONFIG_TEXT + 160];
  } note[2 * CFG_COUNT + 16];
} config_notes_t;

static void note_add(config_notes_t *notes, log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note_add(config_notes_t *notes, log_level_t level, const char *fmt, ...) {
  if (notes->n >= (int)(sizeof(notes->note) / sizeof(notes->note[0]))) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(notes->note[notes->n].text, sizeof(notes->note[0].text), fmt, ap);
  va_end(ap);
  notes->note[notes->n++].level = level;
}

static void notes_log(const config_notes_t *notes) {
  for (int k = 0; k < notes->n; k++)
    if (log_enabled_configured(notes->note[k].level, LOG_ENV))
      log_write(notes->note[k].level, LOG_ENV, __FILE__, __LINE__, "%s", notes->note[k].text);
}

/* "NCCL_A=a, NCCL_B=b" for the alias's variables that are set; 0 when none is. */
static int alias_shown(const config_alias_t *a, const char *vals[2], char *shown, size_t len) {
  size_t n = 0;
  shown[0] = '\0';
  for (int k = 0; k < 2; k++) {
    vals[k] = a->names[k] ? getenv(a->names[k]) : NULL;
    if (vals[k] && n < len) n += (size_t)snprintf(shown + n, len - n, "%s%s=%s", n ? ", " : "", a->names[k], vals[k]);
  }
  return vals[0] || vals[1];
}

/* The alias's value in xccl's syntax: returns the xlate's rc and on
 * CONFIG_XLATE_OK points *s_p at the value (text, or the environment's own
 * string when there is nothing to translate). */
static int alias_value(const config_alias_t *a, const char *vals[2], char *text, size_t len, const char **s_p,
                       char *why, size_t whylen) {
  why[0] = '\0';
  if (!a->xlate) {
    *s_p = vals[0];
    return CONFIG_XLATE_OK;
  }
  int rc = a->xlate(vals, text, len, why, whylen);
  *s_p = text;
  return rc;
}

/* Do the texts a and b give entry e the same value? */
static int same_value(const config_entry_t *e, const char *a, const char *b) {
  if (e->type == CFG_T_STR) return strcasecmp(a, b) == 0;
  int64_t ia, ib;
  double da, db;
  char why[8];
  return parse_shown(e, a, "", &ia, &da, why, sizeof(why)) == 0 &&
         parse_shown(e, b, "", &ib, &db, why, sizeof(why)) == 0 && ia == ib && da == db;
}

/* Sets v from XCCL_<name>, else from the first of its aliases that gives a
 * value, else the default; says in notes what was used and what ignored. */
static void config_resolve(int id, config_value_t *v, config_notes_t *notes) {
  const config_entry_t *e = &config_table[id];
  char var[96], why[CONFIG_TEXT + 96], shown[2 * CONFIG_TEXT], label[CONFIG_TEXT + 96];
  snprintf(var, sizeof(var), "XCCL_%s", e->name);
  memset(v, 0, sizeof(*v));
  v->alias = -1;
  config_parse(e, e->def, &v->i, &v->d, why, sizeof(why));
  v->s = e->def;
  snprintf(v->from, sizeof(v->from), "default");
  const char *env = getenv(var);
  if (env) {
    v->set = 1;
    snprintf(v->from, sizeof(v->from), "%s", var);
    snprintf(label, sizeof(label), "%s=%s", var, env);
    if (parse_shown(e, env, label, &v->i, &v->d, why, sizeof(why)) == 0)
      v->s = env, v->valid = 1;
    else
      note_add(notes, LOG_WARN, "%s; using the default %s", why, e->def);
  }
  for (int k = 0; k < config_alias_count; k++) {
    const config_alias_t *a = &config_aliases[k];
    const char *vals[2], *s = NULL;
    char text[CONFIG_TEXT];
    if (a->id != (config_id_t)id || !alias_shown(a, vals, shown, sizeof(shown))) continue;
    int rc = alias_value(a, vals, text, sizeof(text), &s, why, sizeof(why));
    if (v->set) { /* XCCL_X, or an alias before this one, has the say */
      const char *winner = v->alias >= 0 ? v->from : var, *wval = v->alias >= 0 ? v->s : env;
      if (rc == CONFIG_XLATE_OK && !same_value(e, s, wval))
        note_add(notes, LOG_WARN, "%s is ignored: %s=%s is set and wins", shown, winner, wval);
      else
        note_add(notes, LOG_INFO, "%s is ignored: %s is set", shown, winner);
      continue;
    }
    if (why[0])
      note_add(notes, LOG_WARN, "%s: %s; %s", shown, why, rc == CONFIG_XLATE_OK ? "that part ignored" : "ignored");
    if (rc != CONFIG_XLATE_OK) continue;
    v->set = 1;
    v->alias = k;
    snprintf(v->from, sizeof(v->from), "%s%s%s", vals[0] ? a->names[0] : "", vals[0] && vals[1] ? ", " : "",
             vals[1] ? a->names[1] : "");
    if (s == text) {
      snprintf(v->text, sizeof(v->text), "%s", text);
      s = v->text;
    }
    if (a->names[1] || strcmp(s, vals[0]) != 0)
      snprintf(label, sizeof(label), "%s (%s=%s)", shown, var, s);
    else
      snprintf(label, sizeof(label), "%s", shown);
    if (parse_shown(e, s, label, &v->i, &v->d, why, sizeof(why)) == 0) {
      v->s = s, v->valid = 1;
      note_add(notes, LOG_INFO, "%s used as %s=%s", shown, var, s);
    } else {
      note_add(notes, LOG_WARN, "%s; using the default %s", why, e->def);
    }
  }
}

/* The variable's name (before '=') into name; its length. */
static size_t env_name(const char *entry, char *name, size_t len) {
  size_t n = strcspn(entry, "=");
  if (n >= len) n = len - 1;
  memcpy(name, entry, n);
  name[n] = '\0';
  return n;
}

static void config_warn_unknown(void) {
  for (char **ep = environ; ep && *ep; ep++) {
    char name[96];
    env_name(*ep, name, sizeof(name));
    if (strncmp(name, "NCCL_", 5) == 0 && !config_alias_known(name)) {
      const char *why = "xccl has no setting with its meaning";
      for (size_t k = 0; k < sizeof(nccl_unlike) / sizeof(nccl_unlike[0]); k++)
        if (strcmp(name, nccl_unlike[k][0]) == 0) why = nccl_unlike[k][1];
      if (log_enabled_configured(LOG_INFO, LOG_ENV))
        log_write(LOG_INFO, LOG_ENV, __FILE__, __LINE__, "%s is ignored: %s", name, why);
      continue;
    }
    if (strncmp(name, "XCCL_", 5) != 0) continue;
    int known = 0;
    for (int id = 0; id < CFG_COUNT && !known; id++) known = strcmp(name + 5, config_table[id].name) == 0;
    if (known) continue;
    const char *near = config_nearest(name + 5);
    if (near)
      config_warn("unknown variable %s is ignored; did you mean XCCL_%s?", name, near);
    else
      config_warn("unknown variable %s is ignored%s; `xccl-info` lists the known ones", name, "");
  }
}

/* The log settings of these three values. */
static void config_log_apply(const config_value_t *dbg, const config_value_t *sub, const config_value_t *file) {
  log_settings_t ls = {.level = dbg->s, .level_var = dbg->alias >= 0 ? dbg->from : "XCCL_DEBUG",
                       .subsys = sub->s, .subsys_var = sub->alias >= 0 ? sub->from : "XCCL_DEBUG_SUBSYS",
                       .file = file->s, .file_var = file->alias >= 0 ? file->from : "XCCL_DEBUG_FILE"};
  log_configure(&ls);
}

static config_notes_t config_read_notes;

static void config_read(void) {
  config_notes_t *notes = &config_read_notes;
  notes->n = 0;
  for (int id = 0; id < CFG_COUNT; id++) config_resolve(id, &config_values[id], notes);
  config_log_apply(&config_values[CFG_DEBUG], &config_values[CFG_DEBUG_SUBSYS], &config_values[CFG_DEBUG_FILE]);
  notes_log(notes);
  config_warn_unknown();
}

void config_load(void) { pthread_once(&config_once, config_read); }

static pthread_mutex_t config_debug_lock = PTHREAD_MUTEX_INITIALIZER;

void xcclResetDebugInit(void) {
  static config_value_t dbg[3]; /* under config_debug_lock; log_configure keeps no pointer into them */
  static config_notes_t notes;
  static const config_id_t ids[3] = {CFG_DEBUG, CFG_DEBUG_SUBSYS, CFG_DEBUG_FILE};
  config_load(); /* a first load later would apply its own settings over these */
  pthread_mutex_lock(&config_debug_lock);
  notes.n = 0;
  for (int k = 0; k < 3; k++) config_resolve(ids[k], &dbg[k], &notes);
  config_log_apply(&dbg[0], &dbg[1], &dbg[2]);
  notes_log(&notes);
  pthread_mutex_unlock(&config_debug_lock);
}

int64_t config_int(config_id_t id) { return config_load(), config_values[id].i; }
size_t config_size(config_id_t id) { return config_load(), (size_t)config_values[id].i; }
double config_double(config_id_t id) { return config_load(), config_values[id].d; }
int config_bool(config_id_t id) { return config_load(), config_values[id].i != 0; }
const char *config_str(config_id_t id) { return config_load(), config_values[id].s ? config_values[id].s : ""; }
int config_is_set(config_id_t id) { return config_load(), config_values[id].set; }
const char *config_source(config_id_t id) {
  return config_load(), config_values[id].valid ? config_values[id].from : "default";
}

void config_override(config_id_t id, int64_t value, const char *from) {
  config_load();
  config_value_t *v = &config_values[id];
  v->i = value;
  v->d = (double)value;
  v->set = v->valid = 1;
  v->alias = -1;
  snprintf(v->from, sizeof(v->from), "%s", from);
}

const char *config_foreign_env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* Values that carry the job's secret are never printed. */
static int config_hidden(int id) { return id == CFG_SECRET || id == CFG_UNIQUE_ID; }

void config_print(FILE *out) {
  static const char *tname[] = {"int", "size", "double", "bool", "string"};
  config_load();
  fprintf(out, "%-22s %-7s %-7s %-10s %-12s %-20s %s\n", "VARIABLE", "TYPE", "SCOPE", "DEFAULT", "VALUE", "FROM",
          "DESCRIPTION");
  for (int id = 0; id < CFG_COUNT; id++) {
    const config_entry_t *e = &config_table[id];
    char var[96];
    snprintf(var, sizeof(var), "XCCL_%s", e->name);
    const char *val = !config_values[id].valid ? "(default)" : config_hidden(id) ? "(set, hidden)" : config_values[id].s;
    fprintf(out, "%-22s %-7s %-7s %-10s %-12s %-20s %s\n", var, tname[e->type], e->shared >= 0 ? "shared" : "-",
            *e->def ? e->def : "\"\"", val, config_source((config_id_t)id), e->desc);
  }
  fprintf(out, "\nshared: every rank of a communicator must use the same value; init compares them and fails,\n"
               "naming the first that differs, the ranks and their values.\n");
  fprintf(out, "\nNCCL aliases: read when the XCCL variable is unset (XCCL wins when both are set):\n");
  for (int k = 0; k < config_alias_count; k++) {
    const config_alias_t *a = &config_aliases[k];
    char names[96], var[96];
    snprintf(names, sizeof(names), "%s%s%s", a->names[0], a->names[1] ? " x " : "", a->names[1] ? a->names[1] : "");
    snprintf(var, sizeof(var), "XCCL_%s", config_table[a->id].name);
    fprintf(out, "  %-44s %-26s %s\n", names, var, a->how);
  }
  int n = 0;
  for (char **ep = environ; ep && *ep; ep++) {
    char name[96];
    env_name(*ep, name, sizeof(name));
    if (strncmp(name, "NCCL_", 5) != 0 || config_alias_known(name)) continue;
    if (!n++) fprintf(out, "\nNCCL variables set that xccl ignores (no xccl meaning):\n");
    fprintf(out, "  %s\n", name);
  }
}

void config_reset_for_test(void) {
  memset(config_values, 0, sizeof(config_values));
  config_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}
