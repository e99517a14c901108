/*
 * test_config.c — the configuration table (src/base/config.h): parsing of
 * every value type, range checks, "did you mean" suggestions, and reading
 * XCCL_* variables from the environment with the warnings that go to the log.
 *
 * config_parse and config_nearest are pure and are tested in this process.
 * Everything that reads the environment runs in a fork()ed child: the table is
 * read once per process (pthread_once), and log_configure opens
 * XCCL_DEBUG_FILE as a side effect, so each scenario starts from a fresh copy
 * of this process, sets its variables, calls config_reset_for_test() and then
 * reads the values and the log file it chose. The child's failed checks print
 * to stderr as usual; its exit code tells the parent whether it passed, and
 * its check count comes back through a shared page.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "test_util.h"
#include "xccl.h"

static char tmpdir[64];

/* ---- config_parse ---------------------------------------------------------- */

/* Sentinels that no successful parse in this file produces. */
#define I_SENTINEL ((int64_t)0x5a5a5a5a5a5a5a5aLL)
#define D_SENTINEL (-12345.25)

/* Parses text for entry e and expects success with value want_i (and want_d). */
static void expect_ok(const config_entry_t *e, const char *text, int64_t want_i, double want_d) {
  int64_t i = I_SENTINEL;
  double d = D_SENTINEL;
  char why[256] = "";
  int rc = config_parse(e, text, &i, &d, why, sizeof(why));
  CHECK(rc == 0, "XCCL_%s='%s' should parse, got rc %d (%s)", e->name, text, rc, why);
  if (rc != 0) return;
  if (e->type != CFG_T_DOUBLE)
    CHECK(i == want_i, "XCCL_%s='%s': integer %lld, want %lld", e->name, text, (long long)i, (long long)want_i);
  CHECK(d == want_d, "XCCL_%s='%s': double %.17g, want %.17g", e->name, text, d, want_d);
}

/* Expects failure: outputs untouched, and a reason naming the variable, the
 * text and containing `word` ("is not" for bad syntax, "outside" for range). */
static void expect_bad(const config_entry_t *e, const char *text, const char *word) {
  int64_t i = I_SENTINEL;
  double d = D_SENTINEL;
  char why[256] = "";
  int rc = config_parse(e, text, &i, &d, why, sizeof(why));
  CHECK(rc == -1, "XCCL_%s='%s' should be rejected, got rc %d (i=%lld d=%g)", e->name, text, rc, (long long)i, d);
  CHECK(i == I_SENTINEL && d == D_SENTINEL, "XCCL_%s='%s': outputs changed on failure (i=%lld d=%g)", e->name,
        text, (long long)i, d);
  char var[96];
  snprintf(var, sizeof(var), "XCCL_%s=%s ", e->name, text);
  CHECK(strstr(why, var) != NULL, "XCCL_%s='%s': reason '%s' does not quote '%s'", e->name, text, why, var);
  CHECK(strstr(why, word) != NULL, "XCCL_%s='%s': reason '%s' lacks '%s'", e->name, text, why, word);
}

static void test_parse_int(void) {
  const config_entry_t *ns = &config_table[CFG_NSOCKS];
  CHECK(ns->type == CFG_T_INT && ns->min == 1 && ns->max == 16, "XCCL_NSOCKS is not INT 1..16 any more");
  expect_ok(ns, "4", 4, 4.0);
  expect_ok(ns, "1", 1, 1.0);   /* both ends of the range are allowed */
  expect_ok(ns, "16", 16, 16.0);
  expect_ok(ns, "+7", 7, 7.0);  /* strtoll's sign */
  expect_bad(ns, "0", "outside");
  expect_bad(ns, "17", "outside");
  expect_bad(ns, "-3", "outside");
  expect_bad(ns, "12x", "is not an integer");
  expect_bad(ns, "", "is not an integer");
  expect_bad(ns, "4.0", "is not an integer");
  expect_bad(ns, "0x4", "is not an integer"); /* decimal only */
  expect_bad(ns, "four", "is not an integer");

  /* XCCL_RANK's range starts at -1 (its "unset" default). */
  const config_entry_t *rank = &config_table[CFG_RANK];
  expect_ok(rank, "-1", -1, -1.0);
  expect_bad(rank, "-2", "outside");
  expect_ok(rank, "1073741824", 1 << 30, (double)(1 << 30));
  expect_bad(rank, "1073741825", "outside");

  /* Beyond 64 bits is a syntax error (ERANGE), not a clamp to INT64_MAX. */
  const config_entry_t wide = {"WIDE", CFG_T_INT, "0", -1e19, 1e19, "test", -1};
  expect_ok(&wide, "-9223372036854775807", -INT64_MAX, (double)-INT64_MAX);
  expect_bad(&wide, "9223372036854775808", "is not an integer");
  expect_bad(&wide, "-99999999999999999999", "is not an integer");
}

static void test_parse_size(void) {
  const config_entry_t *cs = &config_table[CFG_CHUNK_SIZE];
  CHECK(cs->type == CFG_T_SIZE, "XCCL_CHUNK_SIZE is not a SIZE");
  /* Suffixes are powers of 1024, either case, with an optional B. */
  expect_ok(cs, "4096", 4096, 4096.0);
  expect_ok(cs, "512K", 512 * 1024, 512.0 * 1024);
  expect_ok(cs, "512k", 512 * 1024, 512.0 * 1024);
  expect_ok(cs, "512KB", 512 * 1024, 512.0 * 1024);
  expect_ok(cs, "512kb", 512 * 1024, 512.0 * 1024);
  expect_ok(cs, "1M", 1 << 20, 1048576.0);
  expect_ok(cs, "3mB", 3 << 20, 3.0 * 1048576);
  expect_ok(cs, "1G", 1 << 30, 1073741824.0);
  expect_ok(cs, "1gb", 1 << 30, 1073741824.0);
  expect_bad(cs, "4095", "outside");  /* min 4096 */
  expect_bad(cs, "3K", "outside");    /* 3072 */
  expect_bad(cs, "2G", "outside");    /* max 1 GiB */
  expect_bad(cs, "1025M", "outside");
  /* Syntax: no sign, no space, no other suffix, nothing after the B. */
  expect_bad(cs, "-5", "is not a size");
  expect_bad(cs, "+5K", "is not a size");
  expect_bad(cs, " 8K", "is not a size");
  expect_bad(cs, "12x", "is not a size");
  expect_bad(cs, "", "is not a size");
  expect_bad(cs, "K", "is not a size");
  expect_bad(cs, "8T", "is not a size");
  expect_bad(cs, "8KK", "is not a size");
  expect_bad(cs, "8KBB", "is not a size");
  expect_bad(cs, "8 K", "is not a size");
  expect_bad(cs, "1.5M", "is not a size");

  /* Overflow of the 64-bit result is rejected, not wrapped: checked with an
   * entry whose range would accept any value. INT64_MAX / 2^30 = 8589934591. */
  const config_entry_t big = {"BIG", CFG_T_SIZE, "0", 0, 1e20, "test", -1};
  expect_ok(&big, "8589934591G", (int64_t)8589934591LL << 30, (double)((int64_t)8589934591LL << 30));
  expect_bad(&big, "8589934592G", "is not a size");
  expect_bad(&big, "99999999999G", "is not a size");
  expect_bad(&big, "99999999999999999M", "is not a size");
  expect_ok(&big, "9223372036854775807", INT64_MAX, (double)INT64_MAX);
  expect_bad(&big, "9223372036854775808", "is not a size");  /* > INT64_MAX */
  expect_bad(&big, "18446744073709551616", "is not a size"); /* > UINT64_MAX */
}

