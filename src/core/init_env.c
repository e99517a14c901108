/*
 * init_env.c — xcclCommInitFromEnv: rank, size and rendezvous from the
 * environment that xccl-run, torchrun, Open MPI, Slurm or PMI set.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "config.h"
#include "log.h"

static int parse_nonneg(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < 0 || v > BS_MAX_RANKS) return -1;
  *out = (int)v;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Launchers' rank/size variables, in the order they are tried. */
static const struct {
  const char *who, *rank, *size;
} launchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    {"PMI", "PMI_RANK", "PMI_SIZE"},
};

static xcclResult_t env_rank_size(int *rank_p, int *nranks_p, const char **who_p) {
  if (config_int(CFG_RANK) >= 0 || config_int(CFG_NRANKS) >= 0) {
    if (config_int(CFG_RANK) < 0 || config_int(CFG_NRANKS) < 1)
      return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: set both XCCL_RANK and XCCL_NRANKS (>= 1)");
    *rank_p = (int)config_int(CFG_RANK);
    *nranks_p = (int)config_int(CFG_NRANKS);
    *who_p = "XCCL_RANK/XCCL_NRANKS";
    return xcclSuccess;
  }
  for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
    const char *r = config_foreign_env(launchers[i].rank), *n = config_foreign_env(launchers[i].size);
    if (!r && !n) continue;
    if (!r || !n || parse_nonneg(r, rank_p) || parse_nonneg(n, nranks_p) || *nranks_p < 1)
      return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: %s variables %s=%s %s=%s are incomplete or not numbers",
                     launchers[i].who, launchers[i].rank, r ? r : "(unset)", launchers[i].size, n ? n : "(unset)");
    *who_p = launchers[i].who;
    return xcclSuccess;
  }
  return err_set(xcclInvalidUsage, LOG_INIT,
                 "xcclCommInitFromEnv: no rank in the environment; set XCCL_RANK, XCCL_NRANKS and XCCL_ROOT (or "
                 "XCCL_UNIQUE_ID), start under xccl-run, or under torchrun, mpirun, srun or a PMI launcher");
}

/* The id for a job started from a root address instead of xcclGetUniqueId. */
static xcclResult_t env_root_id(int rank, bs_id_t *id) {
  char text[300];
  const char *root = config_str(CFG_ROOT);
  if (!*root) {
    const char *addr = config_foreign_env("MASTER_ADDR"), *port = config_foreign_env("MASTER_PORT");
    if (!addr || !port)
      return err_set(xcclInvalidUsage, LOG_INIT,
                     "xcclCommInitFromEnv: no rendezvous address; set XCCL_ROOT=host:port (or MASTER_ADDR and "
                     "MASTER_PORT), or XCCL_UNIQUE_ID");
    snprintf(text, sizeof(text), strchr(addr, ':') ? "[%s]:%s" : "%s:%s", addr, port);
    root = text;
  }
  memset(id, 0, sizeof(*id));
  TRY(sock_addr_parse(root, &id->root));
  const char *secret = config_str(CFG_SECRET);
  if (!*secret && rank == 0)
    WARN(INIT, "bootstrap at %s without XCCL_SECRET: messages are still checked, but anyone who can reach that port "
               "can join; set the same XCCL_SECRET on every rank to authenticate them", root);
  char material[600];
  snprintf(material, sizeof(material), "%s|%s", secret, root);
  bs_derive_secret(material, id->secret);
  uint8_t job[BS_SECRET_BYTES];
  snprintf(material, sizeof(material), "job|%s|%s", secret, root);
  bs_derive_secret(material, job);
  memcpy(&id->job, job, sizeof(id->job));
  if (rank == 0) TRY(bootstrap_root_start(id, config_double(CFG_TIMEOUT)));
  return xcclSuccess;
}

xcclResult_t xcclCommInitFromEnv(xcclComm_t *comm) {
  config_load();
  if (!comm) return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitFromEnv: comm is NULL");
  int rank = -1, nranks = 0;
  const char *who = NULL;
  TRY(env_rank_size(&rank, &nranks, &who));
  if (rank >= nranks)
    return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: rank %d from %s is not below the size %d", rank,
                   who, nranks);
  bs_id_t id;
  const char *hex = config_str(CFG_UNIQUE_ID);
  if (*hex) {
    xcclUniqueId uid;
    if (strlen(hex) != 2 * XCCL_UNIQUE_ID_BYTES)
      return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_UNIQUE_ID has %zu characters, expected %d hex digits",
                     strlen(hex), 2 * XCCL_UNIQUE_ID_BYTES);
    for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++) {
      int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
      if (hi < 0 || lo < 0)
        return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_UNIQUE_ID has a non-hex character at position %d", 2 * i);
      uid.internal[i] = (char)(hi << 4 | lo);
    }
    char why[256];
    if (bs_id_decode(&uid, &id, why, sizeof(why)) != 0)
      return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_UNIQUE_ID: %s", why);
  } else {
    TRY(env_root_id(rank, &id));
  }
  INFO(INIT, "xcclCommInitFromEnv: rank %d of %d from %s", rank, nranks, who);
  return comm_init(comm, nranks, &id, rank);
}
