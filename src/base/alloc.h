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
