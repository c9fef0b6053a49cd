/*
 * Attention KV cache of one sequence: post-norm, post-RoPE keys and values of
 * every full-attention layer (spec §4.6), fp32 or bf16 (hy_kv_type), per layer and KV head
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
 * bf16 (--kv-type bf16) halves the cache's memory and what a decode step reads of it at depth,
 * as llama.cpp's f16 and vLLM's bf16 caches do; fp8 (e4m3fn, no scales, saturating at +-448,
 * vLLM's --kv-cache-dtype fp8) quarters them. Values are rounded to nearest even as they are
 * stored, and the attention kernels widen them exactly (kernels/attn.h), so such a cache only
 * changes results by that rounding of K and V. fp32 (the default) keeps the reference's values.
 *
 * Memory is reserved with an anonymous mapping, so capacity that is never
 * written is never resident. Threading: owned by the engine thread; forward
 * threads write disjoint positions and read positions written before a barrier.
 */
#ifndef HY_MEMORY_KV_CACHE_H
#define HY_MEMORY_KV_CACHE_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_KV_BLOCK 64 /* positions per key block (= HY_ATTN_KB, checked where both meet) */

/* the values of kernels/attn.h's HY_ATTN_KV_* */
typedef enum hy_kv_type { HY_KV_F32 = 0, HY_KV_BF16 = 1, HY_KV_FP8 = 2 } hy_kv_type;

/* "f32" / "bf16" / "fp8"; parse: 0, or -1 for anything else */
const char *hy_kv_type_name(hy_kv_type t);
/* Bytes per element: 4, 2 or 1; 0 for a value that is no hy_kv_type */
size_t hy_kv_type_bytes(hy_kv_type t);
int hy_kv_type_parse(const char *s, hy_kv_type *out);

typedef struct hy_kv_cache {
    hy_kv_type type;
    int n_layers;   /* attention layers */
    int max_tokens; /* capacity in positions */
    int n_heads;    /* KV heads (Hkv) */
    int head_dim;   /* Dh */
    int kv_dim;     /* n_heads * head_dim: one position's keys (or values) of one layer */
    int n_blocks;   /* key blocks per head: max_tokens rounded up to whole blocks */
    size_t es;      /* bytes per element: 4 (fp32), 2 (bf16) or 1 (fp8) */
    void *k;        /* [n_layers][n_heads][n_blocks][head_dim][HY_KV_BLOCK] */
    void *v;        /* [n_layers][n_heads][n_blocks * HY_KV_BLOCK][head_dim] */
    size_t bytes;   /* reserved bytes of k and v together */
} hy_kv_cache;

int hy_kv_cache_create(hy_kv_cache **out, int n_layers, int max_tokens, int n_heads, int head_dim, hy_kv_type type,
                       hy_err *err);
void hy_kv_cache_free(hy_kv_cache *kv);

/* The key blocks of one layer's head (block b at element b * head_dim * HY_KV_BLOCK) */
static inline void *hy_kv_cache_kt(const hy_kv_cache *kv, int layer, int head) {
    return (char *)kv->k + ((size_t)layer * (size_t)kv->n_heads + (size_t)head) * (size_t)kv->n_blocks *
                               (size_t)kv->head_dim * HY_KV_BLOCK * kv->es;
}
/* The value rows of one layer's head (row pos at element pos * head_dim) */
static inline void *hy_kv_cache_vh(const hy_kv_cache *kv, int layer, int head) {
    return (char *)kv->v + ((size_t)layer * (size_t)kv->n_heads + (size_t)head) * (size_t)kv->n_blocks * HY_KV_BLOCK *
                               (size_t)kv->head_dim * kv->es;
}

/* Position pos of one layer's head: k and v (head_dim floats each) into the cache. */
void hy_kv_cache_put(const hy_kv_cache *kv, int layer, int head, int pos, const float *k, const float *v);
/* Position pos of one layer, every head (kv_dim elements each, head after head) in the cache's own
 * element type (es bytes each): out of / into the cache, bits unchanged. */
void hy_kv_cache_read_pos(const hy_kv_cache *kv, int layer, int pos, void *k, void *v);
void hy_kv_cache_write_pos(const hy_kv_cache *kv, int layer, int pos, const void *k, const void *v);
/* Position pos of one layer, every head (kv_dim floats each, head after head), widened to fp32. */
void hy_kv_cache_get_pos(const hy_kv_cache *kv, int layer, int pos, float *k, float *v);
/* Positions [0, n) of every layer and head from src into dst (the same shape and type). */
void hy_kv_cache_copy(hy_kv_cache *dst, const hy_kv_cache *src, int n);

#endif
