/*
 * Load-time weight quantizers (kernels/matmul.h): Q8/Q4 packing in the layout the int8 kernels
 * read, and FP8 e4m3 with block scales in the official *-FP8 layout. Scalar and ISA-independent,
 * so every tier reads identical packed weights; callers split rows across threads.
 *
 * Scales: a Q8/Q4 row keeps one fp32 scale d (the largest group scale of the row) and per group
 * an fp16 ratio h = group scale / d, |h| <= 1. fp16 then never overflows and only loses
 * precision (subnormals) for groups ~2^14 times smaller than the row's largest, whose products
 * are negligible in the row's sum. Quantization uses the scale exactly as stored (d·h), so the
 * round trip error is at most half a step of that scale.
 * Q4 is symmetric with 16 levels [-8, 7]; the group scale minimises the squared error over a
 * few candidates (q4_group_scale) instead of only mapping the extreme element to -8.
 * Values are divided by the group step through its reciprocal (one division per group).
 */
#include "kernels/matmul.h"

#include "base/fp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* SSE2 (every x86-64) runs the per-element loops four lanes at a time with the same IEEE
 * operations in the same order as the scalar code below it, so both give identical bits. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define QUANT_SSE2 1
#else
#define QUANT_SSE2 0
#endif

static inline uint8_t fp8_encode(float f) {
    const uint32_t u = hy_f32_to_bits(f);
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7f;              /* NaN */
    if (a >= 0x43e00000u) return sign | 0x7e;      /* >= 448: saturate */
    if (a < 0x3c800000u) {                         /* < 2^-6: subnormal steps of 2^-9 */
        const float s = hy_bits_to_f32(a) * 512.0f; /* exact, < 8 */
        const float r = (s + 0x1p23f) - 0x1p23f;    /* round to nearest even */
        return sign | (uint8_t)r;                   /* 8 is the smallest normal, 0x08 */
    }
    uint32_t m = a >> 20, r = a & 0xfffffu;
    m += (r > 0x80000u || (r == 0x80000u && (m & 1u)));
    return sign | (uint8_t)(m - (120u << 3));
}

uint8_t hy_fp8_e4m3_encode(float f) { return fp8_encode(f); }

#if QUANT_SSE2
/* fp8_encode of four values at once, same integer steps. */
static inline void fp8_encode4(__m128 f, uint8_t *out) {
    const __m128i u = _mm_castps_si128(f);
    const __m128i sign = _mm_and_si128(_mm_srli_epi32(u, 24), _mm_set1_epi32(0x80));
    const __m128i a = _mm_and_si128(u, _mm_set1_epi32(0x7fffffff));
    const __m128i nan = _mm_cmpgt_epi32(a, _mm_set1_epi32(0x7f800000));
    const __m128i sat = _mm_cmpgt_epi32(a, _mm_set1_epi32(0x43e00000 - 1));
    const __m128i sub = _mm_cmplt_epi32(a, _mm_set1_epi32(0x3c800000));
    /* subnormal: round(|f| * 512) by the 1.5·2^23 trick */
    const __m128 sf = _mm_mul_ps(_mm_castsi128_ps(a), _mm_set1_ps(512.0f));
    const __m128 sr = _mm_sub_ps(_mm_add_ps(sf, _mm_set1_ps(0x1p23f)), _mm_set1_ps(0x1p23f));
    const __m128i vsub = _mm_cvttps_epi32(sr);
    /* normal: exponent+3 mantissa bits, round to nearest even on the 20 dropped bits */
    __m128i m = _mm_srli_epi32(a, 20);
    const __m128i r = _mm_and_si128(a, _mm_set1_epi32(0xfffff));
    const __m128i half = _mm_set1_epi32(0x80000);
    const __m128i up = _mm_or_si128(_mm_cmpgt_epi32(r, half),
                                    _mm_and_si128(_mm_cmpeq_epi32(r, half),
                                                  _mm_cmpeq_epi32(_mm_and_si128(m, _mm_set1_epi32(1)), _mm_set1_epi32(1))));
    m = _mm_sub_epi32(m, up); /* up is -1 where rounding up */
    const __m128i vnorm = _mm_sub_epi32(m, _mm_set1_epi32(120 << 3));
    __m128i v = _mm_or_si128(_mm_and_si128(sub, vsub), _mm_andnot_si128(sub, vnorm));
    v = _mm_or_si128(_mm_and_si128(sat, _mm_set1_epi32(0x7e)), _mm_andnot_si128(sat, v));
    v = _mm_or_si128(v, sign);
    v = _mm_or_si128(_mm_and_si128(nan, _mm_set1_epi32(0x7f)), _mm_andnot_si128(nan, v));
    const __m128i p16 = _mm_packs_epi32(v, v);
    const int32_t b4 = _mm_cvtsi128_si32(_mm_packus_epi16(p16, p16));
    memcpy(out, &b4, 4);
}
#endif

