/*
 * Automatic prefix cache for the hybrid (Gated DeltaNet + attention) model:
 * attention KV in fixed-size token blocks, plus exact checkpoints of every GDN
 * layer's recurrent and conv state. A prompt prefix [0, p) is reusable only
 * when every KV block below p is cached AND a checkpoint taken at exactly p
 * exists: GDN state cannot be truncated or rewound, so a checkpoint is never
 * used at any other position (anchors §4 items 1, 2, 10, 11).
 *
 * Keys. A prompt is computed by the engine as a sequence of forward calls
 * whose ends ("boundaries", ascending, the last = the prompt length) are a
 * deterministic function of the prompt (engine.c, prefill schedule). The
 * values of a token's KV and of the state after it depend, to the last fp32
 * bit, on how the computation was split into calls (chunked GDN), so the key
 * of everything cached covers the call structure too:
 *   block i   [i*bs, (i+1)*bs): key(parent key, tokens, which positions inside
 *             the block start a call, e = end of the call computing its last
 *             token)
 *   checkpoint at p (a boundary): key(key of block floor(p/bs)-1, tail tokens
 *             [floor(p/bs)*bs, p) and their call starts, p)
 * Keys are 128-bit (two SipHash-2-4 with a per-cache random key), and every hit
 * also compares the stored tokens, call marks and parent key, so a hit means
 * "the same computation" and restoring it gives bit-identical results.
 *
 * Storage. The cache owns its data: a block holds a copy of the KV rows of its
 * positions (packed as in model/seq_io.h), a checkpoint holds a copy of the
 * GDN state plus the KV rows of its tail (positions after the last full
 * block). Running sequences keep PRIVATE contiguous KV: a hit copies blocks
 * into the new sequence (memcpy, cheap next to prefill), so sequences never
 * alias cache memory or each other's state. Paged attention reading shared
 * blocks in place is a later speed step; the refcounts (pins) here are what
 * it will need.
 *
 * Budgets and eviction: blocks and checkpoints have separate byte budgets and
 * separate LRU lists; only unpinned entries are evicted. A hit touches blocks
 * from the deepest to the root so roots are the most recently used: a chain
 * is evicted from its leaves, never from its root first.
 *
 * Threading: not thread-safe; owned by the engine thread. hy_prefix_plan_init
 * only reads the immutable hash key and may run on any thread.
 */
#ifndef HY_MEMORY_PREFIX_CACHE_H
#define HY_MEMORY_PREFIX_CACHE_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_PREFIX_MAX_BLOCK 256

typedef struct hy_prefix_cache hy_prefix_cache;

typedef struct hy_pc_key {
    uint64_t a, b;
} hy_pc_key;

typedef struct hy_prefix_cache_opts {
    int block_size;          /* tokens per KV block, 1..HY_PREFIX_MAX_BLOCK */
    size_t kv_row_bytes;     /* bytes of packed KV per position (> 0) */
    size_t state_bytes;      /* bytes of one GDN state snapshot (> 0) */
    size_t kv_budget;        /* bytes of KV blocks kept */
    size_t state_budget;     /* bytes of checkpoints kept (state + tail KV) */
    uint64_t salt;           /* model identity, dtypes: mixed into every key */
} hy_prefix_cache_opts;

typedef struct hy_prefix_cache_stats {
    uint64_t queries;            /* lookups */
    uint64_t query_tokens;       /* prompt tokens looked up */
    uint64_t hits;               /* lookups that reused a prefix */
    uint64_t hit_tokens;         /* prompt tokens reused */
    uint64_t blocks;             /* KV blocks held */
    uint64_t block_bytes;
    uint64_t block_evictions;
    uint64_t checkpoints;        /* checkpoints held */
    uint64_t checkpoint_bytes;
    uint64_t checkpoint_evictions;
    uint64_t checkpoints_stored; /* checkpoints ever inserted */
} hy_prefix_cache_stats;

/* One prompt and its call boundaries, with the key of each of its full blocks.
 * toks and bnd are borrowed (must outlive the plan). */
typedef struct hy_prefix_plan {
    const int32_t *toks;
    int n;               /* prompt tokens */
    const int32_t *bnd;  /* call ends, strictly ascending, in (0, n], bnd[nb-1] == n */
    int nb;
    int bs;
    int n_blocks;        /* n / bs */
    hy_pc_key *block_key; /* [n_blocks] */
} hy_prefix_plan;

/* Where a sequence's state is read from when storing (the engine binds it to
 * the model seam). kv_read: packed rows of positions [pos0, pos0+n). */
typedef struct hy_prefix_source {
    void *ctx;
    int (*kv_read)(void *ctx, int pos0, int n, void *dst, hy_err *err);
    void (*state_read)(void *ctx, void *dst);
} hy_prefix_source;

/* A reusable prefix found by hy_prefix_cache_lookup; its entries are pinned
 * until hy_prefix_cache_release. */
typedef struct hy_prefix_match {
    int pos;                  /* p: tokens reused (0 = no hit) */
    int n_blocks;             /* full blocks below p */
    const void **block_data;  /* [n_blocks] packed KV rows, bs positions each */
    const void *tail_kv;      /* packed KV rows of [n_blocks*bs, p) */
    int n_tail;
    const void *state;        /* GDN snapshot at p */
    void *ckpt_;              /* internal */
    void **blocks_;           /* internal */
} hy_prefix_match;

int hy_prefix_cache_create(hy_prefix_cache **out, const hy_prefix_cache_opts *o, hy_err *err);
void hy_prefix_cache_free(hy_prefix_cache *pc);
const hy_prefix_cache_opts *hy_prefix_cache_get_opts(const hy_prefix_cache *pc);
void hy_prefix_cache_get_stats(const hy_prefix_cache *pc, hy_prefix_cache_stats *out);

/* Computes the block keys. Validates bnd (ascending, inside (0, n], ending at n). */
int hy_prefix_plan_init(const hy_prefix_cache *pc, hy_prefix_plan *plan, const int32_t *toks, int n,
                        const int32_t *bnd, int nb, hy_err *err);
void hy_prefix_plan_release(hy_prefix_plan *plan);

/* Longest boundary p <= max_pos of the plan such that all blocks below p and a
 * checkpoint at p are cached. Fills *m (m->pos == 0 when nothing is reusable;
 * release it either way). Counts one query. */
int hy_prefix_cache_lookup(hy_prefix_cache *pc, const hy_prefix_plan *plan, int max_pos, hy_prefix_match *m,
                           hy_err *err);
void hy_prefix_cache_release(hy_prefix_cache *pc, hy_prefix_match *m);
/* Releases a match the caller decided not to use (a longer retained sequence
 * won): its hit is taken back out of the statistics (the query stays counted). */
void hy_prefix_cache_discard(hy_prefix_cache *pc, hy_prefix_match *m);

/* Stores the blocks below p that are missing and a checkpoint at p (p must be
 * one of the plan's boundaries and the sequence behind src must have computed
 * exactly [0, p) with the plan's calls). Entries already present are only
 * touched. Entries larger than their whole budget are skipped. */
int hy_prefix_cache_store(hy_prefix_cache *pc, const hy_prefix_plan *plan, int p, const hy_prefix_source *src,
                          hy_err *err);

/* Drops every unpinned entry. */
void hy_prefix_cache_clear(hy_prefix_cache *pc);

#endif
