#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

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

typedef struct {
  int64_t i;
  double d;
  const char *s; /* points into the environment or the table's default */
  int set;       /* present in the environment */
  int valid;     /* the environment's value was used */
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

int config_parse(const config_entry_t *e, const char *text, int64_t *i_p, double *d_p, char *why,
                 size_t whylen) {
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
    snprintf(why, whylen, "XCCL_%s=%s is not %s", e->name, text, kind[e->type]);
    return -1;
  }
  if (e->type != CFG_T_BOOL && (d < e->min || d > e->max)) {
    snprintf(why, whylen, "XCCL_%s=%s is outside [%g, %g]", e->name, text, e->min, e->max);
    return -1;
  }
  *i_p = i;
  *d_p = d;
  return 0;
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

static void config_warn(const char *fmt, const char *a, const char *b) {
  if (log_enabled_configured(LOG_WARN, LOG_ENV)) log_write(LOG_WARN, LOG_ENV, __FILE__, __LINE__, fmt, a, b);
}

static void config_read(void) {
  char why[CFG_COUNT][256];
  int bad[CFG_COUNT] = {0};
  for (int id = 0; id < CFG_COUNT; id++) {
    const config_entry_t *e = &config_table[id];
    config_value_t *v = &config_values[id];
    char var[96];
    snprintf(var, sizeof(var), "XCCL_%s", e->name);
    const char *env = getenv(var);
    v->set = env != NULL;
    config_parse(e, e->def, &v->i, &v->d, why[id], sizeof(why[id]));
    v->s = e->def;
    if (env && config_parse(e, env, &v->i, &v->d, why[id], sizeof(why[id])) == 0) {
      v->s = env;
      v->valid = 1;
    } else if (env) {
      bad[id] = 1;
    }
  }
  log_configure(config_values[CFG_DEBUG].s, config_values[CFG_DEBUG_SUBSYS].s,
                config_values[CFG_DEBUG_FILE].s);
  for (int id = 0; id < CFG_COUNT; id++)
    if (bad[id]) config_warn("%s; using the default %s", why[id], config_table[id].def);
  for (char **ep = environ; ep && *ep; ep++) {
    if (strncmp(*ep, "XCCL_", 5) != 0) continue;
    char name[96];
    size_t n = strcspn(*ep + 5, "=");
    if (n >= sizeof(name)) n = sizeof(name) - 1;
    memcpy(name, *ep + 5, n);
    name[n] = '\0';
    int known = 0;
    for (int id = 0; id < CFG_COUNT && !known; id++) known = strcmp(name, config_table[id].name) == 0;
    if (known) continue;
    const char *near = config_nearest(name);
    if (near)
      config_warn("unknown variable XCCL_%s is ignored; did you mean XCCL_%s?", name, near);
    else
      config_warn("unknown variable XCCL_%s is ignored%s; `xccl-info` lists the known ones", name, "");
  }
}

void config_load(void) { pthread_once(&config_once, config_read); }

int64_t config_int(config_id_t id) { return config_load(), config_values[id].i; }
size_t config_size(config_id_t id) { return config_load(), (size_t)config_values[id].i; }
double config_double(config_id_t id) { return config_load(), config_values[id].d; }
int config_bool(config_id_t id) { return config_load(), config_values[id].i != 0; }
const char *config_str(config_id_t id) { return config_load(), config_values[id].s ? config_values[id].s : ""; }
int config_is_set(config_id_t id) { return config_load(), config_values[id].set; }

const char *config_foreign_env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* Values that carry the job's secret are never printed. */
static int config_hidden(int id) { return id == CFG_SECRET || id == CFG_UNIQUE_ID; }

void config_print(FILE *out) {
  static const char *tname[] = {"int", "size", "double", "bool", "string"};
  config_load();
  fprintf(out, "%-22s %-7s %-7s %-10s %-12s %s\n", "VARIABLE", "TYPE", "SCOPE", "DEFAULT", "VALUE", "DESCRIPTION");
  for (int id = 0; id < CFG_COUNT; id++) {
    const config_entry_t *e = &config_table[id];
    char var[96];
    snprintf(var, sizeof(var), "XCCL_%s", e->name);
    const char *val = !config_values[id].valid ? "(default)" : config_hidden(id) ? "(set, hidden)" : config_values[id].s;
    fprintf(out, "%-22s %-7s %-7s %-10s %-12s %s\n", var, tname[e->type], e->shared >= 0 ? "shared" : "-",
            *e->def ? e->def : "\"\"", val, e->desc);
  }
  fprintf(out, "\nshared: every rank of a communicator must use the same value; init compares them and fails,\n"
               "naming the first that differs, the ranks and their values.\n");
}

void config_reset_for_test(void) {
  memset(config_values, 0, sizeof(config_values));
  config_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}