static void test_parse_double(void) {
  const config_entry_t *to = &config_table[CFG_TIMEOUT];
  CHECK(to->type == CFG_T_DOUBLE && to->min == 0.001 && to->max == 1e7, "XCCL_TIMEOUT is not DOUBLE 0.001..1e7");
  expect_ok(to, "2.5", 0, 2.5);
  expect_ok(to, "300", 0, 300.0);
  expect_ok(to, "1e3", 0, 1000.0);
  expect_ok(to, "0.001", 0, 0.001); /* both ends */
  expect_ok(to, "1e7", 0, 1e7);
  expect_bad(to, "0.0009", "outside");
  expect_bad(to, "0", "outside");
  expect_bad(to, "-1", "outside");
  expect_bad(to, "1.5e7", "outside");
  expect_bad(to, "abc", "is not a number");
  expect_bad(to, "", "is not a number");
  expect_bad(to, "10s", "is not a number");
  expect_bad(to, "nan", "is not a number"); /* not finite */
  expect_bad(to, "inf", "is not a number");
  expect_bad(to, "1e999", "is not a number"); /* ERANGE */
}

static void test_parse_bool(void) {
  /* The table has no BOOL knob yet; the parser is tested with one of its own.
   * The range [0, 0] shows that a boolean is not range checked. */
  const config_entry_t b = {"FLAG", CFG_T_BOOL, "0", 0, 0, "test", -1};
  const char *yes[] = {"1", "y", "Y", "yes", "YES", "Yes", "true", "TRUE", "True", "on", "ON"};
  const char *no[] = {"0", "n", "N", "no", "NO", "false", "FALSE", "off", "Off"};
  for (size_t k = 0; k < sizeof(yes) / sizeof(yes[0]); k++) expect_ok(&b, yes[k], 1, 1.0);
  for (size_t k = 0; k < sizeof(no) / sizeof(no[0]); k++) expect_ok(&b, no[k], 0, 0.0);
  const char *bad[] = {"", "2", "-1", "yess", "tru", "of", "onn", "maybe", " 1", "1 "};
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) expect_bad(&b, bad[k], "is not a boolean");
}

static void test_parse_misc(void) {
  /* A string accepts anything and writes nothing. */
  int64_t i = I_SENTINEL;
  double d = D_SENTINEL;
  char why[64] = "untouched";
  CHECK(config_parse(&config_table[CFG_ROOT], "host:1234", &i, &d, why, sizeof(why)) == 0, "STR rejected");
  CHECK(i == I_SENTINEL && d == D_SENTINEL && strcmp(why, "untouched") == 0, "STR parse wrote outputs");

  /* A short reason buffer is cut, terminated, and not overrun. */
  struct {
    char why[12];
    char guard[8];
  } s;
  memset(&s, 'G', sizeof(s));
  CHECK(config_parse(&config_table[CFG_NSOCKS], "999", &i, &d, s.why, sizeof(s.why)) == -1, "999 accepted");
  CHECK(memchr(s.why, '\0', sizeof(s.why)) != NULL, "short reason is not terminated");
  CHECK(strncmp(s.why, "XCCL_NSOCKS", sizeof(s.why) - 1) == 0, "short reason '%.12s'", s.why);
  int guard_ok = 1;
  for (size_t k = 0; k < sizeof(s.guard); k++) guard_ok &= s.guard[k] == 'G';
  CHECK(guard_ok, "config_parse wrote past whylen");

  /* Every default in the table parses and lies in its own range: a bad
   * default would silently become 0 in config_read. */
  for (int id = 0; id < CFG_COUNT; id++) {
    i = I_SENTINEL;
    why[0] = '\0';
    CHECK(config_parse(&config_table[id], config_table[id].def, &i, &d, why, sizeof(why)) == 0,
          "default of XCCL_%s does not parse: %s", config_table[id].name, why);
  }
}

/* ---- config_nearest ------------------------------------------------------- */

static void expect_nearest(const char *name, const char *want) {
  const char *got = config_nearest(name);
  if (!want)
    CHECK(got == NULL, "nearest('%s') = %s, want none", name, got);
  else
    CHECK(got && strcmp(got, want) == 0, "nearest('%s') = %s, want %s", name, got ? got : "(none)", want);
}

