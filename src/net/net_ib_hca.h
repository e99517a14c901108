/*
 * net_ib_hca.h — XCCL_IB_HCA, the verbs devices and ports the ib transport
 * may use, written as NCCL users write NCCL_IB_HCA:
 *
 *   mlx5_0:1,mlx5_1     device mlx5_0 port 1, and every port of mlx5_1
 *   mlx5                every device whose name starts with mlx5
 *   =mlx5_1             exact names only (mlx5_10 does not match)
 *   ^mlx5_2             every device but mlx5_2 (^= for exact exclusion)
 *
 * Pure string handling, no verbs: built and unit-tested everywhere.
 */
#ifndef XCCL_NET_IB_HCA_H
#define XCCL_NET_IB_HCA_H

#include <stddef.h>
#include <stdint.h>

#define IB_HCA_MAX 32

typedef struct {
  int exclude; /* ^: the list says what not to use */
  int exact;   /* =: names match whole, not as prefixes */
  int n;       /* entries; 0 = no filter */
  struct {
    char name[64];
    int port; /* 0 = every port */
  } e[IB_HCA_MAX];
} ib_hca_filter_t;

/* Parses spec ("" or NULL: no filter). Returns 0 and writes *f, or -1 with
 * a sentence in why (f untouched). */
int ib_hca_parse(const char *spec, ib_hca_filter_t *f, char *why, size_t whylen);

/* 1 when device `dev`, port `port` passes the filter. */
int ib_hca_match(const ib_hca_filter_t *f, const char *dev, int port);

/* XCCL_IB_ADDR_RANGE: a CIDR range ("10.0.0.0/8", "fd00::/8"); family 0 =
 * no range. */
typedef struct {
  int family; /* AF_INET, AF_INET6, or 0 */
  uint8_t addr[16];
  int prefix;
} ib_addr_range_t;

/* Parses spec ("" or NULL: no range). 0 and *r, or -1 with a sentence. */
int ib_addr_range_parse(const char *spec, ib_addr_range_t *r, char *why, size_t whylen);
/* 1 when addr (4 bytes for AF_INET, 16 for AF_INET6) of that family lies in
 * r (always, for no range). */
int ib_addr_range_has(const ib_addr_range_t *r, int family, const uint8_t *addr);
/* XCCL_IB_ADDR_FAMILY: "" (0), "AF_INET", "AF_INET6" (also "4"/"6", any
 * case). 0 and *family, or -1 with a sentence. */
int ib_addr_family_parse(const char *spec, int *family, char *why, size_t whylen);

/* A port's link speed in Mb/s from its width code (ibv_port_attr's
 * active_width) and per-lane speed code (active_speed, or active_speed_ex
 * where rdma-core has it: XDR's code 256 does not fit active_speed's byte).
 * 0 for a code this table does not know. */
int ib_speed_mbps(int width_code, unsigned speed_code);

/* The kernel's own reading of a port's rate, /sys/class/infiniband/DEV/
 * ports/N/rate ("400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)"), in Mb/s;
 * 0 when the text is not such a rate. For speed codes newer than the table. */
int ib_rate_text_mbps(const char *text);

#endif
