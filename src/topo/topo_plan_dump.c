/* topo_plan_dump.c — xccl-topo --job's output (being written). */
#include "error.h"
#include "log.h"
#include "topo.h"

xcclResult_t topo_plan_render(const topo_system_t *sys, const topo_plan_t *plan, const topo_host_plan_t *host,
                              topo_format_t fmt, char **text_p) {
  (void)sys, (void)plan, (void)host, (void)fmt, (void)text_p;
  return err_set(xcclInvalidArgument, LOG_TOPO, "the job's output is not written yet");
}
