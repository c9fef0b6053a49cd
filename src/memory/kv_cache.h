/*
 * Attention KV cache of one sequence: post-norm, post-RoPE keys and values of
 * every full-attention layer (spec §4.6), fp32, contiguous per layer:
 * k/v[layer][pos][Hkv*Dh]. Simple by design (one sequence, a fixed capacity
 * chosen at creation); a paged cache shared between sequences comes later.
 *
 * Memory is reserved with an anonymous mapping, so capacity that is never
 * written is never resident. Threading: owned by the engine thread; forward
 * threads write disjoint positions and read positions written before a barrier.
 */
#ifndef HY_MEMORY_KV_CACHE_H
#define HY_MEMORY_KV_CACHE_H

#include "base/error.h"

#include <stddef.h>

typedef struct hy_kv_cache {
    int n_layers;   /* attention layers */
    int max_tokens; /* capacity in positions */
    int kv_dim;     /* Hkv * Dh */
    float *k;       /* [n_layers][max_tokens][kv_dim] */
    float *v;       /* [n_layers][max_tokens][kv_dim] */
    size_t bytes;   /* reserved bytes of k and v together */
} hy_kv_cache;

int hy_kv_cache_create(hy_kv_cache **out, int n_layers, int max_tokens, int kv_dim, hy_err *err);
void hy_kv_cache_free(hy_kv_cache *kv);

static inline float *hy_kv_cache_k(const hy_kv_cache *kv, int layer, int pos) {
    return kv->k + ((size_t)layer * (size_t)kv->max_tokens + (size_t)pos) * (size_t)kv->kv_dim;
}
static inline float *hy_kv_cache_v(const hy_kv_cache *kv, int layer, int pos) {
    return kv->v + ((size_t)layer * (size_t)kv->max_tokens + (size_t)pos) * (size_t)kv->kv_dim;
}

#endif
