/* kernels/cpu/ref.c against straightforward double-precision formulas. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/fp.h"
#include "kernels/attn.h"
#include "kernels/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform [-1, 1) */
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static hy_tensor mat(hy_dtype t, int out, int in, const void *data) {
    hy_tensor w;
    memset(&w, 0, sizeof w);
    w.name = "w"; w.dtype = t; w.ndim = 2; w.shape[0] = out; w.shape[1] = in; w.data = data;
    w.nbytes = (size_t)out * in * hy_dtype_size(t);
    return w;
}

static void test_matmul(void **st) {
    (void)st;
    enum { O = 13, I = 37, T = 3 };
    float wf[O * I], x[T * I], y[T * O], y2[T * O], yb[T * O];
    uint16_t wb[O * I];
    for (int i = 0; i < O * I; i++) { wb[i] = hy_f32_to_bf16(frand()); wf[i] = hy_bf16_to_f32(wb[i]); }
    for (int i = 0; i < T * I; i++) x[i] = frand();
    hy_tensor W = mat(HY_DTYPE_F32, O, I, wf), Wb = mat(HY_DTYPE_BF16, O, I, wb);
    hy_ref_matmul(&W, T, x, I, y, O, 0, O, false);
    /* split into two row ranges: identical results */
    hy_ref_matmul(&W, T, x, I, y2, O, 0, 5, false);
    hy_ref_matmul(&W, T, x, I, y2, O, 5, O, false);
    assert_memory_equal(y, y2, sizeof y);
    /* bf16 in place == fp32 copy of the same values, bit for bit */
    hy_ref_matmul(&Wb, T, x, I, yb, O, 0, O, false);
    assert_memory_equal(y, yb, sizeof y);
    double maxd = 0;
    for (int t = 0; t < T; t++)
        for (int o = 0; o < O; o++) {
            double d = 0;
            for (int i = 0; i < I; i++) d += (double)wf[o * I + i] * x[t * I + i];
            maxd = fmax(maxd, fabs(d - y[t * O + o]));
        }
    printf("matmul max|d| vs double: %.3g\n", maxd);
    assert_true(maxd < 1e-5);
    /* accumulate adds */
    for (int i = 0; i < T * O; i++) y2[i] = 1.0f;
    hy_ref_matmul(&W, T, x, I, y2, O, 0, O, true);
    for (int i = 0; i < T * O; i++) assert_true(y2[i] == 1.0f + y[i]);
}

static void test_attn_head(void **st) {
    (void)st;
    enum { DH = 20, LD = 44, N = 150, NBLK = (N + HY_ATTN_KB - 1) / HY_ATTN_KB };
    static float k[N * LD], v[N * LD], kt[NBLK * DH * HY_ATTN_KB];
    float q[DH], out[DH];
    for (int i = 0; i < N * LD; i++) { k[i] = 3 * frand(); v[i] = frand(); }
    for (int j = 0; j < N; j++) /* the keys as the kernels take them: transposed blocks */
        for (int d = 0; d < DH; d++) kt[((j / HY_ATTN_KB) * DH + d) * HY_ATTN_KB + j % HY_ATTN_KB] = k[j * LD + d];
    for (int i = 0; i < DH; i++) q[i] = 3 * frand();
    int lens[] = {1, 2, 63, 64, 65, 129, 150};
    double worst = 0;
    for (size_t c = 0; c < sizeof lens / sizeof lens[0]; c++) {
        int n = lens[c];
        hy_ref_attn_head(q, kt, v, LD, n, DH, 0.3f, out);
        double s[N], m = -INFINITY, l = 0;
        for (int j = 0; j < n; j++) {
            s[j] = 0;
            for (int d = 0; d < DH; d++) s[j] += (double)q[d] * k[j * LD + d];
            s[j] *= 0.3;
            m = fmax(m, s[j]);
        }
        for (int j = 0; j < n; j++) l += exp(s[j] - m);
        for (int d = 0; d < DH; d++) {
            double o = 0;
            for (int j = 0; j < n; j++) o += exp(s[j] - m) / l * v[j * LD + d];
            worst = fmax(worst, fabs(o - out[d]));
        }
    }
    printf("attn_head max|d| vs double: %.3g\n", worst);
    assert_true(worst < 1e-5);
}

