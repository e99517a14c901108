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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "test_util.h"

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
  test_run_in_child("basic", clear_xccl_env, scenario_basic);
  test_run_in_child("fallbacks", clear_xccl_env, scenario_fallbacks);
  test_run_in_child("levels", clear_xccl_env, scenario_levels);
  test_run_in_child("reload", clear_xccl_env, scenario_reload);
  test_run_in_child("foreign", clear_xccl_env, scenario_foreign);
  test_run_in_child("shared", clear_xccl_env, scenario_shared);

  remove_tmpdir();
  return test_finish("test_config");
}