static void test_nearest(void) {
  /* Every known name is its own nearest. */
  for (int id = 0; id < CFG_COUNT; id++) expect_nearest(config_table[id].name, config_table[id].name);
  expect_nearest("NSOCK", "NSOCKS");      /* distance 1, allowed (5+2)/3 = 2 */
  expect_nearest("TIMEOUTS", "TIMEOUT");  /* distance 1 */
  expect_nearest("nsocks", "NSOCKS");     /* case does not count */
  expect_nearest("CHUNKSIZE", "CHUNK_SIZE");
  expect_nearest("SPINCOUNT", "SPIN_COUNT");
  expect_nearest("NCHANNEL", "NCHANNELS");
  expect_nearest("SOCKET_IF_NAME", "SOCKET_IFNAME");
  /* DEBUG_SUBSYSTEM: 3 insertions from DEBUG_SUBSYS, allowed (15+2)/3 = 5. */
  expect_nearest("DEBUG_SUBSYSTEM", "DEBUG_SUBSYS");
  /* The limit is a third of the length, rounded: NSOCKSXXXX is 4 away with
   * 4 allowed; NSOCKSXXXXXX is 6 away with 4 allowed. */
  expect_nearest("NSOCKSXXXX", "NSOCKS");
  expect_nearest("NSOCKSXXXXXX", NULL);
  /* One past the limit at lengths where a rounding change would admit it:
   * NXX is 2 from NET (1 allowed), NCHANXXXX is 4 from NCHANNELS (3 allowed). */
  expect_nearest("NXX", NULL);
  expect_nearest("NCHANXXXX", NULL);
  expect_nearest("NCHANXXXS", "NCHANNELS"); /* 3 away, 3 allowed */
  expect_nearest("NETS", "NET");
  expect_nearest("ABC", NULL);
  expect_nearest("", NULL);
  expect_nearest("COMPLETELY_UNRELATED_KNOB", NULL);
  expect_nearest("ZZZZZZZZZZZZ", NULL);
  /* Longer than the distance buffer: no answer, and no overrun. */
  char longname[200];
  memset(longname, 'A', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = '\0';
  expect_nearest(longname, NULL);
}

/* ---- Environment scenarios, one child each ------------------------------- */

/* Whole file as a string ("" when missing); caller frees. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return calloc(1, 1);
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (cap - n - 1 == 0) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) break;
      buf = nb;
    }
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

static int count_occurrences(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

/* Removes every XCCL_* variable so a scenario sees only what it sets. */
static void clear_xccl_env(void) {
  extern char **environ;
  for (;;) {
    char name[128] = "";
    for (char **ep = environ; ep && *ep; ep++) {
      if (strncmp(*ep, "XCCL_", 5) == 0) {
        size_t n = strcspn(*ep, "=");
        if (n >= sizeof(name)) n = sizeof(name) - 1;
        memcpy(name, *ep, n);
        name[n] = '\0';
        break;
      }
    }
    if (!name[0]) return;
    unsetenv(name);
  }
}

/* Copies the line of config_print's output that starts with prefix. */
static int print_line(const char *printed, const char *prefix, char *out, size_t len) {
  out[0] = '\0';
  char want[128];
  snprintf(want, sizeof(want), "\n%s", prefix);
  const char *p = strstr(printed, want);
  if (!p) return 0;
  p++;
  size_t n = strcspn(p, "\n");
  if (n >= len) n = len - 1;
  memcpy(out, p, n);
  out[n] = '\0';
  return 1;
}

static void log_path(char *out, size_t len, const char *file) { snprintf(out, len, "%s/%s", tmpdir, file); }

/* Valid, invalid and unknown variables; values, is_set, and the warnings. */
static void scenario_basic(void) {
  char logf[128];
  log_path(logf, sizeof(logf), "basic.log");
  setenv("XCCL_DEBUG", "WARN", 1);
  setenv("XCCL_DEBUG_FILE", logf, 1);
  setenv("XCCL_NSOCKS", "4", 1);
  setenv("XCCL_CHUNK_SIZE", "1M", 1);
  setenv("XCCL_TIMEOUT", "abc", 1);
  setenv("XCCL_NSOCK", "3", 1);
  setenv("XCCL_SPIN_COUNT", "0", 1);
  config_reset_for_test();

  CHECK(config_int(CFG_NSOCKS) == 4, "NSOCKS = %lld, want 4", (long long)config_int(CFG_NSOCKS));
  CHECK(config_size(CFG_CHUNK_SIZE) == 1048576, "CHUNK_SIZE = %zu, want 1048576", config_size(CFG_CHUNK_SIZE));
  CHECK(config_double(CFG_TIMEOUT) == 300.0, "TIMEOUT = %g, want the default 300", config_double(CFG_TIMEOUT));
  CHECK(config_is_set(CFG_NSOCKS) && config_is_set(CFG_CHUNK_SIZE), "valid variables not marked set");
  CHECK(config_is_set(CFG_TIMEOUT) == 1, "an invalid value is still 'set'");
  CHECK(config_is_set(CFG_NCHANNELS) == 0, "NCHANNELS is unset but reported set");
  CHECK(config_int(CFG_NCHANNELS) == 2, "NCHANNELS default = %lld, want 2", (long long)config_int(CFG_NCHANNELS));
  CHECK(config_int(CFG_RANK) == -1, "RANK default = %lld, want -1", (long long)config_int(CFG_RANK));
  CHECK(config_int(CFG_SPIN_COUNT) == 0 && config_bool(CFG_SPIN_COUNT) == 0, "SPIN_COUNT=0 read as %lld",
        (long long)config_int(CFG_SPIN_COUNT));
  CHECK(config_bool(CFG_NSOCKS) == 1, "config_bool of a non-zero integer is %d", config_bool(CFG_NSOCKS));
  CHECK(strcmp(config_str(CFG_DEBUG_FILE), logf) == 0, "DEBUG_FILE = '%s'", config_str(CFG_DEBUG_FILE));
  CHECK(strcmp(config_str(CFG_NSOCKS), "4") == 0, "config_str(NSOCKS) = '%s'", config_str(CFG_NSOCKS));
  CHECK(strcmp(config_str(CFG_TIMEOUT), "300") == 0, "an invalid value's string is '%s', want the default",
        config_str(CFG_TIMEOUT));
  CHECK(config_str(CFG_ROOT) != NULL && config_str(CFG_ROOT)[0] == '\0', "unset STR is not \"\"");

  /* Read once: a change in the environment is not seen without a reset. */
  setenv("XCCL_NSOCKS", "8", 1);
  CHECK(config_int(CFG_NSOCKS) == 4, "config re-read the environment without a reset");

  /* config_print marks the environment's values and the defaults. */
  char *printed = NULL;
  size_t plen = 0;
  FILE *mf = open_memstream(&printed, &plen);
  if (mf) {
    config_print(mf);
    fclose(mf);
    char line[512];
    CHECK(print_line(printed, "XCCL_NSOCKS ", line, sizeof(line)) && strstr(line, " 4 "),
          "print: NSOCKS line '%s' lacks the value 4", line);
    CHECK(print_line(printed, "XCCL_TIMEOUT ", line, sizeof(line)) && strstr(line, " (default) "),
          "print: invalid TIMEOUT line '%s' not shown as (default)", line);
    CHECK(count_occurrences(printed, "\nXCCL_") == CFG_COUNT, "print: not one line per knob");
  }
  free(printed);

  char *log = slurp(logf);
  CHECK(count_occurrences(log, "XCCL_TIMEOUT=abc is not a number; using the default 300") == 1,
        "missing or repeated warning for XCCL_TIMEOUT=abc; log:\n%s", log);
  CHECK(count_occurrences(log, "unknown variable XCCL_NSOCK is ignored; did you mean XCCL_NSOCKS?") == 1,
        "missing warning for XCCL_NSOCK; log:\n%s", log);
  /* The valid ones draw no warning. */
  CHECK(strstr(log, "XCCL_CHUNK_SIZE") == NULL && strstr(log, "XCCL_SPIN_COUNT") == NULL,
        "warning about a valid variable; log:\n%s", log);
  /* Lines carry the documented prefix: host:pid:tid xccl LEVEL SUBSYS. */
  char pidtag[32];
  snprintf(pidtag, sizeof(pidtag), ":%d:", (int)getpid());
  CHECK(strstr(log, pidtag) && strstr(log, " xccl WARN ENV "), "log line prefix; log:\n%s", log);
  free(log);
}

/* Out-of-range, malformed and empty values fall back to defaults; a far
 * unknown variable gets a warning without a suggestion. */
static void scenario_fallbacks(void) {
  char logf[128];
  log_path(logf, sizeof(logf), "fallback.log");
  setenv("XCCL_DEBUG_FILE", logf, 1);
  setenv("XCCL_NSOCKS", "17", 1);
  setenv("XCCL_CHUNK_SIZE", "-5", 1);
  setenv("XCCL_NCHANNELS", "", 1);
  setenv("XCCL_TIMEOUT", "0.5", 1);
  setenv("XCCL_ZZZZZZZZZZZZ", "1", 1);
  config_reset_for_test();

  CHECK(config_int(CFG_NSOCKS) == 4, "NSOCKS=17 gave %lld, want default 4", (long long)config_int(CFG_NSOCKS));
  CHECK(config_size(CFG_CHUNK_SIZE) == 512 * 1024, "CHUNK_SIZE=-5 gave %zu", config_size(CFG_CHUNK_SIZE));
  CHECK(config_int(CFG_NCHANNELS) == 2 && config_is_set(CFG_NCHANNELS), "empty NCHANNELS: %lld set=%d",
        (long long)config_int(CFG_NCHANNELS), config_is_set(CFG_NCHANNELS));
  CHECK(config_double(CFG_TIMEOUT) == 0.5, "TIMEOUT=0.5 gave %g", config_double(CFG_TIMEOUT));

  char *log = slurp(logf);
  CHECK(strstr(log, "XCCL_NSOCKS=17 is outside [1, 16]; using the default 4"), "NSOCKS warning; log:\n%s", log);
  CHECK(strstr(log, "XCCL_CHUNK_SIZE=-5 is not a size"), "CHUNK_SIZE warning; log:\n%s", log);
  CHECK(strstr(log, "XCCL_NCHANNELS= is not an integer"), "empty NCHANNELS warning; log:\n%s", log);
  CHECK(strstr(log, "XCCL_TIMEOUT") == NULL, "warning about the valid TIMEOUT; log:\n%s", log);
  CHECK(strstr(log, "unknown variable XCCL_ZZZZZZZZZZZZ is ignored; `xccl-info` lists the known ones"),
        "far unknown variable; log:\n%s", log);
  CHECK(strstr(log, "XCCL_ZZZZZZZZZZZZ is ignored; did you mean") == NULL, "suggestion for a far name");
  free(log);
}

/* XCCL_DEBUG and XCCL_DEBUG_SUBSYS filter the configuration's own warnings;
 * a bad XCCL_DEBUG is reported on stderr and WARN is used. */
static void scenario_levels(void) {
  char quiet[128], noenv[128], bad[128], errf[128];
  log_path(quiet, sizeof(quiet), "quiet.log");
  log_path(noenv, sizeof(noenv), "noenv.log");
  log_path(bad, sizeof(bad), "badlevel.log");
  log_path(errf, sizeof(errf), "badlevel.stderr");
  setenv("XCCL_NSOCK", "3", 1);

  /* NONE: the file is opened but stays empty. */
  setenv("XCCL_DEBUG", "NONE", 1);
  setenv("XCCL_DEBUG_FILE", quiet, 1);
  config_reset_for_test();
  config_load();
  struct stat st = {0};
  CHECK(stat(quiet, &st) == 0 && st.st_size == 0, "XCCL_DEBUG=NONE still wrote to the log (size %lld)",
        (long long)st.st_size);

  /* All subsystems but ENV: no configuration warnings either. */
  setenv("XCCL_DEBUG", "WARN", 1);
  setenv("XCCL_DEBUG_SUBSYS", "^ENV", 1);
  setenv("XCCL_DEBUG_FILE", noenv, 1);
  config_reset_for_test();
  config_load();
  char *log = slurp(noenv);
  CHECK(strstr(log, "XCCL_NSOCK") == NULL, "^ENV did not silence ENV warnings; log:\n%s", log);
  free(log);

  /* An unknown level: a note on stderr, and WARN applies. */
  fflush(stderr);
  int saved = dup(2);
  FILE *ef = fopen(errf, "w");
  if (ef && saved >= 0) {
    dup2(fileno(ef), 2);
    setenv("XCCL_DEBUG", "LOUD", 1);
    setenv("XCCL_DEBUG_SUBSYS", "ENV", 1);
    setenv("XCCL_DEBUG_FILE", bad, 1);
    config_reset_for_test();
    config_load();
    fflush(stderr);
    dup2(saved, 2);
    fclose(ef);
    char *err = slurp(errf);
    CHECK(strstr(err, "XCCL_DEBUG=LOUD is not NONE, VERSION, WARN, INFO or TRACE; using WARN"),
          "no note for a bad level; stderr:\n%s", err);
    free(err);
    log = slurp(bad);
    CHECK(strstr(log, "unknown variable XCCL_NSOCK is ignored"), "WARN not applied after a bad level; log:\n%s",
          log);
    free(log);
  } else {
    CHECK(0, "cannot redirect stderr: %s", strerror(errno));
  }
  if (saved >= 0) close(saved);
}

/* A reset reads the environment again, including a new log file; %h and %p
 * in XCCL_DEBUG_FILE become the host name and the pid. */
static void scenario_reload(void) {
  char f1[128], pattern[128], f2[256], host[64] = "";
  log_path(f1, sizeof(f1), "reload1.log");
  log_path(pattern, sizeof(pattern), "reload2.%h.%p.log");
  gethostname(host, sizeof(host) - 1);
  snprintf(f2, sizeof(f2), "%s/reload2.%s.%d.log", tmpdir, host, (int)getpid());

  setenv("XCCL_DEBUG_FILE", f1, 1);
  setenv("XCCL_NSOCKS", "4", 1);
  setenv("XCCL_CHUNK_SIZE", "64K", 1);
  setenv("XCCL_NSOCK", "3", 1);
  config_reset_for_test();
  CHECK(config_int(CFG_NSOCKS) == 4, "first load: NSOCKS %lld", (long long)config_int(CFG_NSOCKS));
  CHECK(config_size(CFG_CHUNK_SIZE) == 65536, "first load: CHUNK_SIZE %zu", config_size(CFG_CHUNK_SIZE));

  setenv("XCCL_DEBUG_FILE", pattern, 1);
  setenv("XCCL_NSOCKS", "8", 1);
  unsetenv("XCCL_CHUNK_SIZE");
  unsetenv("XCCL_NSOCK");
  setenv("XCCL_SPIN_COUNTS", "5", 1);
  config_reset_for_test();
  CHECK(config_int(CFG_NSOCKS) == 8, "after reset: NSOCKS %lld, want 8", (long long)config_int(CFG_NSOCKS));
  CHECK(config_size(CFG_CHUNK_SIZE) == 512 * 1024 && !config_is_set(CFG_CHUNK_SIZE),
        "after reset: an unset CHUNK_SIZE kept %zu (set=%d)", config_size(CFG_CHUNK_SIZE),
        config_is_set(CFG_CHUNK_SIZE));

  char *log1 = slurp(f1), *log2 = slurp(f2);
  CHECK(strstr(log1, "unknown variable XCCL_NSOCK is ignored"), "first log lacks its warning:\n%s", log1);
  CHECK(strstr(log1, "XCCL_SPIN_COUNTS") == NULL, "second load wrote to the first log:\n%s", log1);
  CHECK(strstr(log2, "unknown variable XCCL_SPIN_COUNTS is ignored; did you mean XCCL_SPIN_COUNT?"),
        "expanded log %s lacks the second warning:\n%s", f2, log2);
  CHECK(strstr(log2, "XCCL_NSOCK ") == NULL, "second log repeats the first load's warning:\n%s", log2);
  free(log1);
  free(log2);
}

/* The one reader of other launchers' variables: empty counts as unset. */
static void scenario_foreign(void) {
  setenv("XCCL_TEST_FOREIGN", "7", 1);
  CHECK(config_foreign_env("XCCL_TEST_FOREIGN") && strcmp(config_foreign_env("XCCL_TEST_FOREIGN"), "7") == 0,
        "foreign variable not read");
  setenv("XCCL_TEST_FOREIGN", "", 1);
  CHECK(config_foreign_env("XCCL_TEST_FOREIGN") == NULL, "empty foreign variable not NULL");
  unsetenv("XCCL_TEST_FOREIGN");
  CHECK(config_foreign_env("XCCL_TEST_FOREIGN") == NULL, "unset foreign variable not NULL");
}

/* Removes the scenarios' files (whatever their names) and the directory. */
static void remove_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  if (d) {
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
      char p[512];
      snprintf(p, sizeof(p), "%s/%s", tmpdir, de->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(tmpdir);
}

/* The settings every rank must share: their compact form compares numbers as
 * parsed and strings without case; unset equals the default; the first
 * difference in table order is named; a string too long to carry is compared
 * by its hash. */
static config_shared_t shared_with(const char *var, const char *value) {
  clear_xccl_env();
  if (var) setenv(var, value, 1);
  config_reset_for_test();
  config_shared_t s;
  config_shared_pack(&s);
  return s;
}

static void scenario_shared(void) {
  int nshared = 0;
  for (int id = 0; id < CFG_COUNT; id++) nshared += config_table[id].shared >= 0;
  CHECK(nshared == CFG_SHARED_COUNT && config_table[CFG_NCHANNELS].shared >= 0 && config_table[CFG_DEBUG].shared < 0,
        "%d entries marked shared, CFG_SHARED_COUNT %d", nshared, CFG_SHARED_COUNT);
  char a[256], b[256];
  config_shared_t none = shared_with(NULL, NULL);
  config_shared_t same[] = {shared_with("XCCL_NCHANNELS", "2"), shared_with("XCCL_NET_GDR_LEVEL", "pxb"),
                            shared_with("XCCL_ALGO", ""), shared_with("XCCL_DEBUG", "INFO"),
                            shared_with("XCCL_CHUNK_SIZE", "524288")};
  for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
    CHECK(config_shared_diff(&none, &same[i]) == CFG_COUNT, "case %zu: differs from the defaults in XCCL_%s", i,
          config_table[config_shared_diff(&none, &same[i])].name);

  config_shared_t algo = shared_with("XCCL_ALGO", "allreduce:ring");
  CHECK(config_shared_diff(&none, &algo) == CFG_ALGO && config_shared_diff(&algo, &none) == CFG_ALGO,
        "ALGO difference not found");
  config_shared_t upper = shared_with("XCCL_ALGO", "AllReduce:RING");
  CHECK(config_shared_diff(&algo, &upper) == CFG_COUNT, "ALGO compared with case");
  CHECK(strcmp(config_shared_show(&algo, CFG_ALGO, a, sizeof(a)), "allreduce:ring") == 0 &&
            strcmp(config_shared_show(&none, CFG_ALGO, b, sizeof(b)), "(unset)") == 0,
        "ALGO shown as '%s' and '%s'", a, b);

  setenv("XCCL_ALGO", "ring", 1);
  setenv("XCCL_NCHANNELS", "4", 1);
  setenv("XCCL_CHUNK_SIZE", "1M", 1);
  config_reset_for_test();
  config_shared_t three;
  config_shared_pack(&three);
  CHECK(config_shared_diff(&none, &three) == CFG_NCHANNELS, "first difference in table order is XCCL_%s",
        config_table[config_shared_diff(&none, &three)].name);
  CHECK(strcmp(config_shared_show(&three, CFG_CHUNK_SIZE, a, sizeof(a)), "1048576") == 0 &&
            strcmp(config_shared_show(&three, CFG_NCHANNELS, b, sizeof(b)), "4") == 0,
        "numbers shown as '%s' and '%s'", a, b);

  char long1[400], long2[400];
  memset(long1, 'r', sizeof(long1) - 1);
  long1[sizeof(long1) - 1] = '\0';
  memcpy(long2, long1, sizeof(long1));
  long2[sizeof(long2) - 2] = 's';
  config_shared_t l1 = shared_with("XCCL_ALGO", long1), l1b = shared_with("XCCL_ALGO", long1),
                  l2 = shared_with("XCCL_ALGO", long2);
  CHECK(config_shared_diff(&l1, &l1b) == CFG_COUNT && config_shared_diff(&l1, &l2) == CFG_ALGO,
        "long values: equal ones differ or different ones agree");
  CHECK(strcmp(config_shared_show(&l1, CFG_ALGO, a, sizeof(a)), "(a value too long to show)") == 0,
        "a long value shown as '%.40s'", a);
  /* The strings after a long one still travel. */
  setenv("XCCL_ALGO", long1, 1);
  setenv("XCCL_NET", "Socket", 1);
  config_reset_for_test();
  config_shared_pack(&l2);
  CHECK(strcmp(config_shared_show(&l2, CFG_NET, a, sizeof(a)), "Socket") == 0, "NET shown as '%s'", a);

  /* xccl-info says which are shared. */
  char *printed = NULL, line[1024];
  size_t plen = 0;
  FILE *mf = open_memstream(&printed, &plen);
  if (mf) {
    config_print(mf);
    fclose(mf);
    CHECK(print_line(printed, "XCCL_ALGO ", line, sizeof(line)) && strstr(line, " shared "),
          "print: ALGO line '%.80s' lacks 'shared'", line);
    CHECK(print_line(printed, "XCCL_DEBUG ", line, sizeof(line)) && !strstr(line, " shared "),
          "print: DEBUG line '%.80s' says 'shared'", line);
  }
  free(printed);
}

/* ---- NCCL aliases ---------------------------------------------------------- */

/* Sets the variables of a "A=1;B=2" list; a ';' not followed by NCCL_ or
 * XCCL_ is part of the value (NCCL_ALGO's groups). */
static void set_list(const char *list) {
  char buf[512];
  snprintf(buf, sizeof(buf), "%s", list);
  char *kv = buf;
  while (kv && *kv) {
    char *next = kv;
    while ((next = strchr(next, ';')) && strncmp(next + 1, "NCCL_", 5) != 0 && strncmp(next + 1, "XCCL_", 5) != 0)
      next++;
    if (next) *next++ = '\0';
    char *eq = strchr(kv, '=');
    if (eq) {
      *eq = '\0';
      setenv(kv, eq + 1, 1);
    }
    kv = next;
  }
}

typedef struct {
  const char *env;  /* NCCL variables set, "A=1;B=2" */
  config_id_t id;
  const char *want; /* config_str's answer; NULL: as if unset (the default) */
  const char *from; /* config_source's answer */
} alias_case_t;

/* Each alias alone, with the value xccl reads from it. */
static const alias_case_t alias_cases[] = {
    {"NCCL_DEBUG=INFO", CFG_DEBUG, "INFO", "NCCL_DEBUG"},
    {"NCCL_DEBUG=trace", CFG_DEBUG, "TRACE", "NCCL_DEBUG"},
    {"NCCL_DEBUG=ABORT", CFG_DEBUG, NULL, "default"},
    {"NCCL_DEBUG_SUBSYS=^NET", CFG_DEBUG_SUBSYS, "^NET", "NCCL_DEBUG_SUBSYS"},
    {"NCCL_DEBUG_SUBSYS=INIT,GRAPH,P2P,ENV", CFG_DEBUG_SUBSYS, "INIT,TOPO,ENV", "NCCL_DEBUG_SUBSYS"},
    {"NCCL_DEBUG_SUBSYS=P2P,SHM", CFG_DEBUG_SUBSYS, NULL, "default"},
    {"NCCL_DEBUG_SUBSYS=^P2P", CFG_DEBUG_SUBSYS, NULL, "default"},
    {"NCCL_DEBUG_FILE=/dev/null", CFG_DEBUG_FILE, "/dev/null", "NCCL_DEBUG_FILE"},
    {"NCCL_COMM_ID=10.1.2.3:4567", CFG_ROOT, "10.1.2.3:4567", "NCCL_COMM_ID"},
    {"NCCL_SOCKET_IFNAME=^docker,lo", CFG_SOCKET_IFNAME, "^docker,lo", "NCCL_SOCKET_IFNAME"},
    {"NCCL_SOCKET_FAMILY=AF_INET6", CFG_SOCKET_FAMILY, "AF_INET6", "NCCL_SOCKET_FAMILY"},
    {"NCCL_SOCKET_FAMILY=inet", CFG_SOCKET_FAMILY, NULL, "default"},
    {"NCCL_NSOCKS_PERTHREAD=2;NCCL_SOCKET_NTHREADS=4", CFG_NSOCKS, "8", "NCCL_NSOCKS_PERTHREAD, NCCL_SOCKET_NTHREADS"},
    {"NCCL_SOCKET_NTHREADS=3", CFG_NSOCKS, "3", "NCCL_SOCKET_NTHREADS"},
    {"NCCL_NSOCKS_PERTHREAD=5", CFG_NSOCKS, "5", "NCCL_NSOCKS_PERTHREAD"},
    {"NCCL_NET=IB", CFG_NET, "ib", "NCCL_NET"},
    {"NCCL_NET=Socket", CFG_NET, "socket", "NCCL_NET"},
    {"NCCL_NET=AWS Libfabric", CFG_NET, NULL, "default"},
    {"NCCL_IB_DISABLE=1", CFG_NET, "socket", "NCCL_IB_DISABLE"},
    {"NCCL_IB_DISABLE=0", CFG_NET, NULL, "default"},
    {"NCCL_SHM_DISABLE=1", CFG_SHM_DISABLE, "1", "NCCL_SHM_DISABLE"},
    {"NCCL_COMM_BLOCKING=0", CFG_COMM_BLOCKING, "0", "NCCL_COMM_BLOCKING"},
    {"NCCL_NET_GDR_LEVEL=PHB", CFG_NET_GDR_LEVEL, "PHB", "NCCL_NET_GDR_LEVEL"},
    {"NCCL_NET_GDR_LEVEL=2", CFG_NET_GDR_LEVEL, "PXB", "NCCL_NET_GDR_LEVEL"},
    {"NCCL_NET_GDR_LEVEL=9", CFG_NET_GDR_LEVEL, "SYS", "NCCL_NET_GDR_LEVEL"},
    {"NCCL_NET_GDR_LEVEL=NVL", CFG_NET_GDR_LEVEL, NULL, "default"},
    {"NCCL_IB_GDR_LEVEL=LOC", CFG_NET_GDR_LEVEL, "LOC", "NCCL_IB_GDR_LEVEL"},
    {"NCCL_P2P_DISABLE=1", CFG_P2P_DISABLE, "1", "NCCL_P2P_DISABLE"},
    {"NCCL_P2P_DISABLE=0", CFG_P2P_DISABLE, "0", "NCCL_P2P_DISABLE"},
    {"NCCL_HOSTID=rack7-node3", CFG_HOSTID, "rack7-node3", "NCCL_HOSTID"},
    {"NCCL_MIN_NCHANNELS=4", CFG_MIN_NCHANNELS, "4", "NCCL_MIN_NCHANNELS"},
    {"NCCL_MAX_NCHANNELS=0x8", CFG_MAX_NCHANNELS, "8", "NCCL_MAX_NCHANNELS"},
    {"NCCL_BUFFSIZE=8388608", CFG_CHUNK_SIZE, "1048576", "NCCL_BUFFSIZE"},
    {"NCCL_ALGO=Ring", CFG_ALGO, "ring", "NCCL_ALGO"},
    {"NCCL_ALGO=Tree,Ring", CFG_ALGO, "ring", "NCCL_ALGO"},
    {"NCCL_ALGO=allreduce:tree,ring;broadcast:ring;allgather:nvls", CFG_ALGO, "allreduce:ring,broadcast:ring",
     "NCCL_ALGO"},
    {"NCCL_ALGO=Tree", CFG_ALGO, "allreduce:tree", "NCCL_ALGO"},
    {"NCCL_ALGO=allreduce:Tree", CFG_ALGO, "allreduce:tree", "NCCL_ALGO"},
    {"NCCL_ALGO=broadcast:tree", CFG_ALGO, NULL, "default"},
    {"NCCL_ALGO=^Tree", CFG_ALGO, NULL, "default"},
    {"NCCL_ALGO=PAT", CFG_ALGO, "allgather:pat,reducescatter:pat", "NCCL_ALGO"},
    {"NCCL_ALGO=Tree,PAT", CFG_ALGO, "allreduce:tree,allgather:pat,reducescatter:pat", "NCCL_ALGO"},
    {"NCCL_ALGO=reducescatter:pat;allreduce:ring", CFG_ALGO, "reducescatter:pat,allreduce:ring", "NCCL_ALGO"},
    {"NCCL_ALGO=broadcast:pat", CFG_ALGO, NULL, "default"},
    {"NCCL_ALGO=PAT,Ring", CFG_ALGO, "ring", "NCCL_ALGO"},
    {"NCCL_ALGO=^Ring", CFG_ALGO, NULL, "default"},
    {"NCCL_TOPO_FILE=/etc/topo.xml", CFG_TOPO_FILE, "/etc/topo.xml", "NCCL_TOPO_FILE"},
    {"NCCL_TOPO_DUMP_FILE=/tmp/t.xml", CFG_TOPO_DUMP_FILE, "/tmp/t.xml", "NCCL_TOPO_DUMP_FILE"},
    {"NCCL_GRAPH_FILE=/etc/graph.xml", CFG_GRAPH_FILE, "/etc/graph.xml", "NCCL_GRAPH_FILE"},
    {"NCCL_GRAPH_DUMP_FILE=/tmp/g.xml", CFG_GRAPH_DUMP_FILE, "/tmp/g.xml", "NCCL_GRAPH_DUMP_FILE"},
    {"NCCL_IB_HCA==mlx5_0:1", CFG_IB_HCA, "=mlx5_0:1", "NCCL_IB_HCA"},
    {"NCCL_IB_GID_INDEX=3", CFG_IB_GID_INDEX, "3", "NCCL_IB_GID_INDEX"},
    {"NCCL_IB_ADDR_FAMILY=AF_INET6", CFG_IB_ADDR_FAMILY, "AF_INET6", "NCCL_IB_ADDR_FAMILY"},
    {"NCCL_IB_ADDR_RANGE=10.0.0.0/8", CFG_IB_ADDR_RANGE, "10.0.0.0/8", "NCCL_IB_ADDR_RANGE"},
    {"NCCL_IB_ROCE_VERSION_NUM=1", CFG_IB_ROCE_VERSION_NUM, "1", "NCCL_IB_ROCE_VERSION_NUM"},
    {"NCCL_IB_TC=0x60", CFG_IB_TC, "96", "NCCL_IB_TC"},
    {"NCCL_IB_TC=-1", CFG_IB_TC, NULL, "default"},
    {"NCCL_IB_SL=2", CFG_IB_SL, "2", "NCCL_IB_SL"},
    {"NCCL_IB_PKEY_VALUE=0x8001", CFG_IB_PKEY, "32769", "NCCL_IB_PKEY_VALUE"},
    {"NCCL_IB_TIMEOUT=20", CFG_IB_TIMEOUT, "20", "NCCL_IB_TIMEOUT"},
    {"NCCL_IB_RETRY_CNT=5", CFG_IB_RETRY_CNT, "5", "NCCL_IB_RETRY_CNT"},
    {"NCCL_IB_QPS_PER_CONNECTION=2", CFG_IB_QPS_PER_CONNECTION, "2", "NCCL_IB_QPS_PER_CONNECTION"},
    {"NCCL_IB_SPLIT_DATA_ON_QPS=1", CFG_IB_SPLIT_DATA_ON_QPS, "1", "NCCL_IB_SPLIT_DATA_ON_QPS"},
    {"NCCL_IB_ADAPTIVE_ROUTING=0", CFG_IB_ADAPTIVE_ROUTING, "0", "NCCL_IB_ADAPTIVE_ROUTING"},
    {"NCCL_IB_AR_THRESHOLD=65536", CFG_IB_AR_THRESHOLD, "65536", "NCCL_IB_AR_THRESHOLD"},
    {"NCCL_IB_PCI_RELAXED_ORDERING=0", CFG_IB_PCI_RELAXED_ORDERING, "0", "NCCL_IB_PCI_RELAXED_ORDERING"},
};

/* Removes every XCCL_* and NCCL_* variable. */
static void clear_env(void) {
  clear_xccl_env();
  extern char **environ;
  for (;;) {
    char name[128] = "";
    for (char **ep = environ; ep && *ep && !name[0]; ep++)
      if (strncmp(*ep, "NCCL_", 5) == 0) {
        size_t n = strcspn(*ep, "=");
        snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1), *ep);
      }
    if (!name[0]) return;
    unsetenv(name);
  }
}

