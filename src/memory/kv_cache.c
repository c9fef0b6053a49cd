/* Per-sequence KV cache, head-major with transposed key blocks (see kv_cache.h). */
#include "memory/kv_cache.h"

#include "base/fp.h"
#include "kernels/matmul.h" /* hy_fp8_e4m3_encode */

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const char *hy_kv_type_name(hy_kv_type t) { return t == HY_KV_FP8 ? "fp8" : t == HY_KV_BF16 ? "bf16" : "f32"; }

size_t hy_kv_type_bytes(hy_kv_type t) { return t == HY_KV_F32 ? 4 : t == HY_KV_BF16 ? 2 : t == HY_KV_FP8 ? 1 : 0; }

int hy_kv_type_parse(const char *s, hy_kv_type *out) {
    if (!s) return -1;
    if (!strcmp(s, "f32") || !strcmp(s, "fp32")) *out = HY_KV_F32;
    else if (!strcmp(s, "bf16")) *out = HY_KV_BF16;
    else if (!strcmp(s, "fp8") || !strcmp(s, "fp8_e4m3")) *out = HY_KV_FP8;
    else return -1;
    return 0;
}

static void *map_zero(size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int hy_kv_cache_create(hy_kv_cache **out, int n_layers, int max_tokens, int n_heads, int head_dim, hy_kv_type type,
                       hy_err *err) {
    *out = NULL;
    const size_t es = hy_kv_type_bytes(type);
    if (!es) return hy_err_set(err, HY_E_INVALID, "kv cache: unknown type %d", (int)type);
    if (n_layers < 0 || max_tokens < 1 || n_heads < 1 || head_dim < 1)
        return hy_err_set(err, HY_E_INVALID, "kv cache: bad sizes (layers %d, max_tokens %d, heads %d, head_dim %d)",
                          n_layers, max_tokens, n_heads, head_dim);
    if (max_tokens > INT_MAX - HY_KV_BLOCK || n_heads > INT_MAX / head_dim)
        return hy_err_set(err, HY_E_NOMEM, "kv cache: %d tokens x %d heads x %d dims overflows", max_tokens, n_heads,
                          head_dim);
    const int n_blocks = (max_tokens + HY_KV_BLOCK - 1) / HY_KV_BLOCK;
    /* elements of k (and of v): layers x heads x whole blocks x head_dim */
    size_t per = (size_t)n_layers * (size_t)n_heads * (size_t)n_blocks * HY_KV_BLOCK;
    if (per && (size_t)head_dim > SIZE_MAX / es / per)
        return hy_err_set(err, HY_E_NOMEM, "kv cache: %d layers x %d tokens x %d heads x %d dims overflows", n_layers,
                          max_tokens, n_heads, head_dim);
    size_t bytes = per * (size_t)head_dim * es;
    hy_kv_cache *kv = calloc(1, sizeof *kv);
    if (!kv) return hy_err_set(err, HY_E_NOMEM, "kv cache: out of memory");
    kv->type = type;
    kv->es = es;
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

/* stored: bf16 nearest even (NaN quieted), e4m3fn nearest even saturating (base/fp.h's
 * hy_f32_to_fp8_e4m3, through its bit-level twin hy_fp8_e4m3_encode: every K and V element of
 * every token goes through here) */
static void put_elem(const hy_kv_cache *kv, void *base, size_t i, float x) {
    if (kv->type == HY_KV_FP8) ((uint8_t *)base)[i] = hy_fp8_e4m3_encode(x);
    else if (kv->type == HY_KV_BF16) ((uint16_t *)base)[i] = hy_f32_to_bf16(x);
    else ((float *)base)[i] = x;
}
static float get_elem(const hy_kv_cache *kv, const void *base, size_t i) {
    if (kv->type == HY_KV_FP8) return hy_fp8_e4m3_to_f32(((const uint8_t *)base)[i]);
    return kv->type == HY_KV_BF16 ? hy_bf16_to_f32(((const uint16_t *)base)[i]) : ((const float *)base)[i];
}
/* the element index of position pos's key dim 0 in its head's key blocks (dim d: + d * HY_KV_BLOCK) */
static size_t kcol(const hy_kv_cache *kv, int pos) {
    return (size_t)(pos / HY_KV_BLOCK) * (size_t)kv->head_dim * HY_KV_BLOCK + (size_t)(pos % HY_KV_BLOCK);
}

void hy_kv_cache_put(const hy_kv_cache *kv, int layer, int head, int pos, const float *k, const float *v) {
    const int dh = kv->head_dim;
    void *kt = hy_kv_cache_kt(kv, layer, head), *vh = hy_kv_cache_vh(kv, layer, head);
    const size_t kc = kcol(kv, pos), vr = (size_t)pos * (size_t)dh;
    if (kv->type == HY_KV_F32) {
        float *kb = (float *)kt + kc;
        for (int d = 0; d < dh; d++) kb[(size_t)d * HY_KV_BLOCK] = k[d];
        memcpy((float *)vh + vr, v, (size_t)dh * sizeof(float));
        return;
    }
    for (int d = 0; d < dh; d++) {
        put_elem(kv, kt, kc + (size_t)d * HY_KV_BLOCK, k[d]);
        put_elem(kv, vh, vr + (size_t)d, v[d]);
    }
}

void hy_kv_cache_get_pos(const hy_kv_cache *kv, int layer, int pos, float *k, float *v) {
    const int dh = kv->head_dim;
    const size_t kc = kcol(kv, pos), vr = (size_t)pos * (size_t)dh;
    for (int h = 0; h < kv->n_heads; h++) {
        const void *kt = hy_kv_cache_kt(kv, layer, h), *vh = hy_kv_cache_vh(kv, layer, h);
        for (int d = 0; d < dh; d++) {
            k[(size_t)h * dh + d] = get_elem(kv, kt, kc + (size_t)d * HY_KV_BLOCK);
            v[(size_t)h * dh + d] = get_elem(kv, vh, vr + (size_t)d);
        }
    }
}

void hy_kv_cache_read_pos(const hy_kv_cache *kv, int layer, int pos, void *k, void *v) {
    const size_t dh = (size_t)kv->head_dim, es = kv->es, kc = kcol(kv, pos), vr = (size_t)pos * dh;
    for (int h = 0; h < kv->n_heads; h++) {
        const char *kt = hy_kv_cache_kt(kv, layer, h), *vh = hy_kv_cache_vh(kv, layer, h);
        char *kd = (char *)k + (size_t)h * dh * es;
        for (size_t d = 0; d < dh; d++) memcpy(kd + d * es, kt + (kc + d * HY_KV_BLOCK) * es, es);
        memcpy((char *)v + (size_t)h * dh * es, vh + vr * es, dh * es);
    }
}

void hy_kv_cache_write_pos(const hy_kv_cache *kv, int layer, int pos, const void *k, const void *v) {
    const size_t dh = (size_t)kv->head_dim, es = kv->es, kc = kcol(kv, pos), vr = (size_t)pos * dh;
    for (int h = 0; h < kv->n_heads; h++) {
        char *kt = hy_kv_cache_kt(kv, layer, h), *vh = hy_kv_cache_vh(kv, layer, h);
        const char *ks = (const char *)k + (size_t)h * dh * es;
        for (size_t d = 0; d < dh; d++) memcpy(kt + (kc + d * HY_KV_BLOCK) * es, ks + d * es, es);
        memcpy(vh + vr * es, (const char *)v + (size_t)h * dh * es, dh * es);
    }
}

void hy_kv_cache_copy(hy_kv_cache *dst, const hy_kv_cache *src, int n) {
    if (n <= 0) return;
    const size_t dh = (size_t)src->head_dim, nb = (size_t)(n + HY_KV_BLOCK - 1) / HY_KV_BLOCK, es = src->es;
    for (int l = 0; l < src->n_layers; l++)
        for (int h = 0; h < src->n_heads; h++) {
            /* whole key blocks (a partial block's later columns are scored but masked: never weighted) */
            memcpy(hy_kv_cache_kt(dst, l, h), hy_kv_cache_kt(src, l, h), nb * dh * HY_KV_BLOCK * es);
            memcpy(hy_kv_cache_vh(dst, l, h), hy_kv_cache_vh(src, l, h), (size_t)n * dh * es);
        }
}
