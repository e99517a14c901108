/*
 * config_shared.c — the settings every rank must share (the S entries of
 * config.h) in the compact form that init all-gathers, and their comparison.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

_Static_assert(CFG_SHARED_COUNT <= CONFIG_SHARED_MAX, "more S entries in config.h than config_shared_t holds");
_Static_assert(CONFIG_SHARED_MAX <= 32, "config_shared_t's bit masks are 32 bits");

/* The S entries in table order: shared_ids[k] has shared index k. */
static const config_id_t shared_ids[CFG_SHARED_COUNT] = {
#define XCCL_CFG_OWN(name, type, def, lo, hi, desc)
#define XCCL_CFG_SHARED(name, type, def, lo, hi, desc) CFG_##name,
    XCCL_CONFIG_TABLE(XCCL_CFG_OWN, XCCL_CFG_SHARED)
#undef XCCL_CFG_OWN
#undef XCCL_CFG_SHARED
};

static uint64_t hash_folded(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (uint8_t)tolower((unsigned char)*s)) * 1099511628211ull;
  return h;
}

void config_shared_pack(config_shared_t *out) {
  config_load();
  memset(out, 0, sizeof(*out));
  size_t used = 0;
  for (int k = 0; k < CFG_SHARED_COUNT; k++) {
    config_id_t id = shared_ids[k];
    if (config_is_set(id)) out->set |= 1u << k;
    switch (config_table[id].type) {
      case CFG_T_STR: {
        const char *s = config_str(id);
        size_t n = strlen(s) + 1;
        out->value[k] = hash_folded(s);
        if (n <= sizeof(out->text) - used) {
          memcpy(out->text + used, s, n);
          used += n;
          out->shown |= 1u << k;
        }
        break;
      }
      case CFG_T_DOUBLE: {
        double d = config_double(id);
        memcpy(&out->value[k], &d, sizeof(d));
        break;
      }
      default: out->value[k] = (uint64_t)config_int(id); break;
    }
  }
}

/* The text of S entry k in s, or NULL when it is not shown. A peer's text
 * may lack its NUL: the walk stops at the end of text[]. */
static const char *shared_text(const config_shared_t *s, int k, size_t *len_p) {
  if (!(s->shown >> k & 1)) return NULL;
  size_t off = 0;
  for (int j = 0; j <= k; j++) {
    if (!(s->shown >> j & 1)) continue;
    const char *start = s->text + off;
    size_t n = off < sizeof(s->text) ? strnlen(start, sizeof(s->text) - off) : 0;
    if (off + n >= sizeof(s->text)) return NULL;
    if (j == k) return *len_p = n, start;
    off += n + 1;
  }
  return NULL;
}

static int shared_equal(const config_shared_t *a, const config_shared_t *b, int k) {
  if (a->value[k] != b->value[k]) return 0;
  size_t la = 0, lb = 0;
  const char *ta = shared_text(a, k, &la), *tb = shared_text(b, k, &lb);
  /* Equal hashes; where both texts travelled, they decide. */
  return !ta || !tb || (la == lb && strncasecmp(ta, tb, la) == 0);
}

config_id_t config_shared_diff(const config_shared_t *a, const config_shared_t *b) {
  for (int k = 0; k < CFG_SHARED_COUNT; k++)
    if (!shared_equal(a, b, k)) return shared_ids[k];
  return CFG_COUNT;
}

const char *config_shared_show(const config_shared_t *s, config_id_t id, char *buf, size_t len) {
  int k = config_table[id].shared;
  if (k < 0 || !(s->set >> k & 1)) {
    snprintf(buf, len, "(unset)");
    return buf;
  }
  size_t n = 0;
  const char *t;
  switch (config_table[id].type) {
    case CFG_T_STR:
      t = shared_text(s, k, &n);
      if (t)
        snprintf(buf, len, "%.*s", (int)n, t);
      else
        snprintf(buf, len, "(a value too long to show)");
      break;
    case CFG_T_DOUBLE: {
      double d;
      memcpy(&d, &s->value[k], sizeof(d));
      snprintf(buf, len, "%g", d);
      break;
    }
    default: snprintf(buf, len, "%lld", (long long)(int64_t)s->value[k]); break;
  }
  return buf;
}
