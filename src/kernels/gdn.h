/*
 * Gated DeltaNet (GDN, `linear_attention`) core kernels: causal conv1d + SiLU, gates,
 * q/k L2 normalisation, and the gated delta rule in recurrent and chunked form
 * (spec qwen3_5-architecture.md §5.2, §5.4, §5.6, §5.7, §6).
 *
 * Threading: every function is pure over its arguments (no globals). The delta-rule
 * kernels take a value-head range [h0, h1) and the conv a channel range [c0, c1) so
 * callers can split work across threads; disjoint ranges touch disjoint memory. The
 * chunked kernel needs a per-thread scratch buffer (hy_gdn_chunked_scratch_floats).
 *
 * Numerics: all fp32. The chunked form is the WY/UT form with an exact forward
 * substitution; decays are exponentiated only as sums of the non-positive g over a
 * token range, so nothing positive is ever exponentiated (see gdn_ref.c).
 */
#ifndef HY_KERNELS_GDN_H
#define HY_KERNELS_GDN_H

#include "base/cpu.h"

#include <stddef.h>

/* Sizes of one GDN layer for one sequence. */
typedef struct hy_gdn_dims { int Hk, Hv, dk, dv; } hy_gdn_dims;   /* Hv % Hk == 0 */

/* Recurrent gated delta rule (spec §5.7) over T tokens, value heads [h0, h1).
 * q, k : [T][Hk][dk]  already L2-normalised; q already scaled by 1/sqrt(dk)
 * v    : [T][Hv][dv]
 * g    : [T][Hv]      log-decay (<= 0);  beta: [T][Hv]
 * state: [Hv][dk][dv] fp32, read and updated in place (only heads h0..h1-1 touched)
 * out  : [T][Hv][dv]  (only heads h0..h1-1 written)
 * Value head h uses key head h / (Hv/Hk). */
void hy_gdn_recurrent(const hy_gdn_dims *d, int T, int h0, int h1,
                      const float *q, const float *k, const float *v,
                      const float *g, const float *beta, float *state, float *out);

/* Chunked form (spec §6, chunk size C, normally 64): same inputs/outputs/semantics, equal to
 * the recurrent form up to fp32 rounding, for any T >= 1 (the last chunk may be partial; it is
 * processed at its true length, no padding). scratch: caller-provided,
 * hy_gdn_chunked_scratch_floats(d, C) floats, for ONE thread (give each thread its own).
 * g must be <= 0 (as produced by hy_gdn_gates); positive entries are clamped to 0 here. */
size_t hy_gdn_chunked_scratch_floats(const hy_gdn_dims *d, int C);
void hy_gdn_chunked(const hy_gdn_dims *d, int T, int C, int h0, int h1,
                    const float *q, const float *k, const float *v,
                    const float *g, const float *beta, float *state, float *out, float *scratch);

/* The chunked form split for parallel callers (spec §6; see gdn_ref.c). For value head h and
 * chunk c (tokens [c*C, min(T, c*C+C)) ), prepare does everything that does not depend on the
 * state and writes it to `prep` (hy_gdn_chunk_prep_floats floats); all (h, c) pairs are
 * mutually independent. scan then consumes prep (it is overwritten), reads the state of head h
 * entering chunk c, writes the chunk's outputs and leaves the state after the chunk; for one
 * head the chunks must be scanned in order, different heads are independent. `work` is per-thread
 * scratch of hy_gdn_chunk_work_floats floats, needed only during one call.
 * A prep record is only valid for the ops table (ISA) that produced it.
 * Typical use: phase 1, threads prepare any subset of (h, c) pairs; phase 2, threads take heads
 * and scan their chunks in order. hy_gdn_chunked does prepare+scan chunk by chunk, one thread. */
size_t hy_gdn_chunk_prep_floats(const hy_gdn_dims *d, int C);
size_t hy_gdn_chunk_work_floats(const hy_gdn_dims *d, int C);
void hy_gdn_chunk_prepare(const hy_gdn_dims *d, int T, int C, int h, int c, const float *q, const float *k,
                          const float *v, const float *g, const float *beta, float *prep, float *work);
