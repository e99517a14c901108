/*
 * init_env.c — xcclCommInitFromEnv: rank, size and rendezvous from the
 * environment that xccl-run, torchrun, Open MPI, Slurm or PMI set.
 *
 * The order (include/xccl.h says it for users): XCCL_* variables first, as
 * given; then the launchers, each with the rendezvous it really offers
 * (launch.h): torchrun's agent store or MASTER_ADDR:MASTER_PORT, PMIx
 * (mpirun, srun --mpi=pmix), Slurm's step node list; then the launchers'
 * rank variables with a root from MASTER_ADDR/MASTER_PORT.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "init.h"
#include "config.h"
#include "launch.h"
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
typedef enum { L_TORCHRUN, L_OPEN_MPI, L_SLURM, L_PMI, L_XCCL } launcher_t;
static const struct {
  const char *who, *rank, *size;
} launchers[] = {
    [L_TORCHRUN] = {"torchrun", "RANK", "WORLD_SIZE"},
    [L_OPEN_MPI] = {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    [L_SLURM] = {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    [L_PMI] = {"PMI", "PMI_RANK", "PMI_SIZE"},
};

/* Every call of xcclCommInitFromEnv in this process, numbered (launch.h). */
static atomic_uint from_env_calls;

static xcclResult_t env_rank_size(int *rank_p, int *nranks_p, launcher_t *who_p) {
  if (config_int(CFG_RANK) >= 0 || config_int(CFG_NRANKS) >= 0) {
    if (config_int(CFG_RANK) < 0 || config_int(CFG_NRANKS) < 1)
      return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: set both XCCL_RANK and XCCL_NRANKS (>= 1)");
    *rank_p = (int)config_int(CFG_RANK);
    *nranks_p = (int)config_int(CFG_NRANKS);
    *who_p = L_XCCL;
    return xcclSuccess;
  }
  for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
    const char *r = config_foreign_env(launchers[i].rank), *n = config_foreign_env(launchers[i].size);
    if (!r && !n) continue;
    if (!r || !n || parse_nonneg(r, rank_p) || parse_nonneg(n, nranks_p) || *nranks_p < 1)
      return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: %s variables %s=%s %s=%s are incomplete or not numbers",
                     launchers[i].who, launchers[i].rank, r ? r : "(unset)", launchers[i].size, n ? n : "(unset)");
    *who_p = (launcher_t)i;
    return xcclSuccess;
  }
  if (launch_pmix_present()) {
    const char *why = launch_pmix_unavailable();
    return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: no rank in the environment but a PMIx server's: %s",
                   why ? why : "PMIx was not tried");
  }
  return err_set(xcclInvalidUsage, LOG_INIT,
                 "xcclCommInitFromEnv: no rank in the environment; set XCCL_RANK, XCCL_NRANKS and XCCL_ROOT (or "
                 "XCCL_UNIQUE_ID), start under xccl-run, or under torchrun, mpirun, srun or a PMI launcher");
}

void launch_id_derive(const char *secret, const char *text, const sock_addr_t *root, bs_id_t *id) {
  memset(id, 0, sizeof(*id));
  id->root = *root;
  char material[900];
  snprintf(material, sizeof(material), "%s|%s", secret, text);
  bs_derive_secret(material, id->secret);
  uint8_t job[BS_SECRET_BYTES];
  snprintf(material, sizeof(material), "job|%s|%s", secret, text);
  bs_derive_secret(material, job);
  memcpy(&id->job, job, sizeof(id->job));
}

/* The id for a job started from a root address instead of xcclGetUniqueId:
 * XCCL_ROOT, else MASTER_ADDR:MASTER_PORT. */
static xcclResult_t env_root_id(int rank, bs_id_t *id, char *how, size_t howlen, const char *pmix_why) {
  char text[300];
  const char *root = config_str(CFG_ROOT), *from = "XCCL_ROOT";
  if (!*root) {
    const char *addr = config_foreign_env("MASTER_ADDR"), *port = config_foreign_env("MASTER_PORT");
    if (!addr || !port)
      return err_set(xcclInvalidUsage, LOG_INIT,
                     "xcclCommInitFromEnv: no rendezvous address; set XCCL_ROOT=host:port (or MASTER_ADDR and "
                     "MASTER_PORT), or XCCL_UNIQUE_ID%s%s", pmix_why ? ". PMIx was not used: " : "",
                     pmix_why ? pmix_why : "");
    snprintf(text, sizeof(text), strchr(addr, ':') ? "[%s]:%s" : "%s:%s", addr, port);
    root = text;
    from = "MASTER_ADDR:MASTER_PORT";
  }
  sock_addr_t addr;
  TRY(sock_addr_parse(root, &addr));
  const char *secret = config_str(CFG_SECRET);
  if (!*secret && rank == 0)
    WARN(INIT, "bootstrap at %s without XCCL_SECRET: messages are still checked, but anyone who can reach that port "
               "can join; set the same XCCL_SECRET on every rank to authenticate them", root);
  launch_id_derive(secret, root, &addr, id);
  if (rank == 0) TRY(bootstrap_root_start(id, config_double(CFG_TIMEOUT)));
  snprintf(how, howlen, "root at %s (%s), hosted by rank 0", root, from);
  return xcclSuccess;
}

