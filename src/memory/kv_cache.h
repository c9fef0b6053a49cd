/*
 * Attention KV cache of one sequence: post-norm, post-RoPE keys and values of
 * every full-attention layer (spec §4.6), fp32, per layer and KV head
 * (head-major, so one head's keys and values are each one contiguous stream):
 *   keys   in blocks of HY_KV_BLOCK positions, each block transposed:
 *          k[layer][head][block][dim][HY_KV_BLOCK], position p's dim d at
 *          block p / HY_KV_BLOCK, [d][p % HY_KV_BLOCK];
 *   values as rows: v[layer][head][pos][dim].
 * Why the keys transposed: the attention kernels (kernels/attn.h) compute a key
 * block's scores with the keys along the vector lanes, one fma chain per
 * (query, key) over the dims, which needs no horizontal sums; transposing the
 * keys on every call cost the one-token decode ~1/4 of its attention speed.
 * Simple by design (one sequence, a fixed capacity chosen at creation, rounded
 * up to whole blocks); a paged cache shared between sequences comes later.
 *
 * Memory is reserved with an anonymous mapping, so capacity that is never
 * written is never resident. Threading: owned by the engine thread; forward
 * threads write disjoint positions and read positions written before a barrier.
 */
#ifndef HY_MEMORY_KV_CACHE_H
#define HY_MEMORY_KV_CACHE_H

#include "base/error.h"

#include <stddef.h>

#define HY_KV_BLOCK 64 /* positions per key block (= HY_ATTN_KB, checked where both meet) */

typedef struct hy_kv_cache {
    int n_layers;   /* attention layers */
    int max_tokens; /* capacity in positions */
    int n_heads;    /* KV heads (Hkv) */
    int head_dim;   /* Dh */
    int kv_dim;     /* n_heads * head_dim: one position's keys (or values) of one layer */
    int n_blocks;   /* key blocks per head: max_tokens rounded up to whole blocks */
    float *k;       /* [n_layers][n_heads][n_blocks][head_dim][HY_KV_BLOCK] */
    float *v;       /* [n_layers][n_heads][n_blocks * HY_KV_BLOCK][head_dim] */
    size_t bytes;   /* reserved bytes of k and v together */
} hy_kv_cache;

int hy_kv_cache_create(hy_kv_cache **out, int n_layers, int max_tokens, int n_heads, int head_dim, hy_err *err);
void hy_kv_cache_free(hy_kv_cache *kv);

/* The key blocks of one layer's head (block b at + b * head_dim * HY_KV_BLOCK) */
static inline float *hy_kv_cache_kt(const hy_kv_cache *kv, int layer, int head) {
    return kv->k + ((size_t)layer * (size_t)kv->n_heads + (size_t)head) * (size_t)kv->n_blocks * (size_t)kv->head_dim *
                       HY_KV_BLOCK;
}
/* The value rows of one layer's head (row pos at + pos * head_dim) */
static inline float *hy_kv_cache_vh(const hy_kv_cache *kv, int layer, int head) {
    return kv->v + ((size_t)layer * (size_t)kv->n_heads + (size_t)head) * (size_t)kv->n_blocks * HY_KV_BLOCK *
                       (size_t)kv->head_dim;
}

/* Position pos's key column in one layer's head (its dim d at + d * HY_KV_BLOCK) */
static inline float *hy_kv_cache_kcol(const hy_kv_cache *kv, int layer, int head, int pos) {
    return hy_kv_cache_kt(kv, layer, head) + (size_t)(pos / HY_KV_BLOCK) * (size_t)kv->head_dim * HY_KV_BLOCK +
           (size_t)(pos % HY_KV_BLOCK);
}

/* Position pos of one layer's head: k and v (head_dim floats each) into the cache. */
void hy_kv_cache_put(const hy_kv_cache *kv, int layer, int head, int pos, const float *k, const float *v);
/* Position pos of one layer, every head (kv_dim floats each, head after head): out of / into the cache. */
void hy_kv_cache_get_pos(const hy_kv_cache *kv, int layer, int pos, float *k, float *v);
void hy_kv_cache_set_pos(const hy_kv_cache *kv, int layer, int pos, const float *k, const float *v);
/* Positions [0, n) of every layer and head from src into dst (the same shape). */
void hy_kv_cache_copy(hy_kv_cache *dst, const hy_kv_cache *src, int n);

#endif
