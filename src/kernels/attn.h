/*
 * Causal grouped-query attention over a contiguous KV cache (spec §4.5), flash style: keys are
 * visited in blocks of HY_ATTN_KB with an online softmax (running max and sum per query row),
 * so nothing proportional to the context is ever stored besides the cache itself.
 *
 * One call handles every query row that shares one KV head: nt consecutive tokens times the ng
 * query heads of the group. The SIMD variants walk the key blocks in the outer loop and the
 * query rows inside it, so each K/V row is read from memory once per call and then served from
 * cache to all rows (decode: the ng heads of the group; prefill: a block of tokens too).
 *
 * Causality: token t of the call (0-based) sees keys 0 .. n_past + t, i.e. n_past + t + 1 keys,
 * where n_past is the number of cached positions before the call's first token. Keys past the
 * call's last token (n_past + nt keys in all) are never weighted: the key blocks holding those
 * are read whole (their later columns, whatever they hold, NaN included, scored and masked),
 * values past them never.
 *
 * Threading: pure over its arguments; a call writes only its own output rows and its own
 * `work` buffer (hy_attn_work_floats), so callers split (KV head, token block) units across
 * threads. A row's result does not depend on which other rows share the call, on the thread
 * count or on how the prompt was split into calls (key blocks always start at position 0).
 *
 * Keys and values are fp32 or, in a bf16 or fp8 cache (memory/kv_cache.h), bf16 or fp8 e4m3fn
 * codes (kv_fmt): every variant widens them to fp32 exactly as it loads them, so a call over such
 * a cache gives the same bits as the same call over an fp32 cache holding those values.
 *
 * Numerics: fp32 throughout. The scalar form (cpu/attn_ref.c) is hy_ref_attn_head per row and
 * the oracle; SIMD forms differ from it by summation order, FMA and a ~1 ulp vector exp. The
 * SIMD scores are one fma chain per (row, key) over the dims in order, with the keys along the
 * vector lanes (why the keys are stored transposed: no horizontal sums).
 */
#ifndef HY_KERNELS_ATTN_H
#define HY_KERNELS_ATTN_H

#include "base/cpu.h"

#include <stdbool.h>
#include <stddef.h>

#define HY_ATTN_KB 64   /* keys per block of the online softmax */
#define HY_ATTN_MR_MAX 8 /* largest query-row tile of any variant */
/* hy_attn_args.kv_fmt (the values of memory/kv_cache.h's hy_kv_type) */
#define HY_ATTN_KV_F32 0
#define HY_ATTN_KV_BF16 1
#define HY_ATTN_KV_FP8 2
/* Bytes per K / V element of a kv_fmt */
static inline size_t hy_attn_kv_es(int fmt) { return fmt == HY_ATTN_KV_FP8 ? 1 : fmt == HY_ATTN_KV_BF16 ? 2 : 4; }

typedef struct hy_attn_args {
    const float *q;  /* query row (t, i) at q + t*ldq_t + i*ldq_h: dh floats, t < nt, i < ng */
    size_t ldq_t, ldq_h;
    float *out;      /* output row (t, i) at out + t*ldo_t + i*ldo_h: dh floats (fully written) */
    size_t ldo_t, ldo_h;
    const void *k;   /* keys (post-norm, post-RoPE) in blocks of HY_ATTN_KB positions, each transposed
                      * (memory/kv_cache.h's layout): position j's dim d at
                      * k[(j / KB)·dh·KB + d·KB + j % KB]; elements as kv_fmt says */
    const void *v;   /* value of position j at v + j*ld (dh elements, as k's) */
    size_t ld;       /* in elements */
    int kv_fmt;      /* HY_ATTN_KV_F32 (float), _BF16 (uint16_t: upper halves of fp32 values),
                      * _FP8 (uint8_t e4m3fn codes, base/fp.h) */
    int nt, ng;      /* tokens, query heads sharing the KV head (rows = nt*ng) */
    int n_past;      /* token t sees keys [0, n_past + t] */
    int dh;          /* head dim */
    float scale;     /* score = (q·k)·scale */
} hy_attn_args;

/* The index in hy_attn_args.k of the block holding key j (dim d of its keys at + d·HY_ATTN_KB) */
static inline size_t hy_attn_key_block_at(int j, int dh) { return (size_t)(j / HY_ATTN_KB) * (size_t)dh * HY_ATTN_KB; }
/* ... and that block, for fp32 keys */
static inline const float *hy_attn_key_block(const float *k, int j, int dh) { return k + hy_attn_key_block_at(j, dh); }

/* Floats of per-call scratch for `rows` = nt*ng query rows (same for every variant); calls over
 * a bf16 / fp8 cache (kv_fmt) need hy_attn_kv_work_floats(dh) more (the fp32 variants widen a
 * key block there once for all their row tiles). */
size_t hy_attn_work_floats(int rows);
size_t hy_attn_kv_work_floats(int dh);

typedef struct hy_attn_ops {
    const char *name; /* ISA name */
    /* out rows = softmax over the visible keys of (q·k)·scale, times V. */
    void (*gqa)(const hy_attn_args *a, float *work);
} hy_attn_ops;

/* The fast prefill's variant (cpu/attn_amx.c; NULL where not compiled, and usable only where
 * kernels/cpu/dispatch.c selected AMX): the same loop with both products on AMX tiles. The
 * forward pass uses it where the fast prefill's matmuls take bf16 activations (HY_ACT_BF16
 * from HY_MATMUL_GEMM_MIN_T tokens on, kernels/matmul.h). Numerics: q, k and v
 * rounded to bf16 (nearest even), scores summed in fp32 in TDPBF16PS's order; probabilities
 * rounded to bf16 for P·V and the row's sum taken over those rounded values; fp32 output. The
 * invariances above hold (a row depends on its own query only). Its scratch is larger than
 * the fp32 kernels': hy_attn_amx_work_floats. */
size_t hy_attn_amx_work_floats(int rows, int dh);
const hy_attn_ops *hy_attn_ops_amx(void);

/* The scalar oracle: hy_ref_attn_head (kernels/ops.h) for each row. */
void hy_attn_gqa_ref(const hy_attn_args *a, float *work);

/* The table of one ISA, or NULL when this build has no such variant. Does NOT check that the
 * running CPU supports it (see kernels/cpu/dispatch.h). */
const hy_attn_ops *hy_attn_ops_get(hy_isa isa);
const hy_attn_ops *hy_attn_ops_ref(void);
const hy_attn_ops *hy_attn_ops_avx2(void);
const hy_attn_ops *hy_attn_ops_avx512(void);

#endif