static xcclResult_t hex_id(const char *hex, bs_id_t *id) {
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
  if (bs_id_decode(&uid, id, why, sizeof(why)) != 0)
    return err_set(xcclInvalidArgument, LOG_INIT, "XCCL_UNIQUE_ID: %s", why);
  return xcclSuccess;
}

static xcclResult_t uid_id(const xcclUniqueId *uid, bs_id_t *id) {
  char why[256];
  if (bs_id_decode(uid, id, why, sizeof(why)) != 0)
    return err_set(xcclInternalError, LOG_INIT, "xcclCommInitFromEnv: the unique id from the launcher: %s", why);
  return xcclSuccess;
}

/* torchrun: its agent store when the agent has one, else MASTER_ADDR:PORT. */
static xcclResult_t torchrun_id(int rank, int nranks, bs_id_t *id, char *how, size_t howlen) {
  const char *agent = config_foreign_env("TORCHELASTIC_USE_AGENT_STORE");
  const char *addr = config_foreign_env("MASTER_ADDR"), *port = config_foreign_env("MASTER_PORT");
  if (agent && strcmp(agent, "True") == 0 && addr && port) {
    xcclUniqueId uid;
    TRY(launch_torch_store(addr, port, rank, nranks, &uid, how, howlen));
    return uid_id(&uid, id);
  }
  return env_root_id(rank, id, how, howlen, NULL);
}

/*
 * Rank, size and id when no XCCL_* variable names the rendezvous. *who_p is
 * the launcher's name for the INFO line and messages.
 */
static xcclResult_t launcher_id(unsigned call, int *rank_p, int *nranks_p, const char **who_p, bs_id_t *id, char *how,
                                size_t howlen) {
  launcher_t l = L_XCCL;
  int rank = -1, nranks = 0;
  /* PMIx first where no torchrun is in between (torchrun under srun --mpi=pmix
   * would see one PMIx rank per agent, not per worker). */
  const char *pmix_why = NULL;
  if (!config_foreign_env("RANK") && !config_foreign_env("WORLD_SIZE") && launch_pmix_present()) {
    pmix_why = launch_pmix_unavailable();
    if (!pmix_why) {
      xcclUniqueId uid;
      TRY(launch_pmix(call, &rank, &nranks, &uid, how, howlen));
      *who_p = config_foreign_env("OMPI_COMM_WORLD_RANK") ? "Open MPI (PMIx)"
               : config_foreign_env("SLURM_PROCID")       ? "Slurm (PMIx)"
                                                          : "PMIx";
      *rank_p = rank, *nranks_p = nranks;
      return uid_id(&uid, id);
    }
  }
  TRY(env_rank_size(&rank, &nranks, &l));
  *who_p = launchers[l].who;
  *rank_p = rank, *nranks_p = nranks;
  if (rank >= nranks) return xcclSuccess; /* the caller says so */
  if (l == L_TORCHRUN) return torchrun_id(rank, nranks, id, how, howlen);
  /* Not MASTER_ADDR:MASTER_PORT under srun: a torch program there hosts its
   * own store at that port. */
  if (l == L_SLURM && config_foreign_env("SLURM_STEP_NODELIST")) return launch_slurm(call, rank, nranks, id, how, howlen);
  return env_root_id(rank, id, how, howlen, pmix_why);
}

xcclResult_t xcclCommInitFromEnv(xcclComm_t *comm) {
  config_load();
  if (!comm) return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitFromEnv: comm is NULL");
  unsigned call = atomic_fetch_add(&from_env_calls, 1);
  int rank = -1, nranks = 0;
  const char *who = NULL;
  char how[512] = "";
  bs_id_t id;
  const char *hex = config_str(CFG_UNIQUE_ID);
  if (config_int(CFG_RANK) >= 0 || config_int(CFG_NRANKS) >= 0 || *hex || *config_str(CFG_ROOT)) {
    /* XCCL_* variables first, as given: a launcher's rank variables may fill in. */
    launcher_t l = L_XCCL;
    TRY(env_rank_size(&rank, &nranks, &l));
    who = l == L_XCCL ? "XCCL_RANK/XCCL_NRANKS" : launchers[l].who;
    if (rank < nranks) {
      if (*hex) {
        TRY(hex_id(hex, &id));
        snprintf(how, sizeof(how), "XCCL_UNIQUE_ID");
      } else {
        TRY(env_root_id(rank, &id, how, sizeof(how), NULL));
      }
    }
  } else {
    TRY(launcher_id(call, &rank, &nranks, &who, &id, how, sizeof(how)));
  }
  if (rank >= nranks)
    return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: rank %d from %s is not below the size %d", rank,
                   who, nranks);
  INFO(INIT, "xcclCommInitFromEnv: rank %d of %d from %s, rendezvous: %s", rank, nranks, who, how);
  if ((id.flags & BS_ID_ROOT_AT_RANK0) && rank == 0) /* an id xcclGetUniqueId made for XCCL_ROOT */
    TRY(bootstrap_root_start(&id, config_double(CFG_TIMEOUT)));
  return comm_init(comm, nranks, &id, rank);
}
