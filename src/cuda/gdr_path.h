/*
 * gdr_path.h — may a NIC read and write a GPU's memory directly (GPUDirect
 * RDMA), or must device data be staged through host memory? A pure
 * decision from the transport's abilities, the topology's path between the
 * GPU and the NIC, and XCCL_NET_GDR_LEVEL; built with or without CUDA, so
 * that it is tested on the topology files of real servers.
 */
#ifndef XCCL_CORE_GDR_PATH_H
#define XCCL_CORE_GDR_PATH_H

#include <stddef.h>

#include "net.h"
#include "topo.h"

#define GDR_LEVEL_LOC (-1) /* never */

/* XCCL_NET_GDR_LEVEL's words: LOC, PIX, PXB, PHB, SYS (any case), as the
 * farthest path kind allowed (GDR_LEVEL_LOC for LOC). 0, or -1 for another
 * word. */
int gdr_level_parse(const char *word, int *level_p);

/* 1 when GPU memory of the GPU at gpu_busid ("0000:17:00.0") may move
 * straight to and from net device p: the transport takes GPU pointers, and
 * the topology's path between the two is no farther than level (a GPU or NIC
 * the topology does not show, or no topology: only at SYS). why gets the
 * reason in words, either way. sys may be NULL. */
int gdr_allowed(const topo_system_t *sys, const char *gpu_busid, const net_props_t *p, int level, char *why,
                size_t len);

#endif
