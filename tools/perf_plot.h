/*
 * perf_plot.h — xccl-perf --plot FILE: rank 0 keeps its result rows (the
 * --json lines) in a temporary file and, after the last size, has xccl-plot
 * (tools/xccl-plot, matplotlib) draw bus bandwidth against size into FILE.
 */
#ifndef XCCL_TOOLS_PERF_PLOT_H
#define XCCL_TOOLS_PERF_PLOT_H

#include <stdio.h>

typedef struct {
  const char *png;  /* --plot's file */
  char tmp[64];     /* the rows, until drawn */
  FILE *rows;       /* open on tmp; NULL: not plotting */
} perf_plot_t;

/* 0 if png's folder can be written; -1 after saying why on stderr. */
int perf_plot_check(const char *png);
/* Opens the rows' file for png; -1 after saying why on stderr. */
int perf_plot_open(perf_plot_t *pl, const char *png);
/* Runs xccl-plot on the rows (the one beside this program, else PATH's),
 * titled title, and removes them; -1 after saying why (xccl-plot says its
 * own reasons, a missing matplotlib among them). */
int perf_plot_draw(perf_plot_t *pl, const char *title);

#endif
