/* Aligned allocations and the scratch arena. */
#include "base/alloc.h"

#include "hyla.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *hy_calloc_aligned(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    size_t rounded = (bytes + HY_ALIGN - 1) / HY_ALIGN * HY_ALIGN;
    if (rounded == 0) rounded = HY_ALIGN;
    void *p = aligned_alloc(HY_ALIGN, rounded);
    if (p) memset(p, 0, rounded);
    return p;
}

void hy_free(void *p) { free(p); }

int hy_arena_init(hy_arena *a, size_t cap) {
    memset(a, 0, sizeof *a);
    a->base = hy_calloc_aligned(1, cap);
    if (!a->base) return HY_E_NOMEM;
    a->cap = cap;
    return HY_OK;
}

void hy_arena_release(hy_arena *a) {
    hy_free(a->base);
    memset(a, 0, sizeof *a);
}

void *hy_arena_alloc(hy_arena *a, size_t bytes) {
    size_t off = (a->used + HY_ALIGN - 1) / HY_ALIGN * HY_ALIGN;
    if (off > a->cap || bytes > a->cap - off) return NULL;
    a->used = off + bytes;
    if (a->used > a->high_water) a->high_water = a->used;
    return a->base + off;
}
