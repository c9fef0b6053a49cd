/*
 * Compute kernels of the forward pass (everything except the Gated DeltaNet
 * core, which lives in kernels/gdn.h). cpu/ref.c holds the scalar reference of
 * every op: it is the oracle SIMD variants are tested against, and it defines
 * the summation order (8 interleaved fp32 lanes, combined pairwise) that those
 * variants must reproduce bit for bit.
 *
 * Threading: every op works on a caller-given range of independent outputs
 * (rows, heads, tokens) and touches nothing else, so callers split work by
 * output and results do not depend on the thread count. No op allocates.
 *
 * Matmul: weight formats, semantics and tolerances live in kernels/matmul.h; the
 * table's matmul is the tier's kernel (hy_ref_matmul_mat for "ref"). SIMD tiers
 * sum float products in their own (fixed) order, so they match the reference
 * within the tolerances stated in tests/kernels/test_matmul_simd.c, and Q8/Q4
 * bit for bit.
 */
#ifndef HY_KERNELS_OPS_H
#define HY_KERNELS_OPS_H

#include "base/dtype.h"
#include "base/tensor.h"
#include "kernels/matmul.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The hot ops as a table; cpu/dispatch.c fills one per tier (hy_cpu_kernels.ops). */
typedef struct hy_ops {
    const char *name;
    /* For o in [o0, o1), t in [0, T): d = W[o,:]·x[t*ldx + :]; y[t*ldy + o] = d (or += d
     * when accumulate), with per-thread scratch: see kernels/matmul.h. */
    hy_matmul_fn matmul;
    /* One query head against n_kv keys/values (positions 0..n_kv-1, ld floats
     * apart): out[dh] = softmax(q·k_j * scale) · v. fp32 throughout. */
    void (*attn_head)(const float *q, const float *k, const float *v, size_t ld, int n_kv, int dh, float scale,
                      float *out);
} hy_ops;

const hy_ops *hy_ops_ref(void);

/* Reference implementations (hy_ops_ref() holds hy_ref_matmul_mat and hy_ref_attn_head).
 * hy_ref_matmul: the same reference on a checkpoint tensor (F32 / BF16 / F16) read in
 * place, no scratch needed. */
void hy_ref_matmul(const hy_tensor *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                   bool accumulate);
/* One query row over n_kv keys: k in transposed blocks (kernels/attn.h's hy_attn_args.k), the
 * values ld floats apart. */
void hy_ref_attn_head(const float *q, const float *k, const float *v, size_t ld, int n_kv, int dh, float scale,
                      float *out);
/* The same over keys and values of any KV cache format (kernels/attn.h's HY_ATTN_KV_*): the
 * bits of hy_ref_attn_head over their fp32 widening. */
void hy_ref_attn_head_kv(const float *q, const void *k, const void *v, size_t ld, int n_kv, int dh, float scale,
                         int kv_fmt, float *out);

/* True for the weight dtypes hy_ref_matmul reads in place. */
bool hy_ops_matmul_dtype_ok(hy_dtype t);

/* fp32 dot product with the reference lane order. */
float hy_ref_dot(const float *a, const float *b, int n);

/* RMSNorm of one vector of n: y = x / sqrt(mean(x²) + eps) · s, with s = 1 + w
 * (zero-centred, one_plus) or s = w (plain); w == NULL means s = 1. In place ok. */
void hy_ref_rmsnorm(const float *x, const float *w, int n, float eps, bool one_plus, float *y);

/* RoPE tables. inv_freq[i] = 1 / theta^(2i/rot_dim), i < rot_dim/2, in fp32 as HF. */
void hy_ref_rope_inv_freq(int rot_dim, double theta, float *inv_freq);
/* cos/sin of the angles pos*inv_freq[i] (angle rounded to fp32 first, as HF). */
void hy_ref_rope_cos_sin(int64_t pos, int half, const float *inv_freq, float *cos_out, float *sin_out);
/* NeoX rotate-half on the first 2*half dims of x; the rest pass through. */
void hy_ref_rope_neox(float *x, int half, const float *cos_v, const float *sin_v);

/* dst[i] = float(src[i]) for n elements of dtype t (F32, BF16, F16). */
void hy_ref_convert_f32(hy_dtype t, const void *src, size_t n, float *dst);
/* Row `row` of a 2-D tensor as fp32 (embedding lookup). */
void hy_ref_row_f32(const hy_tensor *t, int64_t row, float *dst);

static inline float hy_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float hy_siluf(float x) { return x / (1.0f + expf(-x)); }

#endif
