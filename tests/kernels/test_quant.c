/* Load-time quantizers (kernels/cpu/quant.c): quantize -> dequantize round trips for FP8 (block
 * scales), Q8 and Q4, and the fast fp32 -> e4m3 encoder against base/fp.h's reference encoder.
 *
 * Bounds checked per element:
 *  - fp8: |w - deq| <= half an e4m3 step at |w|/s, times s (relative 2^-4 for normals, absolute
 *    2^-10·s in the subnormal range), s = amax/448 of the block;
 *  - q8: |w - deq| <= e/2·(1 + 2^-20), e = d·h the group step (e <= amax/127·(1 + 2^-11));
 *  - q4: <= amax/8 (one nominal step): the least-squares scale may be up to 8/7 of amax/8
 *    and may leave an element outside [-8, 7]·e, clamped.
 * RMS errors relative to the group's amax are printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/fp.h"
#include "kernels/matmul.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_s = 12345;
static double urand(void) {
    uint64_t z = (g_s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}
static float gauss(void) {
    double u = urand(), v = urand();
    if (u < 1e-300) u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static void test_fp8_encoder(void **st) {
    (void)st;
    /* every byte decodes and re-encodes to itself (except NaN codes -> 0x7f and -0 -> 0x80) */
    for (int b = 0; b < 256; b++) {
        if ((b & 0x7f) == 0x7f) continue;
        assert_int_equal(hy_fp8_e4m3_encode(hy_fp8_e4m3_to_f32((uint8_t)b)), b);
    }
    /* the fast encoder equals the reference on a dense sample of fp32 bit patterns: every
     * exponent, the top 5 mantissa bits exhaustively, low bits at and around the rounding ties */
    static const uint32_t low[] = {0, 1, 0x3ffff, 0x40000, 0x40001, 0x7ffff, 0x80000, 0x80001, 0xfffff};
    long n = 0;
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t e = 0; e < 256; e++)
            for (uint32_t m = 0; m < 8; m++)
                for (size_t l = 0; l < sizeof low / sizeof low[0]; l++)
                    for (uint32_t mid = 0; mid < 4; mid++) {
                        const uint32_t u = s << 31 | e << 23 | m << 20 | (low[l] ^ (mid << 18 & 0xfffff));
                        const float f = hy_bits_to_f32(u);
                        assert_int_equal(hy_fp8_e4m3_encode(f), hy_f32_to_fp8_e4m3(f));
                        n++;
                    }
    for (int i = 0; i < 200000; i++) {
        const float f = (float)((urand() * 2 - 1) * pow(2.0, urand() * 24 - 14));
        assert_int_equal(hy_fp8_e4m3_encode(f), hy_f32_to_fp8_e4m3(f));
        n++;
    }
    printf("fp8 encoder: %ld values equal to the reference\n", n);

    /* the block quantizer's vectorised encoding == the scalar encoder of w / s, element for
     * element, over values spanning the subnormal, normal and saturating ranges and ties */
    enum { R = 3, C = 389 };
    float w[R * C], sc[4];
    uint8_t q[R * C];
    for (int i = 0; i < R * C; i++) {
        const double mag = pow(2.0, urand() * 30 - 20);
        w[i] = (float)((i % 2 ? -1 : 1) * mag);
        if (i % 11 == 0) w[i] = (float)((i % 4) * 0x1p-9 * 3.0); /* exact multiples: subnormal ties */
    }
    w[7] = 1e30f;
    assert_int_equal(hy_fp8_quant_rows(w, R, C, 128, q, sc), 0);
    for (int r = 0; r < R; r++)
        for (int k = 0; k < C; k++) assert_int_equal(q[r * C + k], hy_fp8_e4m3_encode(w[r * C + k] / sc[k / 128]));
}

/* Builds a q8/q4/fp8 matrix of rows x cols from w and returns its rows as fp32. */
static void roundtrip(hy_wfmt f, const float *w, int rows, int cols, float *deq) {
    hy_mat m;
    memset(&m, 0, sizeof m);
    m.fmt = f;
    m.rows = rows;
    m.cols = cols;
    void *data = NULL;
    float *scale = NULL;
    if (f == HY_WFMT_FP8) {
        const int nbr = (rows + 127) / 128, nbc = (cols + 127) / 128;
        data = calloc((size_t)rows * cols, 1);
        scale = calloc((size_t)nbr * nbc, 4);
        for (int rb = 0; rb < nbr; rb++) {
            const int nr = rows - rb * 128 < 128 ? rows - rb * 128 : 128;
            assert_int_equal(hy_fp8_quant_rows(w + (size_t)rb * 128 * cols, nr, cols, 128,
                                               (uint8_t *)data + (size_t)rb * 128 * cols, scale + rb * nbc), 0);
        }
        m.bs0 = m.bs1 = 128;
    } else {
        const int nb = hy_q_blocks(rows), G = hy_q_groups(cols);
        data = calloc((size_t)nb, hy_q_block_bytes(f, G));
        scale = calloc((size_t)nb * HY_Q_ROWS, 4);
        for (int b = 0; b < nb; b++) {
            const int nr = rows - b * 16 < 16 ? rows - b * 16 : 16;
            assert_int_equal(hy_q_pack_block(f, w + (size_t)b * 16 * cols, nr, cols, b, data, scale), 0);
        }
        assert_int_equal(hy_mat_bytes(&m), hy_wfmt_bytes(f, rows, cols));
    }
    m.data = data;
    m.scale = scale;
    /* where the rows of a split start: block b's records right after block b-1's (Q), row r at
     * r·cols bytes (FP8); the end is the size of the data array */
    if (f == HY_WFMT_FP8) {
        assert_int_equal(hy_mat_data_offset(&m, rows), (size_t)rows * cols);
        assert_int_equal(hy_mat_data_offset(&m, 8), (size_t)8 * cols);
    } else {
        const size_t blk = hy_q_block_bytes(f, hy_q_groups(cols));
        assert_int_equal(hy_mat_data_offset(&m, rows), (size_t)hy_q_blocks(rows) * blk);
        assert_int_equal(hy_mat_data_offset(&m, HY_Q_ROWS), blk);
    }
    for (int r = 0; r < rows; r++) hy_mat_row_f32(&m, r, deq + (size_t)r * cols);
    free(data);
    free(scale);
}

