/* Per-sequence KV cache, head-major with transposed key blocks (see kv_cache.h). */
#include "memory/kv_cache.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static float *map_zero(size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int hy_kv_cache_create(hy_kv_cache **out, int n_layers, int max_tokens, int n_heads, int head_dim, hy_err *err) {
    *out = NULL;
    if (n_layers < 0 || max_tokens < 1 || n_heads < 1 || head_dim < 1)
        return hy_err_set(err, HY_E_INVALID, "kv cache: bad sizes (layers %d, max_tokens %d, heads %d, head_dim %d)",
                          n_layers, max_tokens, n_heads, head_dim);
    if (max_tokens > INT_MAX - HY_KV_BLOCK || n_heads > INT_MAX / head_dim)
        return hy_err_set(err, HY_E_NOMEM, "kv cache: %d tokens x %d heads x %d dims overflows", max_tokens, n_heads,
                          head_dim);
    const int n_blocks = (max_tokens + HY_KV_BLOCK - 1) / HY_KV_BLOCK;
    /* floats of k (and of v): layers x heads x whole blocks x head_dim */
    size_t per = (size_t)n_layers * (size_t)n_heads * (size_t)n_blocks * HY_KV_BLOCK;
    if (per && (size_t)head_dim > SIZE_MAX / sizeof(float) / per)
        return hy_err_set(err, HY_E_NOMEM, "kv cache: %d layers x %d tokens x %d heads x %d dims overflows", n_layers,
                          max_tokens, n_heads, head_dim);
    size_t bytes = per * (size_t)head_dim * sizeof(float);
    hy_kv_cache *kv = calloc(1, sizeof *kv);
    if (!kv) return hy_err_set(err, HY_E_NOMEM, "kv cache: out of memory");
    kv->n_layers = n_layers;
    kv->max_tokens = max_tokens;
    kv->n_heads = n_heads;
    kv->head_dim = head_dim;
    kv->kv_dim = n_heads * head_dim;
    kv->n_blocks = n_blocks;
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

void hy_kv_cache_put(const hy_kv_cache *kv, int layer, int head, int pos, const float *k, const float *v) {
    const int dh = kv->head_dim;
    float *kb = hy_kv_cache_kcol(kv, layer, head, pos);
    for (int d = 0; d < dh; d++) kb[(size_t)d * HY_KV_BLOCK] = k[d];
    memcpy(hy_kv_cache_vh(kv, layer, head) + (size_t)pos * (size_t)dh, v, (size_t)dh * sizeof(float));
}

void hy_kv_cache_get_pos(const hy_kv_cache *kv, int layer, int pos, float *k, float *v) {
    const int dh = kv->head_dim;
    for (int h = 0; h < kv->n_heads; h++) {
        const float *kb = hy_kv_cache_kcol(kv, layer, h, pos);
        for (int d = 0; d < dh; d++) k[(size_t)h * dh + d] = kb[(size_t)d * HY_KV_BLOCK];
        memcpy(v + (size_t)h * dh, hy_kv_cache_vh(kv, layer, h) + (size_t)pos * (size_t)dh, (size_t)dh * sizeof(float));
    }
}

void hy_kv_cache_set_pos(const hy_kv_cache *kv, int layer, int pos, const float *k, const float *v) {
    for (int h = 0; h < kv->n_heads; h++)
        hy_kv_cache_put(kv, layer, h, pos, k + (size_t)h * kv->head_dim, v + (size_t)h * kv->head_dim);
}

void hy_kv_cache_copy(hy_kv_cache *dst, const hy_kv_cache *src, int n) {
    if (n <= 0) return;
    const size_t dh = (size_t)src->head_dim, nb = (size_t)(n + HY_KV_BLOCK - 1) / HY_KV_BLOCK;
    for (int l = 0; l < src->n_layers; l++)
        for (int h = 0; h < src->n_heads; h++) {
            /* whole key blocks (a partial block's later columns are scored but masked: never weighted) */
            memcpy(hy_kv_cache_kt(dst, l, h), hy_kv_cache_kt(src, l, h), nb * dh * HY_KV_BLOCK * sizeof(float));
            memcpy(hy_kv_cache_vh(dst, l, h), hy_kv_cache_vh(src, l, h), (size_t)n * dh * sizeof(float));
        }
}
