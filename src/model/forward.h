/*
 * Forward pass of the qwen3_5 text model on CPU (spec §3–§6, §8).
 *
 * hy_ctx: an engine context bound to one loaded model: the compute thread pool,
 * the kernel tier (kernels/cpu/dispatch.h), the matrices in the format the options
 * ask for (model/linears.h: read in place from the checkpoint, or converted copies
 * the context owns), fp32 copies of the small tensors (norm weights, conv1d, A_log,
 * dt_bias), and scratch sized for one internal step of at most max_chunk tokens,
 * allocated once (no allocation in the token loop).
 *
 * hy_seq: one sequence's state: attention KV cache (capacity max_tokens), GDN
 * recurrent + conv state, and the number of tokens consumed so far. A call
 * continues from where the previous one stopped, so a prompt may be fed in one
 * call, in several, or token by token; the results agree to fp32 rounding.
 *
 * hy_forward processes n new tokens in internal steps of at most max_chunk
 * tokens (a multiple of the GDN chunk 64, so the chunk grid does not depend on
 * the step size). A step of one token uses the recurrent GDN kernel, a longer
 * one the chunked kernel. All activations, accumulations and states are fp32.
 * Each output element is computed by exactly one thread with a fixed order of
 * operations, so results are bit-identical for every thread count (for a given
 * kernel tier and weight format: the SIMD tiers differ from the scalar one by rounding).
 *
 * Threading: a hy_ctx and the hy_seq passed to it are used by one caller thread
 * at a time; the model is shared read-only by any number of contexts.
 */
#ifndef HY_MODEL_FORWARD_H
#define HY_MODEL_FORWARD_H

#include "base/error.h"
#include "memory/gdn_state.h"
#include "memory/kv_cache.h"
#include "model/linears.h"
#include "model/model.h"

#include <stdbool.h>
#include <stdint.h>

#define HY_GDN_CHUNK 64
#define HY_DEFAULT_MAX_CHUNK 512

typedef struct hy_ctx hy_ctx;
typedef struct hy_seq hy_seq;

typedef struct hy_ctx_opts {
    int n_threads; /* compute threads including the caller; <= 0 means 1 */
    int max_chunk; /* tokens per internal step; <= 0 means HY_DEFAULT_MAX_CHUNK; rounded up to a multiple of 64 */
    const char *isa;      /* kernel tier "ref" | "avx2" | "avx512"; NULL / "" / "auto": $HYLA_ISA, else the best */
    hy_wreq weights;      /* matrix formats (model/linears.h); HY_WEIGHTS_AUTO (0) keeps them as stored */
    unsigned quant_flags; /* HY_QUANT_LM_HEAD / HY_QUANT_GDN_AB: those follow `weights` too */
    hy_wres weights_res;  /* matrices used as stored: copied into memory or read from the mmap */
    bool fast_prefill;    /* bf16 activations in prefill matmuls (HY_ACT_BF16, kernels/matmul.h); decode
                             and results of steps under HY_MATMUL_GEMM_MIN_T tokens are unchanged */
    bool fast_decode;     /* bf16 activations in the GEMVs of bf16 / fp8 matrices (HY_ACT_BF16_GEMV): decode
                             steps and steps of up to HY_MATMUL_GEMV_MAX_T tokens, batched or not; where
                             the kernels have it (kernels/matmul.h: bf16 / fp8 on AMD AVX-512 BF16 and
                             on Intel with AMX) */
    hy_kv_type kv_type;   /* element type of the KV caches of sequences made for this context
                             (hy_ctx_kv_type; memory/kv_cache.h): HY_KV_F32 (0), HY_KV_BF16 or
                             HY_KV_FP8 */
} hy_ctx_opts;

/* Validates the model (shapes, dtypes: matrices F32/BF16/F16 used in place, F8_E4M3 with
 * block scales), selects the kernel tier, converts the matrices the options ask for and the
 * small tensors, allocates scratch, starts the threads. */
int hy_ctx_create(hy_ctx **out, const hy_model *m, const hy_ctx_opts *opts, hy_err *err);
void hy_ctx_free(hy_ctx *ctx);
int hy_ctx_threads(const hy_ctx *ctx);
/* Bytes of scratch + converted small tensors + converted or copied matrices held by the context. */
size_t hy_ctx_bytes(const hy_ctx *ctx);
/* The kernel tier in use ("ref", "avx2", "avx512"). */
const char *hy_ctx_isa(const hy_ctx *ctx);
/* Which instance of the tier's matmul kernels (kernels/cpu/dispatch.h: "intel", "zen" or ""). */
const char *hy_ctx_tune(const hy_ctx *ctx);
/* Whether that instance multiplies bf16 row groups by bf16 activations on AMX tiles
 * (hy_matmul_avx512_amx: fast prefill only). */
bool hy_ctx_amx(const hy_ctx *ctx);
/* hy_ctx_opts.kv_type: what callers pass to hy_seq_create_kv for this context's sequences */
hy_kv_type hy_ctx_kv_type(const hy_ctx *ctx);
/* The matrices as the forward pass reads them, with per-class byte counts (->cls). */
const hy_linears *hy_ctx_linears(const hy_ctx *ctx);

/* A sequence able to hold max_tokens positions. Starts empty. Its KV cache is fp32; _kv: of
 * the given element type (memory/kv_cache.h). */
