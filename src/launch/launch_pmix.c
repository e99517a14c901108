/*
 * launch_pmix.c — rank, size and the unique id through PMIx, which Open
 * MPI's mpirun and Slurm's srun --mpi=pmix serve to the processes they start.
 *
 * libpmix is opened at run time (dlopen of libpmix.so.2), so libxccl neither
 * links nor needs it; pmix.h, from libpmix-dev at build time, gives only the
 * types and constants. Built without pmix.h, PMIx support is compiled out and
 * launch_pmix_unavailable() says so. Only functions are taken from the
 * library: the header's PMIX_INFO_LOAD and similar macros call into it, so the
 * structures are filled here by hand.
 *
 * The exchange: PMIx_Init (rank and namespace), PMIX_JOB_SIZE of the
 * namespace, rank 0 makes a unique id and PMIx_Put's it (PMIX_GLOBAL) under
 * xccl.uid.<call>, everyone PMIx_Commit's and joins a PMIx_Fence over the
 * namespace that collects the data (PMIX_TIMEOUT = XCCL_TIMEOUT), then
 * PMIx_Get's rank 0's value, and PMIx_Finalize closes this process's use of
 * PMIx again (PMIx counts initialisations, so a program that uses PMIx
 * itself keeps its own).
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "launch.h"
#include "log.h"

int launch_pmix_present(void) {
  return config_foreign_env("PMIX_NAMESPACE") != NULL && config_foreign_env("PMIX_RANK") != NULL;
}

#ifndef XCCL_HAVE_PMIX_H

const char *launch_pmix_unavailable(void) {
  return "this xccl was built without pmix.h (Debian: libpmix-dev), so it cannot use the PMIx server of this launch";
}

xcclResult_t launch_pmix(unsigned call, int *rank_p, int *nranks_p, xcclUniqueId *uid_p, char *how, size_t howlen) {
  (void)call, (void)rank_p, (void)nranks_p, (void)uid_p, (void)how, (void)howlen;
  return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: %s", launch_pmix_unavailable());
}

#else

#include <pmix.h>

/* The functions of libpmix this file uses, found by dlsym. */
typedef struct {
  pmix_status_t (*init)(pmix_proc_t *proc, pmix_info_t info[], size_t ninfo);
  pmix_status_t (*finalize)(const pmix_info_t info[], size_t ninfo);
  pmix_status_t (*put)(pmix_scope_t scope, const char key[], pmix_value_t *val);
  pmix_status_t (*commit)(void);
  pmix_status_t (*fence)(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo);
  pmix_status_t (*get)(const pmix_proc_t *proc, const char key[], const pmix_info_t info[], size_t ninfo,
                       pmix_value_t **val);
  const char *(*error_string)(pmix_status_t status);
  void (*value_destruct)(pmix_value_t *val);
} pmix_fns_t;

static pmix_fns_t pmix;
static char pmix_why[512];
static pthread_once_t pmix_once = PTHREAD_ONCE_INIT;

static void *pmix_sym(void *lib, const char *name, int *missing) {
  void *p = dlsym(lib, name);
  if (!p && !*missing) {
    *missing = 1;
    snprintf(pmix_why, sizeof(pmix_why), "libpmix.so.2 has no %s: is it PMIx 2 or later?", name);
  }
  return p;
}

/* Opens libpmix once; never closed (PMIx keeps threads and handlers). */
static void pmix_load(void) {
  static const char *names[] = {"libpmix.so.2", "libpmix.so"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !lib; i++)
    lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL); /* GLOBAL: PMIx's own plug-ins resolve against it */
  if (!lib) {
    snprintf(pmix_why, sizeof(pmix_why),
             "the launcher serves PMIx, but libpmix cannot be loaded (%s; Debian: apt-get install libpmix2)", dlerror());
    return;
  }
  int missing = 0;
  *(void **)&pmix.init = pmix_sym(lib, "PMIx_Init", &missing);
  *(void **)&pmix.finalize = pmix_sym(lib, "PMIx_Finalize", &missing);
  *(void **)&pmix.put = pmix_sym(lib, "PMIx_Put", &missing);
  *(void **)&pmix.commit = pmix_sym(lib, "PMIx_Commit", &missing);
  *(void **)&pmix.fence = pmix_sym(lib, "PMIx_Fence", &missing);
  *(void **)&pmix.get = pmix_sym(lib, "PMIx_Get", &missing);
  *(void **)&pmix.error_string = pmix_sym(lib, "PMIx_Error_string", &missing);
  *(void **)&pmix.value_destruct = dlsym(lib, "PMIx_Value_destruct"); /* optional */
  if (missing) pmix.init = NULL;
}

const char *launch_pmix_unavailable(void) {
  pthread_once(&pmix_once, pmix_load);
  return pmix.init ? NULL : pmix_why;
}

static void info_int(pmix_info_t *info, const char *key, int v) {
  memset(info, 0, sizeof(*info));
  snprintf(info->key, sizeof(info->key), "%s", key);
  info->value.type = PMIX_INT;
  info->value.data.integer = v;
}

static void info_bool(pmix_info_t *info, const char *key, int v) {
  memset(info, 0, sizeof(*info));
  snprintf(info->key, sizeof(info->key), "%s", key);
  info->value.type = PMIX_BOOL;
  info->value.data.flag = v != 0;
}

static void value_free(pmix_value_t *v) {
  if (!v) return;
  if (pmix.value_destruct) pmix.value_destruct(v);
  free(v);
}