static void test_roundtrip(void **st) {
    (void)st;
    enum { R = 37, C = 301 };
    float *w = malloc(sizeof(float) * R * C), *d = malloc(sizeof(float) * R * C);
    for (int i = 0; i < R * C; i++) w[i] = 0.02f * gauss();
    for (int c = 0; c < C; c++) w[5 * C + c] *= 1e-4f;   /* a tiny row */
    for (int c = 0; c < 32; c++) w[7 * C + c] *= 1e-6f;  /* a tiny group next to normal ones */
    w[9 * C + 40] = 3.0f;                                 /* an outlier */
    for (int c = 64; c < 96; c++) w[11 * C + c] = 0.0f;  /* an all-zero group */
    w[13 * C + 100] = 1e-30f;

    /* fp8 */
    roundtrip(HY_WFMT_FP8, w, R, C, d);
    double rms = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            float amax = 0;
            for (int rr = r / 128 * 128; rr < R && rr < r / 128 * 128 + 128; rr++)
                for (int cc = c / 128 * 128; cc < C && cc < c / 128 * 128 + 128; cc++)
                    amax = fmaxf(amax, fabsf(w[rr * C + cc]));
            const double s = amax / 448.0, a = fabs(w[r * C + c]) / s;
            const double step = a < 0x1p-6 ? 0x1p-9 : pow(2.0, floor(log2(a)) - 3);
            const double e = fabs((double)w[r * C + c] - d[r * C + c]);
            assert_true(e <= step / 2 * s * (1 + 1e-6));
            rms += e * e / (s * s * 448 * 448);
        }
    printf("fp8: rms error / block amax = %.3g\n", sqrt(rms / (R * C)));

    for (int q4 = 0; q4 < 2; q4++) {
        const hy_wfmt f = q4 ? HY_WFMT_Q4 : HY_WFMT_Q8;
        roundtrip(f, w, R, C, d);
        double rms_rel = 0, worst_steps = 0;
        long clamped = 0;
        for (int r = 0; r < R; r++) {
            for (int g = 0; g < (C + 31) / 32; g++) {
                float amax = 0;
                for (int c = g * 32; c < C && c < g * 32 + 32; c++) amax = fmaxf(amax, fabsf(w[r * C + c]));
                const double step = q4 ? amax / 8.0 : amax / 127.0;
                for (int c = g * 32; c < C && c < g * 32 + 32; c++) {
                    const double e = fabs((double)w[r * C + c] - d[r * C + c]);
                    if (amax == 0) {
                        assert_true(d[r * C + c] == 0.0f);
                        continue;
                    }
                    /* fp16 group ratios lose precision only for groups >= 2^14 below the row max */
                    const double ns = e / step;
                    if (ns > worst_steps && !(r == 7 && g == 0)) worst_steps = ns;
                    if (r == 7 && g == 0) continue;
                    if (q4) { /* the fitted scale may exceed amax/8 by up to 8/7, or clamp an element */
                        if (ns > 0.5 * 8.0 / 7.0 + 1e-3) clamped++;
                        assert_true(ns <= 1.0 + 1e-3);
                    } else assert_true(ns <= 0.5 + 1e-3);
                    rms_rel += (e / amax) * (e / amax);
                }
            }
        }
        printf("%s: rms error / group amax = %.3g, worst %.3g steps, %ld clamped\n", hy_wfmt_name(f),
               sqrt(rms_rel / (R * C)), worst_steps, clamped);
        /* the tiny group stays finite and close in absolute terms */
        for (int c = 0; c < 32; c++) assert_true(fabs((double)w[7 * C + c] - d[7 * C + c]) < 1e-7);
    }
    free(w);
    free(d);
}

static void test_f16_encoder(void **st) {
    (void)st;
    for (uint32_t h = 0; h < 0x10000; h++) {
        const float f = hy_f16_to_f32((uint16_t)h);
        if (isnan(f)) {
            assert_true((hy_f32_to_f16(f) & 0x7c00) == 0x7c00 && (hy_f32_to_f16(f) & 0x3ff));
            continue;
        }
        assert_int_equal(hy_f32_to_f16(f), h);
    }
    /* ties between neighbours round to even */
    for (uint32_t h = 1; h < 0x7bff; h++) {
        const float a = hy_f16_to_f32((uint16_t)h), b = hy_f16_to_f32((uint16_t)(h + 1));
        const float mid = (float)(((double)a + b) / 2);
        assert_int_equal(hy_f32_to_f16(mid), (h & 1) ? h + 1 : h);
    }
    assert_int_equal(hy_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(hy_f32_to_f16(65519.0f), 0x7bff);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_encoder),
        cmocka_unit_test(test_f16_encoder),
        cmocka_unit_test(test_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
