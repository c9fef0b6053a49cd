/*
 * Aligned allocation for tensors and scratch. Everything the kernels touch is
 * 64-byte aligned (one cache line, one AVX-512 register). Callers own what
 * they allocate and release it with hy_free.
 */
#ifndef HY_BASE_ALLOC_H
#define HY_BASE_ALLOC_H

#include <stddef.h>

#define HY_ALIGN 64

/* Returns NULL on failure or overflow (n*size). Memory is zeroed. */
void *hy_calloc_aligned(size_t n, size_t size);
void hy_free(void *p);

/* Large, long-lived buffers the kernels stream (the weights; a sequence's GDN state): anonymous pages
 * of their own, 2 MiB aligned and, from 2 MiB on, advised for transparent huge pages. Decode
 * reads every weight byte once per token; on 4 KiB pages that is a TLB miss every 4 KiB, and
 * two threads streaming 512 MiB read 10-20% less per second than on huge pages here (Zen 4,
 * alternated), 30-50% less in fast-memory minutes.
 * Zeroed. NULL on failure. Release with hy_free_pages and the same byte count. */
void *hy_alloc_pages(size_t bytes);
void hy_free_pages(void *p, size_t bytes);

/* Bytes the kernel estimates can be allocated without swapping (MemAvailable of
 * /proc/meminfo), or -1 where that is not known. */
long long hy_mem_available(void);

/* Bump arena for per-step scratch: reset each step, never freed piecewise. */
typedef struct hy_arena {
    unsigned char *base;
    size_t cap, used, high_water;
} hy_arena;

int hy_arena_init(hy_arena *a, size_t cap);
void hy_arena_release(hy_arena *a);
/* 64-byte aligned, NOT zeroed; returns NULL when the arena is exhausted. */
void *hy_arena_alloc(hy_arena *a, size_t bytes);
static inline void hy_arena_reset(hy_arena *a) { a->used = 0; }

#endif
