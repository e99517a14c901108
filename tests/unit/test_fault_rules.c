/* XCCL_FAULT rules: what parses, what is refused and how, and how rules
 * match operations, steps and probabilities (src/base/fault.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fault.h"
#include "test_util.h"

static void parses(const char *text, int want_n) {
  fault_rule_t r[FAULT_MAX_RULES];
  int n = -1;
  err_quiet(1);
  xcclResult_t res = fault_parse(text, r, FAULT_MAX_RULES, &n);
  err_quiet(0);
  CHECK(res == xcclSuccess && n == want_n, "'%s': result %d, %d rules (%s), expected %d", text, res, n, err_last(),
        want_n);
}

static void refuses(const char *text, const char *want_msg) {
  fault_rule_t r[FAULT_MAX_RULES];
  int n = 12345;
  err_quiet(1);
  xcclResult_t res = fault_parse(text, r, FAULT_MAX_RULES, &n);
  err_quiet(0);
  CHECK(res == xcclInvalidArgument && n == 12345 && strstr(err_last(), want_msg),
        "'%s': result %d, n %d, message '%s' (expected one with '%s')", text, res, n, err_last(), want_msg);
}

int main(void) {
  parses("rank=2,op=allreduce,seq=10,step=3,action=close", 1);
  parses("action=kill", 1);
  parses(" rank=0 , action=delay:250 ; rank=1,p=0.5,seed=9,action=corrupt ;", 2);
  parses("op=alltoall,action=stall;op=send,action=error", 2);
  parses("", 0);

  fault_rule_t r[FAULT_MAX_RULES];
  int n = 0;
  CHECK(fault_parse("rank=3,op=Broadcast,seq=7,step=0,action=delay:15", r, FAULT_MAX_RULES, &n) == xcclSuccess &&
            n == 1 && r[0].rank == 3 && strcmp(r[0].op, "broadcast") == 0 && r[0].seq == 7 && r[0].step == 0 &&
            r[0].action == FAULT_DELAY && r[0].delay_ms == 15 && r[0].p == 0,
        "fields of a full rule read wrong");
  CHECK(fault_parse("action=error", r, FAULT_MAX_RULES, &n) == xcclSuccess && r[0].rank == -1 && r[0].op[0] == 0 &&
            r[0].seq == -1 && r[0].step == -1,
        "a rule without fields must match anything");

  refuses("rank=2", "has no action=");
  refuses("rank=two,action=close", "rank=two is not a number");
  refuses("rank=-1,action=close", "rank=-1 is not a number");
  refuses("op=allsum,action=close", "op=allsum is not one of");
  refuses("action=explode", "action=explode is not one of");
  refuses("action=delay:", "the delay is milliseconds");
  refuses("action=delay:-5", "the delay is milliseconds");
  refuses("p=0,action=kill", "p=0 is not a probability");
  refuses("p=1.5,action=kill", "p=1.5 is not a probability");
  refuses("rank=1,color=red,action=kill", "unknown field 'color'");
  refuses("rank=1,action=kill;stepp", "rule 2: 'stepp' is not key=value");
  char many[2048] = "";
  for (int i = 0; i < FAULT_MAX_RULES + 1; i++) strcat(many, "action=kill;");
  refuses(many, "more than");
  char huge[4096];
  memset(huge, 'a', sizeof(huge) - 1);
  huge[sizeof(huge) - 1] = 0;
  refuses(huge, "longer than");

  /* Matching, through XCCL_FAULT as a process would see it. */
  setenv("XCCL_FAULT", "rank=1,op=allreduce,seq=2,step=1,action=corrupt; rank=1,op=reduce,p=0.25,seed=5,action=delay:0",
         1);
  CHECK(fault_check_config() == xcclSuccess && fault_enabled(), "XCCL_FAULT not taken: %s", err_last());
  fault_ctx_t one, zero;
  fault_ctx_init(&one, 1);
  fault_ctx_init(&zero, 0);
  fault_stream_t s = {0};
  int ms = -1;
  fault_set_op(&one, "allreduce", 1);
  for (int i = 0; i < 3; i++) CHECK(fault_match(&one, &s, "test", &ms) == FAULT_NONE, "seq 1 step %d fired", i);
  fault_set_op(&one, "allreduce", 2);
  CHECK(fault_match(&one, &s, "test", &ms) == FAULT_NONE, "seq 2 step 0 fired");
  CHECK(fault_match(&one, &s, "test", &ms) == FAULT_CORRUPT, "seq 2 step 1 did not fire");
  fault_set_op(&one, "allreduce", 2);
  s = (fault_stream_t){0};
  CHECK(fault_match(&one, &s, "test", &ms) == FAULT_NONE && fault_match(&one, &s, "test", &ms) == FAULT_NONE,
        "a rule without p fired twice");
  /* Two communicators in one process: each matches its own rank and operation. */
  fault_set_op(&zero, "reduce", 9);
  fault_set_op(&one, "allgather", 9);
  int fired0 = 0;
  for (int i = 0; i < 400; i++) fired0 += fault_match(&zero, &s, "test", &ms) != FAULT_NONE;
  CHECK(fired0 == 0, "a rule for rank 1 fired %d times on rank 0", fired0);
  for (int i = 0; i < 400; i++) fired0 += fault_match(&one, &s, "test", &ms) != FAULT_NONE;
  CHECK(fired0 == 0, "a rule for reduce fired %d times on rank 1's allgather", fired0);
  fault_set_op(&one, "reduce", 9);
  int fired = 0;
  for (int i = 0; i < 4000; i++) fired += fault_match(&one, &s, "test", &ms) == FAULT_DELAY;
  CHECK(fired > 800 && fired < 1200, "p=0.25 fired %d of 4000 times", fired);

  unsigned char buf[9] = {0};
  fault_corrupt(buf, sizeof(buf));
  int bits = 0;
  for (size_t i = 0; i < sizeof(buf); i++) bits += __builtin_popcount(buf[i]);
  CHECK(bits == 1, "corrupt flipped %d bits", bits);
  return test_finish("fault rules");
}
