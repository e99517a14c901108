/*
 * fuzz_unique_id.c — libFuzzer target for the rendezvous a rank reads from
 * its environment: XCCL_UNIQUE_ID (hex), XCCL_ROOT (host:port, [v6]:port),
 * MASTER_ADDR/MASTER_PORT and the launchers' RANK/WORLD_SIZE, all through
 * the real xcclCommInitFromEnv (src/core/init_env.c).
 *
 * Nothing here joins a job: comm_init and bootstrap_root_start are replaced
 * by stubs that record the id they were given, and getaddrinfo is wrapped at
 * link time (-Wl,--wrap=getaddrinfo) to numeric hosts only, so that no input
 * waits on DNS. The oracle: xcclCommInitFromEnv reaches comm_init exactly
 * when the text is a valid id or address (judged independently below), with
 * that id or address, and otherwise fails with a message.
 *
 * Input: byte 0 picks a mode, the rest is the text (cut at the first NUL):
 *   0  XCCL_UNIQUE_ID = text
 *   1  binary id (byte 1: bit 0 repair the checksum, bit 1 upper-case hex)
 *      written as hex into XCCL_UNIQUE_ID
 *   2  XCCL_ROOT = text; byte 1 picks rank 0 (starts the root) or 1, and
 *      whether XCCL_SECRET is set
 *   3  "RANK\nWORLD_SIZE\nMASTER_ADDR\nMASTER_PORT": a torchrun-style launch
 */
#include <netdb.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "comm.h"
#include "config.h"
#include "error.h"
#include "sock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- Link-time stand-ins ---- */

int __real_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res);
int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res);

int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
  struct addrinfo h;
  memset(&h, 0, sizeof(h));
  if (hints) h = *hints;
  h.ai_flags |= AI_NUMERICHOST;
  return __real_getaddrinfo(node, service, &h, res);
}

static struct {
  int root_started, comm_inits;
  bs_id_t id;
  int rank, nranks;
} seen;

xcclResult_t bootstrap_root_start(bs_id_t *id, double timeout_s) {
  seen.root_started++;
  seen.id = *id;
  return xcclSuccess;
}

xcclResult_t comm_init(xcclComm_t *comm_p, int nranks, const bs_id_t *id, int rank) {
  seen.comm_inits++;
  if (seen.root_started && memcmp(&seen.id, id, sizeof(*id)) != 0) abort(); /* root and rank disagree */
  seen.id = *id;
  seen.rank = rank;
  seen.nranks = nranks;
  *comm_p = NULL;
  return xcclSuccess;
}

/* ---- The environment, in buffers this file owns (putenv keeps them) ---- */

#define TEXT_MAX 1024

typedef struct {
  const char *name;
  char buf[TEXT_MAX + 32];
} env_var_t;

static env_var_t vars[] = {{"XCCL_UNIQUE_ID", ""}, {"XCCL_ROOT", ""},   {"XCCL_SECRET", ""},
                           {"XCCL_RANK", ""},      {"XCCL_NRANKS", ""}, {"RANK", ""},
                           {"WORLD_SIZE", ""},     {"MASTER_ADDR", ""}, {"MASTER_PORT", ""}};
enum { V_UID, V_ROOT, V_SECRET, V_RANK, V_NRANKS, V_TRANK, V_TSIZE, V_MADDR, V_MPORT, V_COUNT };

static void env_put(int v, const char *value, size_t len) {
  if (len > TEXT_MAX) len = TEXT_MAX;
  snprintf(vars[v].buf, sizeof(vars[v].buf), "%s=%.*s", vars[v].name, (int)len, value);
  putenv(vars[v].buf);
}

static void env_clear_all(void) {
  for (int v = 0; v < V_COUNT; v++) unsetenv(vars[v].name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  static const char *foreign[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                                  "PMI_RANK", "PMI_SIZE", "XCCL_DEBUG_FILE", "XCCL_TIMEOUT"};
  for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) unsetenv(foreign[i]);
  setenv("XCCL_DEBUG", "NONE", 1);
  return 0;
}

/* ---- Independent judges ---- */

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = (char)(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 1 and *id when text is 256 hex digits of an id bs_id_decode accepts. */
static int judge_hex_id(const char *text, bs_id_t *id) {
  xcclUniqueId uid;
  if (strlen(text) != 2 * XCCL_UNIQUE_ID_BYTES) return 0;
  for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++) {
    int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return 0;
    uid.internal[i] = (char)(hi << 4 | lo);
  }
  char why[256];
  return bs_id_decode(&uid, id, why, sizeof(why)) == 0;
}

/* Runs xcclCommInitFromEnv on the environment set up by the caller and checks
 * it against the expectation: want_init (and, when given, that address). */
static void run_and_judge(int want_init, const sock_addr_t *want_root, const bs_id_t *want_id, int want_rank) {
  memset(&seen, 0, sizeof(seen));
  config_reset_for_test();
  err_clear();
  xcclComm_t comm = NULL;
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  if (!want_init) {
    if (r == xcclSuccess || seen.comm_inits || !err_last()[0]) abort();
    return;
  }
  if (r != xcclSuccess || seen.comm_inits != 1 || seen.rank != want_rank) abort();
  if (want_root && memcmp(&seen.id.root, want_root, sizeof(*want_root)) != 0) abort();
  if (want_id && memcmp(&seen.id, want_id, sizeof(*want_id)) != 0) abort();
  if (seen.root_started != (want_root && want_rank == 0)) abort();
}

