/*
 * shim_param.c — NCCL 2.32's parameter API (ncclParam*) over xccl's one
 * configuration table (src/base/config.h).
 *
 * A key is a setting's name: XCCL_X (or X alone) names the table's entry
 * X; NCCL_Y names the entry NCCL_Y is an alias of (config_aliases: the
 * value is xccl's, as the alias set it or as XCCL_X overrode it). An NCCL
 * name that xccl gives no meaning is refused with ncclInvalidArgument and a
 * WARN naming the nearest xccl setting. Values are those the table holds
 * for this process: the environment is read once, so there is nothing to
 * set; NCCL 2.32's header has no setter either.
 *
 * A handle is a pointer into a static array, one per table entry: it never
 * needs freeing and stays valid for the life of the process. Strings handed
 * out live in thread-local storage until the next call of the same kind on
 * the same thread, as NCCL promises.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "nccl_232.h"

struct ncclParamHandle {
  config_id_t id;
};

static struct ncclParamHandle handles[CFG_COUNT];
static pthread_once_t handles_once = PTHREAD_ONCE_INIT;

static void handles_fill(void) {
  for (int i = 0; i < CFG_COUNT; i++) handles[i].id = (config_id_t)i;
}

/* The settings whose value is the job's secret: bound and listed, never read. */
static int param_secret(config_id_t id) { return id == CFG_SECRET || id == CFG_UNIQUE_ID; }

static int table_find(const char *name) {
  for (int i = 0; i < CFG_COUNT; i++)
    if (strcmp(config_table[i].name, name) == 0) return i;
  return -1;
}

/* The table entry key names, or -1 with the reason recorded (a WARN). */
static int param_lookup(const char *fn, const char *key) {
  if (!key || !*key) {
    err_set(xcclInvalidArgument, LOG_ENV, "%s: key is %s", fn, key ? "empty" : "NULL");
    return -1;
  }
  if (strncmp(key, "NCCL_", 5) == 0) {
    for (int a = 0; a < config_alias_count; a++)
      for (int k = 0; k < 2; k++)
        if (config_aliases[a].names[k] && strcmp(key, config_aliases[a].names[k]) == 0)
          return (int)config_aliases[a].id;
    const char *near = config_nearest(key + 5);
    err_set(xcclInvalidArgument, LOG_ENV,
            "%s: %s has no meaning in xccl (it is not among the NCCL variables xccl reads; `xccl-info` lists "
            "them)%s%s",
            fn, key, near ? "; the nearest xccl setting is XCCL_" : "", near ? near : "");
    return -1;
  }
  int id = table_find(strncmp(key, "XCCL_", 5) == 0 ? key + 5 : key);
  if (id < 0) {
    const char *near = config_nearest(strncmp(key, "XCCL_", 5) == 0 ? key + 5 : key);
    err_set(xcclInvalidArgument, LOG_ENV, "%s: %s is not an xccl setting%s%s (`xccl-info` lists them)", fn, key,
            near ? "; did you mean XCCL_" : "", near ? near : "");
  }
  return id;
}

static ncclResult_t param_handle_ok(const char *fn, ncclParamHandle_t h, const void *out) {
  if (!h || h < handles || h >= handles + CFG_COUNT)
    return shim_res(err_set(xcclInvalidArgument, LOG_ENV, "%s: the handle was not made by ncclParamBind", fn));
  if (!out) return shim_res(err_set(xcclInvalidArgument, LOG_ENV, "%s: the output pointer is NULL", fn));
  if (param_secret(h->id))
    return shim_res(err_set(xcclInvalidUsage, LOG_ENV, "%s: XCCL_%s holds the job's secret and is never read back",
                            fn, config_table[h->id].name));
  return ncclSuccess;
}

ncclResult_t pncclParamBind(ncclParamHandle_t *out, const char *key) {
  if (!out) return shim_res(err_set(xcclInvalidArgument, LOG_ENV, "ncclParamBind: out is NULL"));
  int id = param_lookup("ncclParamBind", key);
  if (id < 0) return ncclInvalidArgument;
  pthread_once(&handles_once, handles_fill);
  *out = &handles[id];
  return ncclSuccess;
}

