/*
 * Scalar reference kernels (see kernels/ops.h). Plain C, no intrinsics: this
 * file defines the numerics every faster variant must reproduce. Reductions use
 * 8 interleaved fp32 accumulators combined as ((0+4)+(1+5))+((2+6)+(3+7)), an
 * order a SIMD kernel can match exactly with one 8-wide register.
 * Threading: stateless; callers partition outputs.
 */
#include "kernels/ops.h"

#include "kernels/attn.h"

#include "base/error.h"
#include "base/fp.h"

#include <string.h>

#define LANES 8

static inline float lanes_sum(const float acc[LANES]) {
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

float hy_ref_dot(const float *a, const float *b, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; i++, l++) acc[l] += a[i] * b[i];
    return lanes_sum(acc);
}

static float dot_bf16(const uint16_t *w, const float *x, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += hy_bf16_to_f32(w[i + l]) * x[i + l];
    for (int l = 0; i < n; i++, l++) acc[l] += hy_bf16_to_f32(w[i]) * x[i];
    return lanes_sum(acc);
}

static float dot_f16(const uint16_t *w, const float *x, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += hy_f16_to_f32(w[i + l]) * x[i + l];
    for (int l = 0; i < n; i++, l++) acc[l] += hy_f16_to_f32(w[i]) * x[i];
    return lanes_sum(acc);
}

bool hy_ops_matmul_dtype_ok(hy_dtype t) {
    return t == HY_DTYPE_F32 || t == HY_DTYPE_BF16 || t == HY_DTYPE_F16;
}

void hy_ref_matmul(const hy_tensor *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                   bool accumulate) {
    const int n = (int)W->shape[1];
    for (int o = o0; o < o1; o++) {
        for (int t = 0; t < T; t++) {
            const float *xt = x + (size_t)t * ldx;
            float d;
            switch (W->dtype) {
            case HY_DTYPE_F32: d = hy_ref_dot((const float *)W->data + (size_t)o * n, xt, n); break;
            case HY_DTYPE_BF16: d = dot_bf16((const uint16_t *)W->data + (size_t)o * n, xt, n); break;
            case HY_DTYPE_F16: d = dot_f16((const uint16_t *)W->data + (size_t)o * n, xt, n); break;
            default: HY_ASSERT(!"matmul: unsupported weight dtype (checked at context creation)"); d = 0;
            }
            float *yo = y + (size_t)t * ldy + o;
            if (accumulate) *yo += d;
            else *yo = d;
        }
    }
}

