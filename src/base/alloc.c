/* Aligned allocations and the scratch arena. */
#include "base/alloc.h"

#include "hyla.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

#define HY_HUGE_PAGE ((size_t)2 << 20)
#define HY_PAGE ((size_t)4096)

static size_t page_bytes(size_t bytes) { return bytes ? (bytes + HY_PAGE - 1) / HY_PAGE * HY_PAGE : HY_PAGE; }

void *hy_alloc_pages(size_t bytes) {
    if (bytes > SIZE_MAX / 2) return NULL;
    const size_t len = page_bytes(bytes), span = len + HY_HUGE_PAGE;
    unsigned char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    /* keep the 2 MiB-aligned part only, so huge pages can back it from its first byte */
    unsigned char *p = (unsigned char *)(((uintptr_t)m + HY_HUGE_PAGE - 1) & ~(uintptr_t)(HY_HUGE_PAGE - 1));
    if (p > m) munmap(m, (size_t)(p - m));
    if (m + span > p + len) munmap(p + len, (size_t)(m + span - (p + len)));
#ifdef MADV_HUGEPAGE
    if (len >= HY_HUGE_PAGE) (void)madvise(p, len, MADV_HUGEPAGE); /* a hint: 4 KiB pages if refused */
#endif
    return p;
}

void hy_free_pages(void *p, size_t bytes) {
    if (p) munmap(p, page_bytes(bytes));
}

long long hy_mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    fclose(f);
    return kib >= 0 ? kib * 1024 : -1;
}

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