int hy_seq_create(hy_seq **out, const hy_model *m, int max_tokens, hy_err *err);
int hy_seq_create_kv(hy_seq **out, const hy_model *m, int max_tokens, hy_kv_type kv_type, hy_err *err);
void hy_seq_free(hy_seq *s);
/* Back to an empty sequence (GDN state zeroed, position 0). */
void hy_seq_reset(hy_seq *s);
int hy_seq_pos(const hy_seq *s);
int hy_seq_capacity(const hy_seq *s);
/* Bytes of KV reservation + GDN state. */
size_t hy_seq_bytes(const hy_seq *s);
const hy_gdn_state *hy_seq_gdn_state(const hy_seq *s);
const hy_kv_cache *hy_seq_kv_cache(const hy_seq *s);

/* Rewinds s to position pos (<= its current position), with the GDN state restored from snap:
 * a copy (hy_gdn_state_copy of hy_seq_gdn_state) taken when s was at pos. The KV cache needs
 * nothing: positions >= pos are rewritten by the next tokens. For benchmarks at a context
 * depth and for rollbacks. */
int hy_seq_rewind(hy_seq *s, int pos, const hy_gdn_state *snap, hy_err *err);

/* What one forward step costs in data and arithmetic, for benchmarks (roofline ratios). */
typedef struct hy_fwd_costs {
    uint64_t decode_weight_bytes; /* matrices streamed per decode token, in the format the context
                                     reads them (hy_ctx_linears, scales included): every linear of
                                     every layer, all of lm_head, one embedding row */
    uint64_t linear_params;       /* elements of the layers' linears (not embedding / lm_head) */
    uint64_t lm_head_params;      /* vocab x hidden */
    uint64_t gdn_state_bytes;     /* recurrent + conv state of all GDN layers (a decode token reads
                                     and writes each once) */
    uint64_t kv_bytes_per_pos;    /* K + V of one position over all attention layers, in the
                                     context's KV type (hy_ctx_kv_type) */
    uint64_t attn_flops_per_key;  /* per (query token, visible key) over all attention layers:
                                     2 x 2 x num_attention_heads x head_dim x n_attn_layers */
} hy_fwd_costs;
void hy_ctx_costs(const hy_ctx *ctx, hy_fwd_costs *out);

/* Decode profile, for benchmarks: while on, every thread of every 1-token step adds its wall
 * time per phase (each layer's matrices by role, the GDN and attention cores, barrier waits)
 * and the matrix bytes it read, so a benchmark can show where a token's time goes and at what
 * rate each phase streams. Off by default; on, it costs two clock reads per phase. Prefill and
 * batched steps are not profiled. Values are the same with and without it. */
typedef enum hy_fwd_phase {
    HY_PH_Q_PROJ,
    HY_PH_K_PROJ,
    HY_PH_V_PROJ,
    HY_PH_ATTN_CORE, /* q/k norms, RoPE, KV append, attention, gate */
    HY_PH_O_PROJ,
    HY_PH_IN_PROJ_QKV,
    HY_PH_IN_PROJ_Z,
    HY_PH_IN_PROJ_B,
    HY_PH_IN_PROJ_A,
    HY_PH_GDN_CORE, /* conv, gates, q/k norms, recurrent step, gated norm */
    HY_PH_OUT_PROJ,
    HY_PH_GATE_UP, /* gate_proj + up_proj + silu * mul */
    HY_PH_DOWN_PROJ,
    HY_PH_LM_HEAD,
    HY_PH_BARRIER, /* waiting for the other threads (prefetching the next matrix meanwhile) */
    HY_PH_COUNT
} hy_fwd_phase;
const char *hy_fwd_phase_name(hy_fwd_phase ph);
typedef struct hy_fwd_profile {
    uint64_t steps;            /* 1-token steps profiled */
    double step_s;             /* their wall seconds, summed over the threads */
    double s[HY_PH_COUNT];     /* seconds in each phase, summed over the threads (the rest of
                                  step_s: norms, embedding, job start and end) */
    double bytes[HY_PH_COUNT]; /* matrix bytes each phase read, all threads */
    int threads;
} hy_fwd_profile;
/* Zeroes the profile and turns it on (allocates it the first time). */
int hy_ctx_profile_start(hy_ctx *ctx, hy_err *err);
/* Turns it off; *out gets the totals since hy_ctx_profile_start (zeros if never started). */
void hy_ctx_profile_stop(hy_ctx *ctx, hy_fwd_profile *out);
/* Adds src's steps, seconds and bytes to dst (profiles of several runs); dst->threads becomes
 * src's. */
void hy_fwd_profile_add(hy_fwd_profile *dst, const hy_fwd_profile *src);

/* Feeds n >= 1 token ids (each in [0, vocab_size)) at positions pos..pos+n-1.
 * logits: [n][vocab_size] when all_logits, else [vocab_size] for the last of
 * the n tokens; may be NULL to only advance the state. Fails without touching
 * the sequence on bad ids or when pos + n exceeds the capacity. */
int hy_forward(hy_ctx *ctx, hy_seq *s, const int32_t *ids, int n, float *logits, bool all_logits, hy_err *err);

/* Batched decode: ONE new token ids[i] for each of n_seqs distinct sequences seqs[i] (each at
 * its own position), in steps where every matmul reads the weights once for all of them
 * (at most max_chunk sequences per step). logits: [n_seqs][vocab_size] or NULL. The result for
 * sequence i is bit-identical to hy_forward(ctx, seqs[i], &ids[i], 1, ...) (same tier and
 * weights; the matmuls' order per output never depends on T, and decode keeps fp32
 * activations even with fast_prefill). Fails without touching any sequence on NULL or
 * repeated sequences, bad ids, or a full sequence. */
int hy_forward_batch(hy_ctx *ctx, hy_seq **seqs, const int32_t *ids, int n_seqs, float *logits, hy_err *err);

#endif