void hy_gdn_chunk_scan(const hy_gdn_dims *d, int T, int C, int h, int c, const float *q, const float *k,
                       float *prep, float *state, float *out, float *work);

/* Causal depthwise conv1d + SiLU over T new tokens, channels [c0,c1), kernel K (spec §5.2).
 * x    : [T][C] pre-conv input;  w: [K][C] tap-major (weight [C,1,K] transposed, so the SIMD
 *        kernels load a tap of VL channels as one vector; w[K-1][c] multiplies the current token)
 * state: [K-1][C] the previous K-1 pre-conv inputs, oldest first (zeros at sequence start);
 *        updated in place to the last K-1 inputs after these T tokens (correct also when T < K-1).
 * y    : [T][C] = silu(conv). */
void hy_gdn_conv_silu(int T, int C, int K, int c0, int c1, const float *x, const float *w,
                      float *state, float *y);

/* Gates (spec §5.4): g = -exp(A_log[h]) * softplus(a + dt_bias[h]) (softplus(x) = x for x > 20),
 * beta = sigmoid(b).  a, b: [T][Hv] -> g, beta: [T][Hv]. */
void hy_gdn_gates(int T, int Hv, const float *a, const float *b, const float *A_log,
                  const float *dt_bias, float *g, float *beta);

/* In-place L2 normalisation of n vectors of length dim (x / sqrt(sum x^2 + 1e-6)) times scale. */
void hy_l2norm_scale(float *x, int n, int dim, float scale);

/* g[i] = silu(g[i]) · u[i] for i < n (the MLP's SwiGLU; the same exp as conv_silu). Every
 * element goes through the same code whatever its position, so results do not depend on how
 * callers split a row. */
void hy_silu_mul(int n, float *g, const float *u);

/* The GDN kernels of one ISA, same contracts as the scalar functions above (which form the
 * "ref" table). Resolved once by the caller (kernels/cpu/dispatch.h) and then called through. */
typedef struct hy_gdn_ops {
    const char *name; /* ISA name */
    void (*recurrent)(const hy_gdn_dims *d, int T, int h0, int h1, const float *q, const float *k,
                      const float *v, const float *g, const float *beta, float *state, float *out);
    /* scratch: hy_gdn_chunked_scratch_floats(d, C) floats per thread */
    void (*chunked)(const hy_gdn_dims *d, int T, int C, int h0, int h1, const float *q, const float *k,
                    const float *v, const float *g, const float *beta, float *state, float *out, float *scratch);
    void (*chunk_prepare)(const hy_gdn_dims *d, int T, int C, int h, int c, const float *q, const float *k,
                          const float *v, const float *g, const float *beta, float *prep, float *work);
    void (*chunk_scan)(const hy_gdn_dims *d, int T, int C, int h, int c, const float *q, const float *k,
                       float *prep, float *state, float *out, float *work);
    void (*conv_silu)(int T, int C, int K, int c0, int c1, const float *x, const float *w, float *state,
                      float *y);
    void (*gates)(int T, int Hv, const float *a, const float *b, const float *A_log, const float *dt_bias,
                  float *g, float *beta);
    void (*l2norm_scale)(float *x, int n, int dim, float scale);
    void (*silu_mul)(int n, float *g, const float *u);
} hy_gdn_ops;

/* The table of one ISA, or NULL when this build has no such variant (non-x86 builds). Does NOT
 * check that the running CPU supports it: get the ISA from hy_kernels_init (dispatch.h). */
const hy_gdn_ops *hy_gdn_ops_get(hy_isa isa);
const hy_gdn_ops *hy_gdn_ops_ref(void);
const hy_gdn_ops *hy_gdn_ops_avx2(void);
const hy_gdn_ops *hy_gdn_ops_avx512(void);

#endif
