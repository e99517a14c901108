/* net_ib_hca.c — the XCCL_IB_HCA device filter (see net_ib_hca.h). */
#include "net_ib_hca.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ib_hca_parse(const char *spec, ib_hca_filter_t *f, char *why, size_t whylen) {
  ib_hca_filter_t t;
  memset(&t, 0, sizeof(t));
  const char *p = spec ? spec : "";
  while (*p == ' ') p++;
  if (*p == '^') t.exclude = 1, p++;
  if (*p == '=') t.exact = 1, p++;
  while (*p) {
    if (*p == ',' || *p == ' ') { /* empty entries and spaces between them */
      p++;
      continue;
    }
    size_t len = strcspn(p, ",");
    if (t.n == IB_HCA_MAX) return snprintf(why, whylen, "more than %d entries", IB_HCA_MAX), -1;
    const char *colon = memchr(p, ':', len);
    size_t nlen = colon ? (size_t)(colon - p) : len;
    while (nlen > 0 && p[nlen - 1] == ' ') nlen--;
    if (nlen == 0) return snprintf(why, whylen, "an entry has no device name"), -1;
    if (nlen >= sizeof(t.e[0].name)) return snprintf(why, whylen, "device name '%.*s' too long", (int)nlen, p), -1;
    memcpy(t.e[t.n].name, p, nlen);
    t.e[t.n].name[nlen] = 0;
    if (colon) {
      char num[16] = "";
      size_t plen = len - (size_t)(colon + 1 - p);
      if (plen == 0 || plen >= sizeof(num))
        return snprintf(why, whylen, "'%.*s': the port after ':' is missing or too long", (int)len, p), -1;
      memcpy(num, colon + 1, plen);
      char *end;
      long port = strtol(num, &end, 10);
      if (*end != 0 || port < 1 || port > 255)
        return snprintf(why, whylen, "'%.*s': port '%s' is not a number from 1 to 255", (int)len, p, num), -1;
      t.e[t.n].port = (int)port;
    }
    t.n++;
    p += len;
  }
  *f = t;
  return 0;
}

int ib_hca_match(const ib_hca_filter_t *f, const char *dev, int port) {
  if (f->n == 0) return 1;
  int hit = 0;
  for (int i = 0; i < f->n && !hit; i++) {
    const char *name = f->e[i].name;
    int name_ok = f->exact ? strcmp(dev, name) == 0 : strncmp(dev, name, strlen(name)) == 0;
    hit = name_ok && (f->e[i].port == 0 || f->e[i].port == port);
  }
  return f->exclude ? !hit : hit;
}

int ib_speed_mbps(int width_code, unsigned speed_code) {
  int lanes;
  switch (width_code) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: return 0;
  }
  int rate; /* Mb/s per lane */
  switch (speed_code) {
    case 1: rate = 2500; break;     /* SDR */
    case 2: rate = 5000; break;     /* DDR */
    case 4: rate = 10000; break;    /* QDR */
    case 8: rate = 10000; break;    /* FDR10 */
    case 16: rate = 14000; break;   /* FDR */
    case 32: rate = 25000; break;   /* EDR */
    case 64: rate = 50000; break;   /* HDR */
    case 128: rate = 100000; break; /* NDR */
    case 256: rate = 200000; break; /* XDR (active_speed_ex only) */
    default: return 0;
  }
  return lanes * rate;
}

int ib_rate_text_mbps(const char *text) {
  if (!text) return 0;
  char *end;
  double gbps = strtod(text, &end);
  if (end == text || gbps <= 0 || gbps > 1e6) return 0;
  while (*end == ' ') end++;
  if (strncmp(end, "Gb/sec", 6) != 0) return 0;
  return (int)(gbps * 1000 + 0.5);
}

int ib_addr_range_parse(const char *spec, ib_addr_range_t *r, char *why, size_t whylen) {
  ib_addr_range_t out = {0};
  if (!spec || !*spec) {
    *r = out;
    return 0;
  }
  char text[80];
  const char *slash = strchr(spec, '/');
  size_t n = slash ? (size_t)(slash - spec) : strlen(spec);
  if (n == 0 || n >= sizeof(text)) {
    snprintf(why, whylen, "'%s' is not an address range: write it as ADDRESS/BITS (10.0.0.0/8, fd00::/8)", spec);
    return -1;
  }
  memcpy(text, spec, n);
  text[n] = '\0';
  if (inet_pton(AF_INET, text, out.addr) == 1)
    out.family = AF_INET;
  else if (inet_pton(AF_INET6, text, out.addr) == 1)
    out.family = AF_INET6;
  else {
    snprintf(why, whylen, "'%s' is neither an IPv4 nor an IPv6 address", text);
    return -1;
  }
  int max = out.family == AF_INET ? 32 : 128;
  out.prefix = max;
  if (slash) {
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    if (end == slash + 1 || *end || bits < 0 || bits > max) {
      snprintf(why, whylen, "'%s': the prefix length must be 0 to %d", spec, max);
      return -1;
    }
    out.prefix = (int)bits;
  }
  *r = out;
  return 0;
}

int ib_addr_range_has(const ib_addr_range_t *r, int family, const uint8_t *addr) {
  if (!r->family) return 1;
  if (family != r->family) return 0;
  int whole = r->prefix / 8, rest = r->prefix % 8;
  if (memcmp(addr, r->addr, (size_t)whole) != 0) return 0;
  if (!rest) return 1;
  uint8_t mask = (uint8_t)(0xff << (8 - rest));
  return (addr[whole] & mask) == (r->addr[whole] & mask);
}

int ib_addr_family_parse(const char *spec, int *family, char *why, size_t whylen) {
  if (!spec || !*spec)
    *family = 0;
  else if (!strcasecmp(spec, "AF_INET") || !strcmp(spec, "4"))
    *family = AF_INET;
  else if (!strcasecmp(spec, "AF_INET6") || !strcmp(spec, "6"))
    *family = AF_INET6;
  else {
    snprintf(why, whylen, "'%s' is not an address family: AF_INET or AF_INET6", spec);
    return -1;
  }
  return 0;
}