int hy_fp8_quant_rows(const float *w, int nr, int cols, int bs1, uint8_t *out, float *scale) {
    int bad = 0;
    for (int c0 = 0, cb = 0; c0 < cols; c0 += bs1, cb++) {
        const int c1 = c0 + bs1 < cols ? c0 + bs1 : cols;
        float amax = 0.0f;
        for (int r = 0; r < nr; r++) {
            const float *row = w + (size_t)r * cols;
            for (int k = c0; k < c1; k++) {
                const float a = fabsf(row[k]);
                amax = a > amax ? a : amax;
                bad += !(a <= 3.4028235e38f);
            }
        }
        const float s = amax > 0.0f ? amax / 448.0f : 1.0f;
        scale[cb] = s;
        for (int r = 0; r < nr; r++) {
            const float *row = w + (size_t)r * cols;
            uint8_t *o = out + (size_t)r * cols;
            int k = c0;
#if QUANT_SSE2
            for (; k + 4 <= c1; k += 4) fp8_encode4(_mm_div_ps(_mm_loadu_ps(row + k), _mm_set1_ps(s)), o + k);
#endif
            for (; k < c1; k++) o[k] = fp8_encode(row[k] / s);
        }
    }
    return bad;
}

/* Σ (w - d·q)² with q = clamp(round(w/d), -8, 7), and the sums Σ w·q, Σ q² of that assignment,
 * over a zero-padded group of 32 (zeros add nothing). Eight interleaved partial sums keep the
 * loop free of a serial dependency (and vectorisable). */
static float q4_eval(const float *w, float d, float *swq, float *sqq) {
    const float id = 1.0f / d;
    float err[8] = {0}, a[8] = {0}, b[8] = {0};
#if QUANT_SSE2
    __m128 e0 = _mm_setzero_ps(), e1 = e0, a0 = e0, a1 = e0, b0 = e0, b1 = e0;
    const __m128 vid = _mm_set1_ps(id), vd = _mm_set1_ps(d), M = _mm_set1_ps(0x1.8p23f);
#define Q4_LANES(W, E, A, B)                                                                                           \
    do {                                                                                                               \
        __m128 q = _mm_mul_ps(W, vid);                                                                                 \
        q = _mm_min_ps(_mm_max_ps(q, _mm_set1_ps(-8.5f)), _mm_set1_ps(7.5f));                                         \
        q = _mm_sub_ps(_mm_add_ps(q, M), M);                                                                           \
        q = _mm_min_ps(_mm_max_ps(q, _mm_set1_ps(-8.0f)), _mm_set1_ps(7.0f));                                         \
        const __m128 r = _mm_sub_ps(W, _mm_mul_ps(vd, q));                                                             \
        E = _mm_add_ps(E, _mm_mul_ps(r, r));                                                                           \
        A = _mm_add_ps(A, _mm_mul_ps(W, q));                                                                           \
        B = _mm_add_ps(B, _mm_mul_ps(q, q));                                                                           \
    } while (0)
    for (int i = 0; i < HY_Q_GROUP; i += 8) {
        const __m128 w0 = _mm_loadu_ps(w + i), w1 = _mm_loadu_ps(w + i + 4);
        Q4_LANES(w0, e0, a0, b0);
        Q4_LANES(w1, e1, a1, b1);
    }
#undef Q4_LANES
    _mm_storeu_ps(err, e0), _mm_storeu_ps(err + 4, e1);
    _mm_storeu_ps(a, a0), _mm_storeu_ps(a + 4, a1);
    _mm_storeu_ps(b, b0), _mm_storeu_ps(b + 4, b1);
#else
    for (int i = 0; i < HY_Q_GROUP; i += 8)
        for (int l = 0; l < 8; l++) {
            float q = w[i + l] * id;
            q = q < -8.5f ? -8.5f : q;
            q = q > 7.5f ? 7.5f : q;
            q = (q + 0x1.8p23f) - 0x1.8p23f;
            q = q < -8.0f ? -8.0f : q;
            q = q > 7.0f ? 7.0f : q;
            const float r = w[i + l] - d * q;
            err[l] += r * r;
            a[l] += w[i + l] * q;
            b[l] += q * q;
        }
#endif
    float e = 0.0f, sa = 0.0f, sb = 0.0f;
    for (int l = 0; l < 8; l++) e += err[l], sa += a[l], sb += b[l];
    *swq = sa;
    *sqq = sb;
    return e;
}