/* The value as an integer; a string setting, or a fraction, has none. */
static ncclResult_t param_integer(const char *fn, ncclParamHandle_t h, const void *out, int64_t *v_p) {
  ncclResult_t r = param_handle_ok(fn, h, out);
  if (r != ncclSuccess) return r;
  const config_entry_t *e = &config_table[h->id];
  if (e->type == CFG_T_STR)
    return shim_res(err_set(xcclInvalidUsage, LOG_ENV, "%s: XCCL_%s is a string; read it with ncclParamGetStr", fn,
                            e->name));
  if (e->type == CFG_T_DOUBLE) {
    double d = config_double(h->id);
    if (d != (double)(int64_t)d)
      return shim_res(err_set(xcclInvalidUsage, LOG_ENV,
                              "%s: XCCL_%s is %g, not a whole number; read it with ncclParamGetStr", fn, e->name, d));
    *v_p = (int64_t)d;
    return ncclSuccess;
  }
  *v_p = config_int(h->id);
  return ncclSuccess;
}

/* One typed getter: the value if it fits the type, else ncclInvalidArgument. */
#define PARAM_GET_INT(suffix, type, lo, hi)                                                                     \
  ncclResult_t pncclParamGet##suffix(ncclParamHandle_t h, type *out) {                                          \
    int64_t v = 0;                                                                                               \
    ncclResult_t r = param_integer("ncclParamGet" #suffix, h, out, &v);                                         \
    if (r != ncclSuccess) return r;                                                                              \
    if (v < (lo) || (uint64_t)v > (uint64_t)(hi))                                                                \
      return shim_res(err_set(xcclInvalidArgument, LOG_ENV,                                                     \
                              "ncclParamGet" #suffix ": XCCL_%s is %" PRId64 ", out of the range of " #type,    \
                              config_table[h->id].name, v));                                                    \
    *out = (type)v;                                                                                              \
    return ncclSuccess;                                                                                          \
  }
PARAM_GET_INT(I8, int8_t, INT8_MIN, INT8_MAX)
PARAM_GET_INT(I16, int16_t, INT16_MIN, INT16_MAX)
PARAM_GET_INT(I32, int32_t, INT32_MIN, INT32_MAX)
PARAM_GET_INT(I64, int64_t, INT64_MIN, INT64_MAX)
PARAM_GET_INT(U8, uint8_t, 0, UINT8_MAX)
PARAM_GET_INT(U16, uint16_t, 0, UINT16_MAX)
PARAM_GET_INT(U32, uint32_t, 0, UINT32_MAX)
PARAM_GET_INT(U64, uint64_t, 0, INT64_MAX)
#undef PARAM_GET_INT

/* The value as text into buf: a string as it is, a number in decimal. */
static const char *param_text(config_id_t id, char *buf, size_t len) {
  switch (config_table[id].type) {
    case CFG_T_STR:
      return config_str(id);
    case CFG_T_DOUBLE:
      snprintf(buf, len, "%.17g", config_double(id));
      return buf;
    default:
      snprintf(buf, len, "%" PRId64, config_int(id));
      return buf;
  }
}

static _Thread_local char str_buf[4096];

ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char **out) {
  ncclResult_t r = param_handle_ok("ncclParamGetStr", h, out);
  if (r != ncclSuccess) return r;
  char num[64];
  snprintf(str_buf, sizeof(str_buf), "%s", param_text(h->id, num, sizeof(num)));
  *out = str_buf;
  return ncclSuccess;
}

/* Raw bytes: an integer setting as an int64_t, a fractional one as a
 * double, a string with its terminating NUL. *len is the byte count. */
ncclResult_t pncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len) {
  ncclResult_t r = param_handle_ok("ncclParamGet", h, out);
  if (r != ncclSuccess) return r;
  if (!len) return shim_res(err_set(xcclInvalidArgument, LOG_ENV, "ncclParamGet: len is NULL"));
  const config_entry_t *e = &config_table[h->id];
  int64_t i = 0;
  double d = 0;
  const void *src;
  size_t n;
  if (e->type == CFG_T_STR) {
    src = config_str(h->id);
    n = strlen(src) + 1;
  } else if (e->type == CFG_T_DOUBLE) {
    d = config_double(h->id);
    src = &d, n = sizeof(d);
  } else {
    i = config_int(h->id);
    src = &i, n = sizeof(i);
  }
  if (maxLen < 0 || (size_t)maxLen < n)
    return shim_res(err_set(xcclInvalidArgument, LOG_ENV, "ncclParamGet: XCCL_%s needs %zu bytes, maxLen is %d",
                            e->name, n, maxLen));
  memcpy(out, src, n);
  *len = (int)n;
  return ncclSuccess;
}