/* Each alias takes effect when XCCL_ is unset, with its value translated and
 * parsed as XCCL_'s; every alias of the table is tried at least once. */
static void scenario_alias_each(void) {
  char logf[128];
  log_path(logf, sizeof(logf), "alias_each.log");
  int tried[64] = {0};
  for (size_t c = 0; c < sizeof(alias_cases) / sizeof(alias_cases[0]); c++) {
    const alias_case_t *t = &alias_cases[c];
    clear_env();
    if (t->id != CFG_DEBUG_FILE) setenv("XCCL_DEBUG_FILE", logf, 1); /* the warnings, away from stderr */
    set_list(t->env);
    config_reset_for_test();
    const char *got = config_str(t->id), *want = t->want ? t->want : config_table[t->id].def;
    CHECK(strcmp(got, want) == 0, "%s: XCCL_%s = '%s', want '%s'", t->env, config_table[t->id].name, got, want);
    CHECK(strcmp(config_source(t->id), t->from) == 0, "%s: source '%s', want '%s'", t->env, config_source(t->id),
          t->from);
    CHECK(config_is_set(t->id) == (t->want != NULL), "%s: is_set %d", t->env, config_is_set(t->id));
    for (int a = 0; a < config_alias_count && a < 64; a++)
      if (strncmp(t->env, config_aliases[a].names[0], strlen(config_aliases[a].names[0])) == 0 &&
          t->env[strlen(config_aliases[a].names[0])] == '=')
        tried[a] = 1;
  }
  /* The numbers as parsed, not only the text. */
  clear_env();
  set_list("NCCL_BUFFSIZE=8388608;NCCL_P2P_DISABLE=7;NCCL_IB_TC=0x60;NCCL_NSOCKS_PERTHREAD=2;NCCL_SOCKET_NTHREADS=4");
  config_reset_for_test();
  CHECK(config_size(CFG_CHUNK_SIZE) == 1048576 && config_bool(CFG_P2P_DISABLE) == 1 && config_int(CFG_IB_TC) == 96 &&
            config_int(CFG_NSOCKS) == 8,
        "parsed: CHUNK_SIZE %zu P2P_DISABLE %d IB_TC %lld NSOCKS %lld", config_size(CFG_CHUNK_SIZE),
        config_bool(CFG_P2P_DISABLE), (long long)config_int(CFG_IB_TC), (long long)config_int(CFG_NSOCKS));
  for (int a = 0; a < config_alias_count && a < 64; a++)
    CHECK(tried[a], "alias %s of XCCL_%s has no case in alias_cases", config_aliases[a].names[0],
          config_table[config_aliases[a].id].name);
  CHECK(config_alias_count <= 64, "more aliases than this test counts");
  CHECK(config_alias_known("NCCL_SOCKET_NTHREADS") && config_alias_known("NCCL_MAX_NCHANNELS") &&
            !config_alias_known("NCCL_FOO") && !config_alias_known("XCCL_NSOCKS"),
        "config_alias_known");
}