/* Element i of a key or value array (HY_ATTN_KV_*): fp32, or bf16 / fp8 e4m3fn widened exactly */
static inline float kv_at(const void *p, size_t i, int fmt) {
    if (fmt == HY_ATTN_KV_FP8) return hy_fp8_e4m3_to_f32(((const uint8_t *)p)[i]);
    if (fmt == HY_ATTN_KV_BF16) return hy_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/* Keys are visited in their blocks of HY_ATTN_KB (stored transposed, kernels/attn.h); within a
 * block the scores are exact (one fma chain per key over the dims in order, as the SIMD
 * kernels compute them), across blocks the running max/sum are rescaled (online softmax), so
 * no buffer proportional to the context is needed. */
static void attn_head(const float *q, const void *k, const void *v, size_t ld, int n_kv, int dh, float scale,
                      int fmt, float *out) {
    float s[HY_ATTN_KB];
    float m = -INFINITY, l = 0.0f;
    for (int d = 0; d < dh; d++) out[d] = 0.0f;
    for (int j0 = 0; j0 < n_kv; j0 += HY_ATTN_KB) {
        int nb = n_kv - j0 < HY_ATTN_KB ? n_kv - j0 : HY_ATTN_KB;
        const size_t kb = hy_attn_key_block_at(j0, dh);
        float bm = -INFINITY;
        for (int j = 0; j < nb; j++) s[j] = 0.0f;
        for (int d = 0; d < dh; d++) /* dim by dim: the block's rows are contiguous */
            for (int j = 0; j < nb; j++) s[j] = fmaf(q[d], kv_at(k, kb + (size_t)d * HY_ATTN_KB + j, fmt), s[j]);
        for (int j = 0; j < nb; j++) {
            s[j] *= scale;
            if (s[j] > bm) bm = s[j];
        }
        if (bm > m) {
            float f = expf(m - bm); /* 0 on the first block (m = -inf) */
            l *= f;
            for (int d = 0; d < dh; d++) out[d] *= f;
            m = bm;
        }
        for (int j = 0; j < nb; j++) {
            float p = expf(s[j] - m);
            l += p;
            const size_t vj = (size_t)(j0 + j) * ld;
            for (int d = 0; d < dh; d++) out[d] += p * kv_at(v, vj + (size_t)d, fmt);
        }
    }
    float inv = 1.0f / l;
    for (int d = 0; d < dh; d++) out[d] *= inv;
}

void hy_ref_attn_head(const float *q, const float *k, const float *v, size_t ld, int n_kv, int dh, float scale,
                      float *out) {
    attn_head(q, k, v, ld, n_kv, dh, scale, HY_ATTN_KV_F32, out);
}

void hy_ref_attn_head_kv(const float *q, const void *k, const void *v, size_t ld, int n_kv, int dh, float scale,
                         int kv_fmt, float *out) {
    attn_head(q, k, v, ld, n_kv, dh, scale, kv_fmt, out);
}

void hy_ref_rmsnorm(const float *x, const float *w, int n, float eps, bool one_plus, float *y) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += x[i + l] * x[i + l];
    for (int l = 0; i < n; i++, l++) acc[l] += x[i] * x[i];
    const float r = 1.0f / sqrtf(lanes_sum(acc) / (float)n + eps);
    /* LANES at a time through a local block (y may be x), one loop per case: the compiler
     * vectorises these, where one loop with the branches inside stayed scalar (decode calls
     * this ~400 times a token on rows of 128..1024) */
    float t[LANES];
    for (i = 0; i + LANES <= n; i += LANES) {
        if (!w)
            for (int l = 0; l < LANES; l++) t[l] = x[i + l] * r;
        else if (one_plus)
            for (int l = 0; l < LANES; l++) t[l] = x[i + l] * r * (1.0f + w[i + l]);
        else
            for (int l = 0; l < LANES; l++) t[l] = x[i + l] * r * w[i + l];
        for (int l = 0; l < LANES; l++) y[i + l] = t[l];
    }
    for (; i < n; i++) y[i] = !w ? x[i] * r : one_plus ? x[i] * r * (1.0f + w[i]) : x[i] * r * w[i];
}

void hy_ref_rope_inv_freq(int rot_dim, double theta, float *inv_freq) {
    for (int i = 0; i < rot_dim / 2; i++) {
        float e = (float)(2 * i) / (float)rot_dim;
        inv_freq[i] = 1.0f / powf((float)theta, e);
    }
}

void hy_ref_rope_cos_sin(int64_t pos, int half, const float *inv_freq, float *cos_out, float *sin_out) {
    for (int i = 0; i < half; i++) {
        float a = (float)pos * inv_freq[i];
        cos_out[i] = (float)cos((double)a);
        sin_out[i] = (float)sin((double)a);
    }
}

void hy_ref_rope_neox(float *x, int half, const float *cos_v, const float *sin_v) {
    for (int j = 0; j < half; j++) {
        float a = x[j], b = x[j + half];
        x[j] = a * cos_v[j] - b * sin_v[j];
        x[j + half] = b * cos_v[j] + a * sin_v[j];
    }
}

void hy_ref_convert_f32(hy_dtype t, const void *src, size_t n, float *dst) {
    switch (t) {
    case HY_DTYPE_F32: memcpy(dst, src, n * sizeof(float)); break;
    case HY_DTYPE_BF16:
        for (size_t i = 0; i < n; i++) dst[i] = hy_bf16_to_f32(((const uint16_t *)src)[i]);
        break;
    case HY_DTYPE_F16:
        for (size_t i = 0; i < n; i++) dst[i] = hy_f16_to_f32(((const uint16_t *)src)[i]);
        break;
    default: HY_ASSERT(!"convert_f32: unsupported dtype (checked at context creation)");
    }
}

void hy_ref_row_f32(const hy_tensor *t, int64_t row, float *dst) {
    size_t n = (size_t)t->shape[1];
    const unsigned char *p = (const unsigned char *)t->data + (size_t)row * n * hy_dtype_size(t->dtype);
    hy_ref_convert_f32(t->dtype, p, n, dst);
}

static const hy_ops k_ref_ops = {
    .name = "ref",
    .matmul = hy_ref_matmul_mat,
    .attn_head = hy_ref_attn_head,
};

const hy_ops *hy_ops_ref(void) { return &k_ref_ops; }
