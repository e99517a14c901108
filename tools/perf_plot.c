/* perf_plot.c — xccl-perf --plot (perf_plot.h). */
#include "perf_plot.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int perf_plot_check(const char *png) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof(dir), "%s", png);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof(dir), ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  if (access(dir, W_OK) != 0) {
    fprintf(stderr, "xccl-perf: --plot %s: cannot write in %s: %s\n", png, dir, strerror(errno));
    return -1;
  }
  return 0;
}

int perf_plot_open(perf_plot_t *pl, const char *png) {
  memset(pl, 0, sizeof(*pl));
  snprintf(pl->tmp, sizeof(pl->tmp), "/tmp/xccl-perf-rows.XXXXXX");
  int fd = mkstemp(pl->tmp);
  if (fd < 0 || !(pl->rows = fdopen(fd, "w"))) {
    fprintf(stderr, "xccl-perf: --plot: cannot make a temporary file in /tmp: %s\n", strerror(errno));
    if (fd >= 0) close(fd), unlink(pl->tmp);
    return -1;
  }
  pl->png = png;
  return 0;
}

/* xccl-plot beside this program, where the build tree and the install put
 * it; else the name alone, for PATH. */
static void plot_program(char *out, size_t len) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      snprintf(out, len, "%s/xccl-plot", self);
      if (access(out, X_OK) == 0) return;
    }
  }
  snprintf(out, len, "xccl-plot");
}

int perf_plot_draw(perf_plot_t *pl, const char *title) {
  if (!pl->rows) return 0;
  int rc = fclose(pl->rows) == 0 ? 0 : -1;
  pl->rows = NULL;
  char prog[PATH_MAX + 16];
  plot_program(prog, sizeof(prog));
  fflush(stdout);
  pid_t pid = rc == 0 ? fork() : -1;
  if (pid == 0) {
    char *argv[] = {prog, "-o", (char *)pl->png, "--title", (char *)title, pl->tmp, NULL};
    execvp(prog, argv);
    fprintf(stderr, "xccl-perf: --plot: cannot run %s: %s\n", prog, strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (pid < 0) fprintf(stderr, "xccl-perf: --plot: cannot start xccl-plot: %s\n", strerror(errno));
    else fprintf(stderr, "xccl-perf: --plot %s: xccl-plot failed (its reason above)\n", pl->png);
    rc = -1;
  }
  unlink(pl->tmp);
  return rc;
}
