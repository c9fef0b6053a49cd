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
 * Q4 is symmetric with 16 levels: the group's element of largest magnitude maps to -8 (one
 * more level than ±7), the others round to the nearest of [-8, 7].
 */
#include "kernels/matmul.h"

#include "base/fp.h"

#include <math.h>
#include <string.h>

uint8_t hy_fp8_e4m3_encode(float f) {
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

int hy_fp8_quant_rows(const float *w, int nr, int cols, int bs1, uint8_t *out, float *scale) {
    int bad = 0;
    for (int c0 = 0, cb = 0; c0 < cols; c0 += bs1, cb++) {
        const int c1 = c0 + bs1 < cols ? c0 + bs1 : cols;
        float amax = 0.0f;
        for (int r = 0; r < nr; r++)
            for (int k = c0; k < c1; k++) {
                const float a = fabsf(w[(size_t)r * cols + k]);
                if (!isfinite(a)) bad++;
                else if (a > amax) amax = a;
            }
        const float s = amax > 0.0f ? amax / 448.0f : 1.0f;
        scale[cb] = s;
        for (int r = 0; r < nr; r++)
            for (int k = c0; k < c1; k++) out[(size_t)r * cols + k] = hy_fp8_e4m3_encode(w[(size_t)r * cols + k] / s);
    }
    return bad;
}

int hy_q_pack_block(hy_wfmt f, const float *w, int nr, int cols, int b, void *data, uint16_t *gscale,
                    float *scale) {
    const int G = hy_q_groups(cols);
    const bool q4 = f == HY_WFMT_Q4;
    const size_t R = hy_q_record_bytes(f);
    unsigned char *blk = (unsigned char *)data + (size_t)b * G * R;
    uint16_t *hs = gscale + (size_t)b * G * HY_Q_ROWS;
    int bad = 0;
    /* padding first: value 0 everywhere */
    memset(blk, q4 ? 0x88 : 0x80, (size_t)G * R);
    memset(hs, 0, (size_t)G * HY_Q_ROWS * sizeof *hs);
    for (int j = 0; j < HY_Q_ROWS; j++) scale[b * HY_Q_ROWS + j] = 0.0f;
    for (int j = 0; j < nr; j++) {
        const float *row = w + (size_t)j * cols;
        float dmax = 0.0f;
        for (int k = 0; k < cols; k++)
            if (!isfinite(row[k])) bad++;
        if (bad) continue;
        /* group scales, then the row scale */
        for (int g = 0; g < G; g++) {
            const int k0 = g * HY_Q_GROUP, n = cols - k0 < HY_Q_GROUP ? cols - k0 : HY_Q_GROUP;
            float amax = 0.0f;
            for (int i = 0; i < n; i++)
                if (fabsf(row[k0 + i]) > amax) amax = fabsf(row[k0 + i]);
            const float dg = q4 ? amax / 8.0f : amax / 127.0f;
            if (dg > dmax) dmax = dg;
        }
        scale[b * HY_Q_ROWS + j] = dmax;
        if (dmax == 0.0f) continue;
        for (int g = 0; g < G; g++) {
            const int k0 = g * HY_Q_GROUP, n = cols - k0 < HY_Q_GROUP ? cols - k0 : HY_Q_GROUP;
            float amax = 0.0f, m = 0.0f;
            for (int i = 0; i < n; i++)
                if (fabsf(row[k0 + i]) > amax) amax = fabsf(row[k0 + i]), m = row[k0 + i];
            /* Q4: the extreme element maps to -8, so the scale carries the opposite sign */
            const float dg = q4 ? m / -8.0f : amax / 127.0f;
            const uint16_t h = hy_f32_to_f16(dg / dmax);
            hs[(size_t)g * HY_Q_ROWS + j] = h;
            const float e = dmax * hy_f16_to_f32(h);
            unsigned char *rec = blk + (size_t)g * R;
            for (int i = 0; i < n; i++) {
                float q = e != 0.0f ? row[k0 + i] / e : 0.0f;
                q = q > 200.0f ? 200.0f : q < -200.0f ? -200.0f : q;
                q = (q + 0x1.8p23f) - 0x1.8p23f; /* round to nearest even */
                if (q4) {
                    q = q < -8.0f ? -8.0f : q > 7.0f ? 7.0f : q;
                    const int v = i / 8, s = i % 8;
                    unsigned char *p = &rec[v * 64 + j * 4 + s % 4];
                    const unsigned nib = (unsigned)((int)q + 8);
                    *p = s < 4 ? (unsigned char)((*p & 0xf0u) | nib) : (unsigned char)((*p & 0x0fu) | (nib << 4));
                } else {
                    q = q < -127.0f ? -127.0f : q > 127.0f ? 127.0f : q;
                    rec[(i / 4) * 64 + j * 4 + i % 4] = (unsigned char)((int)q + 128);
                }
            }
        }
    }
    return bad;
}
