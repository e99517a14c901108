/*
 * xccl_stuck.h — what the two halves of xccl-stuck share: one rank's dump as
 * read from its file (xccl_stuck_parse.c reads and checks it; xccl_stuck.c
 * builds the wait-for graph from many and names the culprit).
 *
 * Errors end the program: every function here that meets bad input or runs
 * out of memory prints "xccl-stuck: ..." on stderr and exits 2 (but
 * stuck_parse_dump, which returns bad input as a sentence: the fuzz target's).
 */
#ifndef XCCL_TOOLS_XCCL_STUCK_H
#define XCCL_TOOLS_XCCL_STUCK_H

#include <stddef.h>
#include <stdint.h>

#define MAX_WAITS 64 /* wait records kept per dump */

enum { RUN_IDLE, RUN_RUNNING, RUN_FAILED };

typedef struct {
  int peer, is_recv, channel, action, item;
  uint64_t step, loop;
  double since; /* monotonic; < 0: unknown */
} wait_t;

typedef struct {
  int rank;
  long pid;
  char host[64];
} peer_t;

typedef struct {
  char *file;
  char host[64], reason[16];
  long pid;
  double realtime, monotonic;
  uint64_t id;
  int rank, nranks, prev, next;
  int run, torn, total_waits;
  uint64_t done;
  int has_op;
  char op_name[32], type[16], redop[16], algo[16];
  uint64_t seq, count;
  int root, op_peer, nops;
  wait_t waits[MAX_WAITS];
  int nwaits;
  int has_fail;
  char fail_kind[16];
  wait_t fail;
  char error[1100];
  peer_t *peers;
  int npeers;
  int superseded; /* a newer dump of the same rank was given */
} dump_t;

/* The dumps read so far, in the order given. */
typedef struct {
  dump_t *v;
  int n, cap;
} dumps_t;

/* Prints "xccl-stuck: " and the message on stderr and exits with code. */
void stuck_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* calloc that never returns NULL (a zero n or size allocates one byte); the
 * caller frees the memory. */
void *stuck_xcalloc(size_t n, size_t size);

/* Reads the dump at path, or every xccl-*.dump file in the directory path (in
 * the order of their names), and appends each to ds, whose memory grows as
 * needed. Each dump added owns its file and peers (the caller frees both, and
 * ds->v). A file that is unreadable, too large or not a well-formed dump
 * (named with its file) ends the program. */
void stuck_add_path(dumps_t *ds, const char *path);

/* Reads one dump (the JSON of src/observe/dump.h) from text, len bytes, into
 * d; file names it in messages. 0, with d owning its file and peers (see
 * stuck_dump_free); or -1 with a sentence that names file in why (whylen
 * bytes), d owning nothing. Never exits, but on running out of memory. */
int stuck_parse_dump(const char *file, const char *text, size_t len, dump_t *d, char *why, size_t whylen);

/* Frees what a parsed dump owns (its file and peers). */
void stuck_dump_free(dump_t *d);

#endif