/* The Q4 scale of a group: from two starting points (the extreme element at -8 or at +7), one
 * least-squares refinement each (d = Σwq / Σq² for the rounded assignment, then re-rounded);
 * the candidate with the smallest squared error wins. 0 for an all-zero group. */
static float q4_group_scale(const float *w, int n) {
    float g[HY_Q_GROUP] = {0};
    float amax = 0.0f, m = 0.0f;
    for (int i = 0; i < n; i++) {
        g[i] = w[i];
        if (fabsf(w[i]) > amax) amax = fabsf(w[i]), m = w[i];
    }
    if (amax == 0.0f) return 0.0f;
    static const float starts[] = {-8.0f, 7.0f};
    float best_d = m / -8.0f, best_e = INFINITY;
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        float d = m / starts[s], a, b;
        float e = q4_eval(g, d, &a, &b);
        if (e < best_e) best_e = e, best_d = d;
        if (b > 0.0f && a != 0.0f) {
            d = a / b;
            e = q4_eval(g, d, &a, &b);
            if (e < best_e) best_e = e, best_d = d;
        }
    }
    return best_d;
}

static int count_nonfinite(const float *x, int n) {
    int i = 0;
#if QUANT_SSE2
    __m128 z = _mm_setzero_ps(); /* x·0 is NaN exactly for Inf / NaN x */
    for (; i + 4 <= n; i += 4) z = _mm_add_ps(z, _mm_mul_ps(_mm_loadu_ps(x + i), _mm_setzero_ps()));
    if (_mm_movemask_ps(_mm_cmpunord_ps(z, z)) == 0) {
        int bad = 0;
        for (; i < n; i++) bad += !isfinite(x[i]);
        return bad;
    }
    i = 0;
#endif
    int bad = 0;
    for (; i < n; i++) bad += !isfinite(x[i]);
    return bad;
}