/* Values with no xccl equivalent are ignored with a WARN that says so; bad
 * values are refused in XCCL's words, naming the NCCL variable. */
static void scenario_alias_warnings(void) {
  char logf[128];
  log_path(logf, sizeof(logf), "alias_warn.log");
  setenv("XCCL_DEBUG_FILE", logf, 1);
  set_list("NCCL_ALGO=allreduce:tree,ring;broadcast:tree;NCCL_NET_GDR_LEVEL=NVL;NCCL_NET=AWS Libfabric;"
           "NCCL_IB_TIMEOUT=abc;NCCL_NSOCKS_PERTHREAD=8;NCCL_SOCKET_NTHREADS=4;NCCL_BUFFSIZE=1024;"
           "NCCL_DEBUG_SUBSYS=INIT,P2P,ENV");
  config_reset_for_test();
  CHECK(strcmp(config_str(CFG_ALGO), "allreduce:ring") == 0, "ALGO '%s'", config_str(CFG_ALGO));
  CHECK(config_int(CFG_IB_TIMEOUT) == 18 && config_is_set(CFG_IB_TIMEOUT), "IB_TIMEOUT=abc gave %lld",
        (long long)config_int(CFG_IB_TIMEOUT));
  CHECK(config_int(CFG_NSOCKS) == 4, "NSOCKS 8x4 gave %lld, want the default 4", (long long)config_int(CFG_NSOCKS));
  CHECK(strcmp(config_source(CFG_NSOCKS), "default") == 0, "an invalid alias is the source '%s'",
        config_source(CFG_NSOCKS));
  char *log = slurp(logf);
  const char *want[] = {
      "WARN ENV config.c",
      "NCCL_ALGO=allreduce:tree,ring;broadcast:tree: tree has no xccl equivalent",
      "NCCL_NET_GDR_LEVEL=NVL: NVL has no xccl equivalent",
      "NCCL_NET=AWS Libfabric: AWS Libfabric has no xccl equivalent",
      "NCCL_IB_TIMEOUT=abc is not an integer; using the default 18",
      "NCCL_NSOCKS_PERTHREAD=8, NCCL_SOCKET_NTHREADS=4 (XCCL_NSOCKS=32) is outside [1, 16]; using the default 4",
      "NCCL_BUFFSIZE=1024 (XCCL_CHUNK_SIZE=128) is outside",
      "NCCL_DEBUG_SUBSYS=INIT,P2P,ENV: P2P has no xccl equivalent",
  };
  for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
    CHECK(count_occurrences(log, want[k]) >= 1 && (k == 0 || count_occurrences(log, want[k]) == 1),
          "log lacks (or repeats) '%s':\n%s", want[k], log);
  CHECK(strstr(log, "XCCL_IB_TIMEOUT=abc") == NULL, "a message names XCCL_ for an NCCL value:\n%s", log);
  free(log);

  /* NCCL_DEBUG's bad level is named on stderr, as XCCL_DEBUG's is. */
  char errf[128];
  log_path(errf, sizeof(errf), "alias_warn.stderr");
  fflush(stderr);
  int saved = dup(2);
  FILE *ef = fopen(errf, "w");
  if (ef && saved >= 0) {
    dup2(fileno(ef), 2);
    setenv("NCCL_DEBUG", "LOUD", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,BOGUS", 1);
    config_reset_for_test();
    config_load();
    fflush(stderr);
    dup2(saved, 2);
    fclose(ef);
    char *err = slurp(errf);
    CHECK(strstr(err, "NCCL_DEBUG=LOUD is not NONE, VERSION, WARN, INFO or TRACE; using WARN") &&
              strstr(err, "NCCL_DEBUG_SUBSYS: unknown subsystem 'BOGUS' ignored"),
          "stderr:\n%s", err);
    free(err);
  } else {
    CHECK(0, "cannot redirect stderr: %s", strerror(errno));
  }
  if (saved >= 0) close(saved);
}

/* XCCL_X wins over its alias: INFO when they agree, WARN when they differ;
 * the first alias of two wins likewise. */
static void scenario_alias_precedence(void) {
  char logf[128];
  log_path(logf, sizeof(logf), "alias_prec.log");
  setenv("XCCL_DEBUG", "INFO", 1);
  setenv("XCCL_DEBUG_FILE", logf, 1);
  set_list("XCCL_SOCKET_IFNAME=eth;NCCL_SOCKET_IFNAME=lo;XCCL_CHUNK_SIZE=512K;NCCL_BUFFSIZE=4194304;"
           "XCCL_NSOCKS=4;NCCL_NSOCKS_PERTHREAD=abc;NCCL_NET=IB;NCCL_IB_DISABLE=1;NCCL_ALGO=Tree;XCCL_ALGO=rd");
  config_reset_for_test();
  CHECK(strcmp(config_str(CFG_SOCKET_IFNAME), "eth") == 0 &&
            strcmp(config_source(CFG_SOCKET_IFNAME), "XCCL_SOCKET_IFNAME") == 0,
        "SOCKET_IFNAME '%s' from %s", config_str(CFG_SOCKET_IFNAME), config_source(CFG_SOCKET_IFNAME));
  CHECK(config_size(CFG_CHUNK_SIZE) == 524288 && config_int(CFG_NSOCKS) == 4, "CHUNK_SIZE %zu NSOCKS %lld",
        config_size(CFG_CHUNK_SIZE), (long long)config_int(CFG_NSOCKS));
  CHECK(strcmp(config_str(CFG_NET), "ib") == 0 && strcmp(config_source(CFG_NET), "NCCL_NET") == 0, "NET '%s' from %s",
        config_str(CFG_NET), config_source(CFG_NET));
  CHECK(strcmp(config_str(CFG_ALGO), "rd") == 0, "ALGO '%s'", config_str(CFG_ALGO));
  char *log = slurp(logf);
  CHECK(count_occurrences(log, "WARN ENV config.c:") >= 2 &&
            count_occurrences(log, "NCCL_SOCKET_IFNAME=lo is ignored: XCCL_SOCKET_IFNAME=eth is set and wins") == 1,
        "differing values: no single WARN; log:\n%s", log);
  CHECK(count_occurrences(log, "INFO ENV config.c") >= 1 &&
            count_occurrences(log, "NCCL_BUFFSIZE=4194304 is ignored: XCCL_CHUNK_SIZE is set") == 1,
        "equal values (512K, 4 MiB / 8): no single INFO; log:\n%s", log);
  CHECK(count_occurrences(log, "NCCL_NSOCKS_PERTHREAD=abc is ignored: XCCL_NSOCKS=4 is set and wins") == 1,
        "a bad alias beside XCCL_X: no WARN; log:\n%s", log);
  CHECK(count_occurrences(log, "NCCL_IB_DISABLE=1 is ignored: NCCL_NET=ib is set and wins") == 1,
        "second alias: no WARN; log:\n%s", log);
  CHECK(count_occurrences(log, "NCCL_ALGO=Tree is ignored: XCCL_ALGO=rd is set and wins") == 1, "ALGO; log:\n%s", log);
  CHECK(strstr(log, "is not an integer") == NULL, "the unused alias was checked; log:\n%s", log);
  free(log);
}

/* An NCCL_* variable without an xccl meaning: one INFO line (at INFO, from
 * XCCL_DEBUG or NCCL_DEBUG), none at WARN; xccl-info lists it. */
static void scenario_nccl_unmapped(void) {
  char info[128], warn[128], ninfo[128];
  log_path(info, sizeof(info), "unmapped_info.log");
  log_path(warn, sizeof(warn), "unmapped_warn.log");
  log_path(ninfo, sizeof(ninfo), "unmapped_ninfo.log");
  set_list("NCCL_FOO=1;NCCL_IB_PKEY=1;NCCL_SOCKET_IFNAME=lo");

  setenv("XCCL_DEBUG", "INFO", 1);
  setenv("XCCL_DEBUG_FILE", info, 1);
  config_reset_for_test();
  config_load();
  setenv("XCCL_DEBUG", "WARN", 1);
  setenv("XCCL_DEBUG_FILE", warn, 1);
  config_reset_for_test();
  config_load();
  unsetenv("XCCL_DEBUG");
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("XCCL_DEBUG_FILE", ninfo, 1);
  config_reset_for_test();
  config_load();

  const char *files[] = {info, ninfo};
  for (int f = 0; f < 2; f++) {
    char *log = slurp(files[f]);
    CHECK(count_occurrences(log, "NCCL_FOO") == 1 &&
              count_occurrences(log, "INFO ENV config.c:") >= 1 &&
              strstr(log, "NCCL_FOO is ignored: xccl has no setting with its meaning"),
          "%s: not exactly one INFO line for NCCL_FOO:\n%s", files[f], log);
    CHECK(count_occurrences(log, "NCCL_IB_PKEY is ignored: it is an index") == 1, "NCCL_IB_PKEY's note:\n%s", log);
    CHECK(strstr(log, "WARN ENV") == NULL, "%s: a WARN:\n%s", files[f], log);
    CHECK(strstr(log, "NCCL_SOCKET_IFNAME is ignored") == NULL, "an alias called ignored:\n%s", log);
    free(log);
  }
  struct stat st = {0};
  CHECK(stat(warn, &st) == 0 && st.st_size == 0, "at WARN the unmapped variables wrote %lld bytes",
        (long long)st.st_size);

  char *printed = NULL, line[512];
  size_t plen = 0;
  FILE *mf = open_memstream(&printed, &plen);
  if (mf) {
    config_print(mf);
    fclose(mf);
    const char *sect = strstr(printed, "NCCL variables set that xccl ignores");
    CHECK(sect && strstr(sect, "\n  NCCL_FOO\n") && strstr(sect, "\n  NCCL_IB_PKEY\n") &&
              !strstr(sect, "NCCL_SOCKET_IFNAME") && !strstr(sect, "NCCL_DEBUG"),
          "print: ignored section:\n%s", sect ? sect : printed);
    CHECK(print_line(printed, "XCCL_SOCKET_IFNAME ", line, sizeof(line)) && strstr(line, " lo ") &&
              strstr(line, " NCCL_SOCKET_IFNAME "),
          "print: SOCKET_IFNAME line '%s'", line);
    CHECK(print_line(printed, "XCCL_DEBUG_FILE ", line, sizeof(line)) && strstr(line, " XCCL_DEBUG_FILE "),
          "print: DEBUG_FILE line '%s'", line);
    CHECK(print_line(printed, "XCCL_TIMEOUT ", line, sizeof(line)) && strstr(line, " default "),
          "print: TIMEOUT line '%s'", line);
    CHECK(print_line(printed, "  NCCL_IB_PKEY_VALUE ", line, sizeof(line)) && strstr(line, " XCCL_IB_PKEY "),
          "print: the alias section lacks NCCL_IB_PKEY_VALUE -> XCCL_IB_PKEY ('%s')", line);
  }
  free(printed);
}

/* Shared settings from an alias travel and compare like XCCL's own. */
static void scenario_alias_shared(void) {
  config_shared_t none = shared_with(NULL, NULL);
  const char *pairs[][2] = {{"NCCL_ALGO=Ring", "XCCL_ALGO=ring"},
                            {"NCCL_MIN_NCHANNELS=4", "XCCL_MIN_NCHANNELS=4"},
                            {"NCCL_P2P_DISABLE=1", "XCCL_P2P_DISABLE=1"},
                            {"NCCL_NET_GDR_LEVEL=3", "XCCL_NET_GDR_LEVEL=PHB"},
                            {"NCCL_BUFFSIZE=8388608", "XCCL_CHUNK_SIZE=1M"},
                            {"NCCL_NET=Socket", "XCCL_NET=socket"}};
  const config_id_t ids[] = {CFG_ALGO, CFG_MIN_NCHANNELS, CFG_P2P_DISABLE, CFG_NET_GDR_LEVEL, CFG_CHUNK_SIZE, CFG_NET};
  for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
    config_shared_t s[2];
    for (int j = 0; j < 2; j++) {
      clear_env();
      set_list(pairs[k][j]);
      config_reset_for_test();
      config_shared_pack(&s[j]);
    }
    CHECK(config_shared_diff(&s[0], &s[1]) == CFG_COUNT, "%s and %s differ", pairs[k][0], pairs[k][1]);
    CHECK(config_shared_diff(&none, &s[0]) == ids[k], "%s: agrees with the defaults (first difference %d)",
          pairs[k][0], (int)config_shared_diff(&none, &s[0]));
  }
}