static void test_rmsnorm(void **st) {
    (void)st;
    enum { N = 29 };
    float x[N], w[N], y1[N], y2[N], y3[N];
    for (int i = 0; i < N; i++) { x[i] = 2 * frand(); w[i] = frand(); }
    hy_ref_rmsnorm(x, w, N, 1e-6f, true, y1);
    hy_ref_rmsnorm(x, w, N, 1e-6f, false, y2);
    hy_ref_rmsnorm(x, NULL, N, 1e-6f, false, y3);
    double ms = 0;
    for (int i = 0; i < N; i++) ms += (double)x[i] * x[i];
    double r = 1.0 / sqrt(ms / N + 1e-6), worst = 0;
    for (int i = 0; i < N; i++) {
        worst = fmax(worst, fabs(x[i] * r * (1.0 + w[i]) - y1[i]));
        worst = fmax(worst, fabs(x[i] * r * w[i] - y2[i]));
        worst = fmax(worst, fabs(x[i] * r - y3[i]));
    }
    printf("rmsnorm max|d| vs double: %.3g\n", worst);
    assert_true(worst < 1e-5);
    /* in place */
    memcpy(y3, x, sizeof x);
    hy_ref_rmsnorm(y3, w, N, 1e-6f, true, y3);
    assert_memory_equal(y1, y3, sizeof y1);
}

static void test_rope(void **st) {
    (void)st;
    enum { DH = 32, ROT = 8, HALF = ROT / 2 };
    float inv[HALF], c[HALF], s[HALF], x[DH], x0[DH];
    hy_ref_rope_inv_freq(ROT, 1e7, inv);
    assert_true(inv[0] == 1.0f);
    assert_true(fabs(inv[1] - pow(1e7, -2.0 / 8)) < 1e-9);
    hy_ref_rope_cos_sin(700, HALF, inv, c, s);
    for (int i = 0; i < DH; i++) x0[i] = x[i] = frand();
    hy_ref_rope_neox(x, HALF, c, s);
    for (int j = 0; j < HALF; j++) {
        double a = fmod(700.0 * inv[j], 2 * M_PI);
        double e0 = x0[j] * cos(a) - x0[j + HALF] * sin(a), e1 = x0[j + HALF] * cos(a) + x0[j] * sin(a);
        assert_true(fabs(e0 - x[j]) < 1e-5 && fabs(e1 - x[j + HALF]) < 1e-5);
    }
    for (int i = ROT; i < DH; i++) assert_true(x[i] == x0[i]); /* pass-through */
    /* position 0 is the identity */
    hy_ref_rope_cos_sin(0, HALF, inv, c, s);
    memcpy(x, x0, sizeof x);
    hy_ref_rope_neox(x, HALF, c, s);
    assert_memory_equal(x, x0, sizeof x);
}

static void test_convert(void **st) {
    (void)st;
    uint16_t b[3] = {0x3f80, 0xc000, 0x0000};
    uint16_t h[2] = {0x3c00, 0xc000};
    float o[3];
    hy_ref_convert_f32(HY_DTYPE_BF16, b, 3, o);
    assert_true(o[0] == 1.0f && o[1] == -2.0f && o[2] == 0.0f);
    hy_ref_convert_f32(HY_DTYPE_F16, h, 2, o);
    assert_true(o[0] == 1.0f && o[1] == -2.0f);
    assert_true(hy_ops_matmul_dtype_ok(HY_DTYPE_BF16) && !hy_ops_matmul_dtype_ok(HY_DTYPE_F8_E4M3));
    assert_non_null(hy_ops_ref()->matmul);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul), cmocka_unit_test(test_attn_head), cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rope),   cmocka_unit_test(test_convert),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