static void mode_hex(const char *text, size_t len) {
  env_put(V_UID, text, len);
  env_put(V_RANK, "1", 1);
  env_put(V_NRANKS, "2", 1);
  bs_id_t id;
  int ok = len <= TEXT_MAX && judge_hex_id(text, &id);
  run_and_judge(ok, NULL, ok ? &id : NULL, 1);
}

static void mode_binary(const uint8_t *d, size_t n) {
  if (n < 1) return;
  xcclUniqueId uid;
  memset(&uid, 0, sizeof(uid));
  memcpy(uid.internal, d + 1, n - 1 < sizeof(uid.internal) ? n - 1 : sizeof(uid.internal));
  if (d[0] & 1) {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    SHA256((const uint8_t *)uid.internal, 120, digest);
    memcpy(uid.internal + 120, digest, 8);
  }
  char hex[2 * XCCL_UNIQUE_ID_BYTES + 1];
  for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++)
    snprintf(hex + 2 * i, 3, (d[0] & 2) ? "%02X" : "%02x", (unsigned char)uid.internal[i]);
  bs_id_t id;
  char why[256];
  int ok = bs_id_decode(&uid, &id, why, sizeof(why)) == 0;
  env_put(V_UID, hex, strlen(hex));
  env_put(V_RANK, "1", 1);
  env_put(V_NRANKS, "2", 1);
  run_and_judge(ok, NULL, ok ? &id : NULL, 1);
}

static void mode_root(const uint8_t *d, size_t n) {
  if (n < 1) return;
  const char *text = (const char *)d + 1;
  size_t len = strnlen(text, n - 1);
  if (len > TEXT_MAX) return;
  char copy[TEXT_MAX + 1];
  memcpy(copy, text, len);
  copy[len] = '\0';
  int rank = d[0] & 1;
  env_put(V_ROOT, copy, len);
  env_put(V_RANK, rank ? "1" : "0", 1);
  env_put(V_NRANKS, "2", 1);
  if (d[0] & 2) env_put(V_SECRET, "fuzz secret", 11);
  sock_addr_t want;
  int ok = *copy && sock_addr_parse(copy, &want) == xcclSuccess;
  err_clear();
  run_and_judge(ok, ok ? &want : NULL, NULL, rank);
}

/* Splits text at newlines into at most 4 fields. */
static int split4(char *text, char *field[4]) {
  int k = 0;
  field[k++] = text;
  for (char *c = text; *c && k < 4; c++)
    if (*c == '\n') *c = '\0', field[k++] = c + 1;
  return k;
}

/* What strtol(s, &end, 10) with *end == 0 accepts (leading blanks and one
 * sign included), in 0..BS_MAX_RANKS. */
static int judge_nonneg(const char *s, int *out) {
  while (*s == ' ' || *s == '\t' || *s == '\v' || *s == '\f' || *s == '\r') s++;
  int neg = *s == '-';
  if (*s == '-' || *s == '+') s++;
  if (!*s) return 0;
  long v = 0;
  for (const char *c = s; *c; c++) {
    if (*c < '0' || *c > '9') return 0;
    if (v <= BS_MAX_RANKS) v = v * 10 + (*c - '0');
  }
  if (neg) v = -v;
  if (v < 0 || v > BS_MAX_RANKS) return 0;
  *out = (int)v;
  return 1;
}

static void mode_launcher(const char *text, size_t len) {
  char copy[TEXT_MAX + 1], *f[4] = {"", "", "", ""};
  if (len > TEXT_MAX) return;
  memcpy(copy, text, len);
  copy[len] = '\0';
  split4(copy, f);
  int set[4];
  for (int i = 0; i < 4; i++) {
    set[i] = f[i][0] != '\0';
    if (set[i]) env_put(V_TRANK + i, f[i], strlen(f[i]));
  }
  /* torchrun's variables: both or neither, decimal, size >= 1, rank < size. */
  int rank = 0, size = 0, ok = 1;
  if (!set[0] && !set[1]) ok = 0; /* no launcher at all */
  else ok = judge_nonneg(f[0], &rank) && judge_nonneg(f[1], &size) && size >= 1 && rank < size;
  sock_addr_t want;
  if (ok) {
    char root[TEXT_MAX * 2 + 8];
    if (!set[2] || !set[3] || strlen(f[2]) + strlen(f[3]) + 3 >= 300) {
      ok = 0; /* longer ones are cut to 300 bytes: no verdict of ours to compare */
      if (set[2] && set[3]) return;
    } else {
      snprintf(root, sizeof(root), strchr(f[2], ':') ? "[%s]:%s" : "%s:%s", f[2], f[3]);
      ok = sock_addr_parse(root, &want) == xcclSuccess;
    }
  }
  err_clear();
  run_and_judge(ok, ok ? &want : NULL, NULL, rank);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > TEXT_MAX + 2) return 0;
  char text[TEXT_MAX + 2];
  size_t n = size - 1;
  memcpy(text, data + 1, n);
  text[n] = '\0';
  size_t len = strlen(text);
  err_quiet(1);
  env_clear_all();
  switch (data[0] % 4) {
    case 0: mode_hex(text, len); break;
    case 1: mode_binary(data + 1, n); break;
    case 2: mode_root(data + 1, n); break;
    case 3: mode_launcher(text, len); break;
  }
  env_clear_all();
  err_quiet(0);
  return 0;
}