/* xcclResetDebugInit reads the log settings again, aliases included, while
 * another thread logs; config_str keeps the first load's values. */
static _Atomic int pinger_stop;
static void *pinger(void *arg) {
  int *n = arg;
  while (!pinger_stop) {
    XLOG(LOG_INFO, LOG_NET, "ping %d", *n);
    ++*n;
  }
  return NULL;
}

static void scenario_reset_debug(void) {
  char f1[128], f2[128], f3[128];
  log_path(f1, sizeof(f1), "reset1.log");
  log_path(f2, sizeof(f2), "reset2.log");
  log_path(f3, sizeof(f3), "reset3.log");
  setenv("XCCL_DEBUG", "WARN", 1);
  setenv("XCCL_DEBUG_FILE", f1, 1);
  config_reset_for_test();
  config_load();
  CHECK(!log_enabled(LOG_INFO, LOG_NET), "INFO on at WARN");

  setenv("XCCL_DEBUG", "INFO", 1);
  xcclResetDebugInit();
  CHECK(log_enabled(LOG_INFO, LOG_NET) && !log_enabled(LOG_TRACE, LOG_NET), "XCCL_DEBUG=INFO not applied");
  XLOG(LOG_INFO, LOG_NET, "after the first reset");
  CHECK(strcmp(config_str(CFG_DEBUG), "WARN") == 0, "config_str(DEBUG) changed to '%s'", config_str(CFG_DEBUG));

  unsetenv("XCCL_DEBUG");
  unsetenv("XCCL_DEBUG_FILE");
  set_list("NCCL_DEBUG=TRACE;NCCL_DEBUG_SUBSYS=^NET");
  setenv("NCCL_DEBUG_FILE", f2, 1);
  xcclResetDebugInit();
  CHECK(log_enabled(LOG_TRACE, LOG_INIT) && !log_enabled(LOG_WARN, LOG_NET), "NCCL_DEBUG=TRACE, ^NET not applied");
  XLOG(LOG_INFO, LOG_INIT, "after the second reset");
  char *l1 = slurp(f1), *l2 = slurp(f2);
  CHECK(strstr(l1, "after the first reset") && !strstr(l1, "after the second reset"), "first file:\n%s", l1);
  CHECK(strstr(l2, "after the second reset") && !strstr(l2, "after the first reset"), "second file:\n%s", l2);
  free(l1);
  free(l2);

  /* Resets between two files while a thread logs: every line lands in one. */
  set_list("NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=ALL");
  setenv("NCCL_DEBUG_FILE", f3, 1);
  xcclResetDebugInit(); /* every line from here on is logged */
  int n = 0;
  pthread_t t;
  pinger_stop = 0;
  CHECK(pthread_create(&t, NULL, pinger, &n) == 0, "pthread_create");
  for (int k = 0; k < 40; k++) {
    setenv("NCCL_DEBUG_FILE", k % 2 ? f2 : f3, 1);
    xcclResetDebugInit();
    usleep(500);
  }
  pinger_stop = 1;
  pthread_join(t, NULL);
  l2 = slurp(f2);
  char *l3 = slurp(f3);
  int got = count_occurrences(l2, " ping ") + count_occurrences(l3, " ping ");
  CHECK(n > 0 && got == n, "%d lines logged, %d in the files", n, got);
  free(l2);
  free(l3);
}

int main(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/xccl_test_config.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }

  test_parse_int();
  test_parse_size();
  test_parse_double();
  test_parse_bool();
  test_parse_misc();
  test_nearest();

  /* Each in a child with a clean XCCL_* environment and fresh globals. */
  test_run_in_child("basic", clear_env, scenario_basic);
  test_run_in_child("fallbacks", clear_env, scenario_fallbacks);
  test_run_in_child("levels", clear_env, scenario_levels);
  test_run_in_child("reload", clear_env, scenario_reload);
  test_run_in_child("foreign", clear_env, scenario_foreign);
  test_run_in_child("shared", clear_env, scenario_shared);
  test_run_in_child("alias_each", clear_env, scenario_alias_each);
  test_run_in_child("alias_warnings", clear_env, scenario_alias_warnings);
  test_run_in_child("alias_precedence", clear_env, scenario_alias_precedence);
  test_run_in_child("nccl_unmapped", clear_env, scenario_nccl_unmapped);
  test_run_in_child("alias_shared", clear_env, scenario_alias_shared);
  test_run_in_child("reset_debug", clear_env, scenario_reset_debug);

  remove_tmpdir();
  return test_finish("test_config");
}
