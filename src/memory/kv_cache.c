/* Contiguous per-sequence KV cache (see kv_cache.h). */
#include "memory/kv_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

static float *map_zero(size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int hy_kv_cache_create(hy_kv_cache **out, int n_layers, int max_tokens, int kv_dim, hy_err *err) {
    *out = NULL;
    if (n_layers < 0 || max_tokens < 1 || kv_dim < 1)
        return hy_err_set(err, HY_E_INVALID, "kv cache: bad sizes (layers %d, max_tokens %d, kv_dim %d)", n_layers,
                          max_tokens, kv_dim);
    size_t per = (size_t)n_layers * (size_t)max_tokens;
    if (per && (size_t)kv_dim > SIZE_MAX / sizeof(float) / per)
        return hy_err_set(err, HY_E_NOMEM, "kv cache: %d layers x %d tokens x %d overflows", n_layers, max_tokens,
                          kv_dim);
    size_t bytes = per * (size_t)kv_dim * sizeof(float);
    hy_kv_cache *kv = calloc(1, sizeof *kv);
    if (!kv) return hy_err_set(err, HY_E_NOMEM, "kv cache: out of memory");
    kv->n_layers = n_layers;
    kv->max_tokens = max_tokens;
    kv->kv_dim = kv_dim;
    if (bytes) {
        kv->k = map_zero(bytes);
        kv->v = map_zero(bytes);
        if (!kv->k || !kv->v) {
            hy_kv_cache_free(kv);
            return hy_err_set(err, HY_E_NOMEM, "kv cache: cannot reserve 2 x %zu bytes (%d tokens)", bytes,
                              max_tokens);
        }
    }
    kv->bytes = 2 * bytes;
    *out = kv;
    return HY_OK;
}

void hy_kv_cache_free(hy_kv_cache *kv) {
    if (!kv) return;
    if (kv->k) munmap(kv->k, kv->bytes / 2);
    if (kv->v) munmap(kv->v, kv->bytes / 2);
    free(kv);
}