/* max |x[i]| over n finite values */
static float abs_max(const float *x, int n) {
    int i = 0;
    float m = 0.0f;
#if QUANT_SSE2
    __m128 v = _mm_setzero_ps();
    const __m128 mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    for (; i + 4 <= n; i += 4) v = _mm_max_ps(v, _mm_and_ps(_mm_loadu_ps(x + i), mask));
    float t[4];
    _mm_storeu_ps(t, v);
    for (int l = 0; l < 4; l++) m = t[l] > m ? t[l] : m;
#endif
    for (; i < n; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

/* q[i] = clamp(round(w[i]·ie), lo, hi) for i < n (values first clamped to ±200 so the rounding
 * trick stays exact), 0 for n <= i < 32. */
static void group_quant(const float *w, int n, float ie, float lo, float hi, int32_t *q) {
    int i = 0;
#if QUANT_SSE2
    const __m128 vie = _mm_set1_ps(ie), M = _mm_set1_ps(0x1.8p23f), vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
    for (; i + 4 <= n; i += 4) {
        __m128 v = _mm_mul_ps(_mm_loadu_ps(w + i), vie);
        v = _mm_min_ps(_mm_max_ps(v, _mm_set1_ps(-200.0f)), _mm_set1_ps(200.0f));
        v = _mm_sub_ps(_mm_add_ps(v, M), M);
        v = _mm_min_ps(_mm_max_ps(v, vlo), vhi);
        _mm_storeu_si128((__m128i *)(q + i), _mm_cvttps_epi32(v));
    }
#endif
    for (; i < n; i++) {
        float v = w[i] * ie;
        v = v > 200.0f ? 200.0f : v < -200.0f ? -200.0f : v;
        v = (v + 0x1.8p23f) - 0x1.8p23f; /* round to nearest even */
        v = v < lo ? lo : v > hi ? hi : v;
        q[i] = (int32_t)v;
    }
    for (; i < HY_Q_GROUP; i++) q[i] = 0;
}

int hy_q_pack_block(hy_wfmt f, const float *w, int nr, int cols, int b, void *data, float *scale) {
    const int G = hy_q_groups(cols);
    const bool q4 = f == HY_WFMT_Q4;
    const size_t R = hy_q_record_bytes(f);
    unsigned char *blk = (unsigned char *)data + (size_t)b * hy_q_block_bytes(f, G);
    uint16_t *hs = (uint16_t *)blk; /* group 0's scales (hy_q_gscale_offset from there) */
    int bad = 0;
    float *dgs = malloc(sizeof(float) * (size_t)G);
    if (!dgs) return -1;
    /* padding first: value 0 everywhere, scales 0 */
    for (int g = 0; g < G; g++) {
        memset(blk + hy_q_rec_offset(f, g), q4 ? 0x88 : 0x80, R);
        memset(hs + hy_q_gscale_offset(f, g), 0, HY_Q_ROWS * sizeof *hs);
    }
    if (G % 2) memset(hs + hy_q_gscale_offset(f, G), 0, HY_Q_ROWS * sizeof *hs); /* the last line's unused half */
    for (int j = 0; j < HY_Q_ROWS; j++) scale[b * HY_Q_ROWS + j] = 0.0f;
    for (int j = 0; j < nr; j++) {
        const float *row = w + (size_t)j * cols;
        float dmax = 0.0f;
        bad += count_nonfinite(row, cols);
        if (bad) continue;
        /* group scales, then the row scale */
        for (int g = 0; g < G; g++) {
            const int k0 = g * HY_Q_GROUP, n = cols - k0 < HY_Q_GROUP ? cols - k0 : HY_Q_GROUP;
            float dg;
            if (q4) dg = q4_group_scale(row + k0, n);
            else dg = abs_max(row + k0, n) / 127.0f;
            dgs[g] = dg;
            if (fabsf(dg) > dmax) dmax = fabsf(dg);
        }
        scale[b * HY_Q_ROWS + j] = dmax;
        if (dmax == 0.0f) continue;
        for (int g = 0; g < G; g++) {
            const int k0 = g * HY_Q_GROUP, n = cols - k0 < HY_Q_GROUP ? cols - k0 : HY_Q_GROUP;
            const uint16_t h = hy_f32_to_f16(dgs[g] / dmax);
            hs[hy_q_gscale_offset(f, g) + (size_t)j] = h;
            const float e = dmax * hy_f16_to_f32(h), ie = e != 0.0f ? 1.0f / e : 0.0f;
            unsigned char *rec = blk + hy_q_rec_offset(f, g);
            int32_t qi[HY_Q_GROUP];
            group_quant(row + k0, n, ie, q4 ? -8.0f : -127.0f, q4 ? 7.0f : 127.0f, qi);
            if (q4)
                for (int v = 0; v < 4; v++)
                    for (int i = 0; i < 4; i++)
                        rec[v * 64 + j * 4 + i] = (unsigned char)((qi[8 * v + i] + 8) | ((qi[8 * v + 4 + i] + 8) << 4));
            else
                for (int i = 0; i < HY_Q_GROUP; i++) rec[(i / 4) * 64 + j * 4 + i % 4] = (unsigned char)(qi[i] + 128);
        }
    }
    free(dgs);
    return bad;
}