static xcclResult_t pmix_fail(pmix_status_t rc, const pmix_proc_t *me, const char *what) {
  return err_set(rc == PMIX_ERR_TIMEOUT ? xcclTimeout : xcclSystemError, LOG_INIT,
                 "xcclCommInitFromEnv: PMIx (namespace %s, rank %u): %s failed: %s", me->nspace, me->rank, what,
                 pmix.error_string(rc));
}

/* Size, put, fence, get; PMIx is initialised. */
static xcclResult_t pmix_exchange(const pmix_proc_t *me, unsigned call, int *nranks_p, xcclUniqueId *uid, char *key) {
  double timeout = config_double(CFG_TIMEOUT);
  int secs = timeout >= 1e6 ? 1000000 : (int)ceil(timeout);
  pmix_proc_t job;
  memset(&job, 0, sizeof(job));
  snprintf(job.nspace, sizeof(job.nspace), "%s", me->nspace);
  job.rank = PMIX_RANK_WILDCARD;
  pmix_info_t tmo;
  info_int(&tmo, PMIX_TIMEOUT, secs);

  pmix_value_t *v = NULL;
  pmix_status_t rc = pmix.get(&job, PMIX_JOB_SIZE, &tmo, 1, &v);
  if (rc != PMIX_SUCCESS) return pmix_fail(rc, me, "asking for the job size (PMIX_JOB_SIZE)");
  uint32_t size = v->type == PMIX_UINT32 ? v->data.uint32 : 0;
  value_free(v);
  if (size < 1 || size > BS_MAX_RANKS || me->rank >= size)
    return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: PMIx says the job has %u processes and this is "
                   "rank %u: that is not a job xccl can run", size, me->rank);

  snprintf(key, PMIX_MAX_KEYLEN, "xccl.uid.%u", call);
  /* Rank 0 joins the fence even when it has no id to publish, so that the
   * others fail at their get instead of waiting out the fence. */
  xcclResult_t own = xcclSuccess;
  if (me->rank == 0) {
    own = xcclGetUniqueId(uid);
    pmix_value_t val;
    memset(&val, 0, sizeof(val));
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = uid->internal;
    val.data.bo.size = XCCL_UNIQUE_ID_BYTES;
    rc = own == xcclSuccess ? pmix.put(PMIX_GLOBAL, key, &val) : PMIX_SUCCESS;
    if (rc != PMIX_SUCCESS) own = pmix_fail(rc, me, "publishing the unique id (PMIx_Put)");
  }
  rc = pmix.commit();
  if (rc != PMIX_SUCCESS && own == xcclSuccess) own = pmix_fail(rc, me, "PMIx_Commit");
  pmix_info_t fence_info[2];
  info_bool(&fence_info[0], PMIX_COLLECT_DATA, 1);
  info_int(&fence_info[1], PMIX_TIMEOUT, secs);
  rc = pmix.fence(&job, 1, fence_info, 2);
  if (own != xcclSuccess) return own;
  if (rc != PMIX_SUCCESS)
    return pmix_fail(rc, me, "the fence of every rank (PMIx_Fence; a rank that does not call xcclCommInitFromEnv "
                             "keeps the others waiting until XCCL_TIMEOUT)");
  if (me->rank != 0) {
    pmix_proc_t zero = job;
    zero.rank = 0;
    v = NULL;
    rc = pmix.get(&zero, key, &tmo, 1, &v);
    if (rc != PMIX_SUCCESS) return pmix_fail(rc, me, "getting rank 0's unique id (PMIx_Get)");
    int ok = v->type == PMIX_BYTE_OBJECT && v->data.bo.size == XCCL_UNIQUE_ID_BYTES;
    if (ok) memcpy(uid->internal, v->data.bo.bytes, XCCL_UNIQUE_ID_BYTES);
    value_free(v);
    if (!ok)
      return err_set(xcclInternalError, LOG_INIT, "xcclCommInitFromEnv: PMIx key %s of rank 0 is not a unique id of "
                     "%d bytes: is another program using that key?", key, XCCL_UNIQUE_ID_BYTES);
  }
  *nranks_p = (int)size;
  return xcclSuccess;
}

xcclResult_t launch_pmix(unsigned call, int *rank_p, int *nranks_p, xcclUniqueId *uid_p, char *how, size_t howlen) {
  const char *why = launch_pmix_unavailable();
  if (why) return err_set(xcclInvalidUsage, LOG_INIT, "xcclCommInitFromEnv: %s", why);
  pmix_proc_t me;
  memset(&me, 0, sizeof(me));
  snprintf(me.nspace, sizeof(me.nspace), "%s", config_foreign_env("PMIX_NAMESPACE"));
  pmix_status_t rc = pmix.init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS)
    return err_set(xcclSystemError, LOG_INIT, "xcclCommInitFromEnv: PMIx_Init failed: %s (namespace %s from "
                   "PMIX_NAMESPACE; is the launcher's PMIx server still there?)", pmix.error_string(rc), me.nspace);
  xcclUniqueId uid;
  char key[PMIX_MAX_KEYLEN + 1];
  int nranks = 0;
  xcclResult_t r = pmix_exchange(&me, call, &nranks, &uid, key);
  rc = pmix.finalize(NULL, 0);
  if (rc != PMIX_SUCCESS) WARN(INIT, "xcclCommInitFromEnv: PMIx_Finalize failed: %s", pmix.error_string(rc));
  if (r != xcclSuccess) return r;
  snprintf(how, howlen, "PMIx (namespace %s, key %s)", me.nspace, key);
  *rank_p = (int)me.rank;
  *nranks_p = nranks;
  *uid_p = uid;
  return xcclSuccess;
}

#endif