static _Thread_local char value_buf[4096];

ncclResult_t pncclParamGetParameter(const char *key, const char **value, int *valueLen) {
  if (!value || !valueLen)
    return shim_res(err_set(xcclInvalidArgument, LOG_ENV, "ncclParamGetParameter: %s is NULL",
                            !value ? "value" : "valueLen"));
  int id = param_lookup("ncclParamGetParameter", key);
  if (id < 0) return ncclInvalidArgument;
  if (param_secret((config_id_t)id))
    return shim_res(err_set(xcclInvalidUsage, LOG_ENV,
                            "ncclParamGetParameter: %s holds the job's secret and is never read back", key));
  char num[64];
  snprintf(value_buf, sizeof(value_buf), "%s", param_text((config_id_t)id, num, sizeof(num)));
  *value = value_buf;
  *valueLen = (int)strlen(value_buf);
  return ncclSuccess;
}

/* Every key: XCCL_X for each entry, then each NCCL alias. Made once; the
 * table is constant for the life of the process. */
static const char **all_keys;
static int all_keys_n;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void keys_make(void) {
  int n = CFG_COUNT + 2 * config_alias_count;
  const char **t = calloc((size_t)n, sizeof(*t));
  char *names = calloc((size_t)CFG_COUNT, 64);
  if (!t || !names) {
    free(t);
    free(names);
    return;
  }
  int k = 0;
  for (int i = 0; i < CFG_COUNT; i++) {
    snprintf(names + 64 * i, 64, "XCCL_%s", config_table[i].name);
    t[k++] = names + 64 * i;
  }
  for (int a = 0; a < config_alias_count; a++)
    for (int j = 0; j < 2; j++)
      if (config_aliases[a].names[j]) t[k++] = config_aliases[a].names[j];
  all_keys = t;
  all_keys_n = k;
}

ncclResult_t pncclParamGetAllParameterKeys(const char ***table, int *tableLen) {
  if (!table || !tableLen)
    return shim_res(err_set(xcclInvalidArgument, LOG_ENV, "ncclParamGetAllParameterKeys: %s is NULL",
                            !table ? "table" : "tableLen"));
  pthread_once(&keys_once, keys_make);
  if (!all_keys)
    return shim_res(err_set(xcclSystemError, LOG_ENV, "ncclParamGetAllParameterKeys: out of memory for the keys"));
  *table = all_keys;
  *tableLen = all_keys_n;
  return ncclSuccess;
}

/* One INFO line per setting, with where its value came from. */
void pncclParamDumpAll(void) {
  for (int i = 0; i < CFG_COUNT; i++) {
    char num[64];
    config_id_t id = (config_id_t)i;
    INFO(ENV, "param XCCL_%s = %s (%s)", config_table[i].name,
         param_secret(id) ? (config_is_set(id) ? "(set, hidden)" : "\"\"") : param_text(id, num, sizeof(num)),
         config_source(id));
  }
}

XCCL_NCCL_ALIAS(ncclParamBind);
XCCL_NCCL_ALIAS(ncclParamGetI8);
XCCL_NCCL_ALIAS(ncclParamGetI16);
XCCL_NCCL_ALIAS(ncclParamGetI32);
XCCL_NCCL_ALIAS(ncclParamGetI64);
XCCL_NCCL_ALIAS(ncclParamGetU8);
XCCL_NCCL_ALIAS(ncclParamGetU16);
XCCL_NCCL_ALIAS(ncclParamGetU32);
XCCL_NCCL_ALIAS(ncclParamGetU64);
XCCL_NCCL_ALIAS(ncclParamGetStr);
XCCL_NCCL_ALIAS(ncclParamGet);
XCCL_NCCL_ALIAS(ncclParamGetParameter);
XCCL_NCCL_ALIAS(ncclParamGetAllParameterKeys);
XCCL_NCCL_ALIAS(ncclParamDumpAll);
