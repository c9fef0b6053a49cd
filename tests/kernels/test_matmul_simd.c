/* kernels/matmul: every SIMD tier this machine runs against the scalar reference, for every
 * weight format (f32, bf16, f16, fp8 with block scales, q8, q4) and both activation modes, on
 * randomised shapes with odd row/column counts (tails of every vector width), T = 1, 2, 3, 7,
 * 9, 32 (GEMV tiles with fp32 activations, GEMM with bf16), 64, 65, 300, 600 (more tokens
 * than one block of the bf16 GEMM), split row ranges and accumulation.
 *
 * Tolerances:
 *  - float formats: |y - y_ref| <= (ceil(K/8) + 8) · 2^-23 · Σ_k |w_k x_k| per output (both
 *    results are fp32 sums of the same K products in different orders; each is within
 *    (chain length + log2 lanes)·2^-24·Σ|w x| of the exact sum). With HY_ACT_BF16 the AVX-512
 *    kernel sums each output in ONE chain over the columns (matmul_gemm.inc), so the bound
 *    there is (K + ceil(K/8) + 8) · 2^-24 · Σ|w x|. The worst observed ratio
 *    err / (2^-24 · Σ|w x|) is printed.
 *  - q8 / q4: bit-identical to the reference (integer dots, same float steps); bf16g and fp8g
 *    (row groups) too: one fma chain per output in column order in every kernel (matmul.h),
 *    except the AMX instance's bf16g, fp8g, q8 and q4 with bf16 activations and its bf16g and
 *    fp8g under the fast decode: bit-identical to amx_order_dot, the scalar form of TDPBF16PS's
 *    sums (Intel SDM) on their fp32 weights (e4m3·scale, d·h·q) rounded to bf16, denormals
 *    flushed (the fast decode's fp8g: codes e4m3·2^-120 against x·scale·2^120, matmul.h).
 *  - every tier: bit-identical across row splits, and the result for a token does not depend
 *    on T (one call of T tokens == T calls of one token), except HY_ACT_BF16 which only
 *    applies from HY_MATMUL_GEMM_MIN_T tokens on, and HY_ACT_BF16_GEMV (the fast decode: BF16
 *    weights against bf16 activations, vdpbf16ps where the tier has it, within the bf16 bound
 *    above) which applies up to HY_MATMUL_GEMV_MAX_T tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/fp.h"
#include "base/threadpool.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/matmul.h"
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rng { uint64_t s; } rng;
static double rng_u(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}
static float rng_sym(rng *r) { return (float)(2.0 * rng_u(r) - 1.0); }

/* The AMX instance's sums (matmul.h, kernels/cpu/matmul_amx.c: TDPBF16PS as the Intel SDM gives
 * it), as the scalar oracle of its bf16 activations: w and x rounded to bf16, denormals read as
 * zero and flushed from every result; per step of 32 columns (zero padded) one fma chain from
 * zero over the even columns and one over the odd, then acc = acc + (even + odd). */
static float ftz(float v) { return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v; }
static float amx_in(const float *v, int k, int K) { return k < K ? ftz(hy_round_bf16(ftz(v[k]))) : 0.0f; }
static float amx_order_dot(const float *w, const float *x, int K) {
    float acc = 0;
    for (int k0 = 0; k0 < K; k0 += 32) {
        float e = 0, o = 0;
        for (int k = k0; k < k0 + 32; k += 2) {
            e = ftz(fmaf(amx_in(w, k, K), amx_in(x, k, K), e));
            o = ftz(fmaf(amx_in(w, k + 1, K), amx_in(x, k + 1, K), o));
        }
        acc = ftz(acc + ftz(e + o));
    }
    return acc;
}
/* The AMX instance's exact BF16G sums (matmul.h): x as three bf16 parts, each the top 16 bits
 * of what the previous ones left (a value that is not finite: itself, then zeros), and per step
 * of 32 columns one TDPBF16PS (amx_order_dot's step) per part in turn. */
static void exact_parts(float v, float part[3]) {
    if (!isfinite(v)) {
        part[0] = v, part[1] = part[2] = 0.0f;
        return;
    }
    for (int p = 0; p < 3; p++) {
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        u &= 0xffff0000u;
        memcpy(&part[p], &u, sizeof u);
        v -= part[p];
    }
}
static float amx_exact_dot(const float *w, const float *x, int K) {
    float acc = 0;
    for (int k0 = 0; k0 < K; k0 += 32)
        for (int p = 0; p < 3; p++) {
            float e = 0, o = 0;
            for (int k = k0; k < k0 + 32; k += 2) {
                float xe[3] = {0, 0, 0}, xo[3] = {0, 0, 0};
                if (k < K) exact_parts(x[k], xe);
                if (k + 1 < K) exact_parts(x[k + 1], xo);
                e = ftz(fmaf(amx_in(w, k, K), ftz(xe[p]), e));
                o = ftz(fmaf(amx_in(w, k + 1, K), ftz(xo[p]), o));
            }
            acc = ftz(acc + ftz(e + o));
        }
    return acc;
}
/* The parts hold x exactly: x1 + x2 + x3 == x for every finite fp32 value tried, and none of
 * them has more than bf16's 8 significant bits. */
static void test_exact_parts(void **st) {
    (void)st;
    rng r = {17};
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)(rng_u(&r) * 4294967296.0);
        if (i % 4 == 0) u = (u & 0x807fffffu) | (uint32_t)(1 + (u >> 23) % 250) << 23; /* normal */
        float v, part[3];
        memcpy(&v, &u, sizeof v);
        if (!isfinite(v)) continue;
        exact_parts(v, part);
        for (int p = 0; p < 3; p++) assert_true(hy_round_bf16(part[p]) == part[p]);
        if (fabsf(v) >= 0x1p-100f) assert_true((double)part[0] + part[1] + part[2] == (double)v);
    }
    float part[3];
    exact_parts(FLT_MAX, part); /* truncation: nothing rounds up to infinity */
    assert_true(isfinite(part[0]) && (double)part[0] + part[1] + part[2] == (double)FLT_MAX);
    printf("exact parts: 200000 random fp32 values held exactly by three bf16 parts\n");
}

/* The FP8G fast decode's operands on AMX (matmul.h): row o's codes as e4m3·2^-120 (subnormal
 * codes are fp32 denormals, which amx_order_dot reads as zero) into w, and token xt as
 * bf16(fl32(scale(o, k)·2^120)·x(k)) into xs. */
static void amx_fp8_row(const hy_mat *W, int o, float *w) {
    const int nq = (W->cols + 3) / 4;
    const uint8_t *g = (const uint8_t *)W->data + (size_t)(o / 16) * (size_t)nq * 64 + 4 * (o % 16);
    for (int k = 0; k < W->cols; k++) w[k] = ldexpf(hy_fp8_e4m3_to_f32(g[(size_t)(k / 4) * 64 + k % 4]), -120);
}
static void amx_fp8_token(const hy_mat *W, int o, const float *xt, float *xs) {
    const float *sr = W->scale + (size_t)(o / W->bs0) * (size_t)((W->cols + W->bs1 - 1) / W->bs1);
    for (int k = 0; k < W->cols; k++) xs[k] = hy_round_bf16(sr[k / W->bs1] * 0x1p120f * xt[k]);
}

/* Which scalar AMX order check_amx_order compares with */
typedef enum amx_sum {
    AMX_BF16_ACT, /* amx_order_dot (HY_ACT_BF16) */
    AMX_FAST,     /* the fast decode's: amx_order_dot, FP8G on amx_fp8_row's and amx_fp8_token's operands */
    AMX_EXACT,    /* amx_exact_dot (BF16G, fp32 activations) */
} amx_sum;

/* y (T tokens, ldy apart) against the scalar AMX order bit for bit, failing with what at the
 * first difference; returns how many outputs were zero */
static long check_amx_order(const hy_mat *W, const float *x, int ldx, int T, const float *y, int ldy, amx_sum sum,
                            const char *what) {
    const bool f8 = sum == AMX_FAST && W->fmt == HY_WFMT_FP8G;
    float *wr = malloc(sizeof(float) * (size_t)W->cols), *xs = malloc(sizeof(float) * (size_t)W->cols);
    long zeros = 0;
    for (int o = 0; o < W->rows; o++) {
        if (f8) amx_fp8_row(W, o, wr);
        else hy_mat_row_f32(W, o, wr);
        for (int t = 0; t < T; t++) {
            const float *xt = x + (size_t)t * ldx;
            if (f8) amx_fp8_token(W, o, xt, xs), xt = xs;
            const float want = sum == AMX_EXACT ? amx_exact_dot(wr, xt, W->cols) : amx_order_dot(wr, xt, W->cols);
            const float got = y[(size_t)t * ldy + o];
            if (memcmp(&want, &got, sizeof got)) {
                printf("%s %s %dx%d T=%d out %d tok %d: %.9g vs AMX order %.9g\n", what, hy_wfmt_name(W->fmt),
                       W->rows, W->cols, T, o, t, (double)got, (double)want);
                fail();
            }
            zeros += want == 0.0f;
        }
    }
    free(wr);
    free(xs);
    return zeros;
}

/* every SIMD tier, the avx2 tier's second instance (tuned for Intel cores: other prefetch and
 * one-token Q8 / Q4 tiles, the same sums) and its third where the CPU has AVX-VNNI, the avx512
 * tier's second (tuned for Intel cores: other prefetch, the same sums but FP8's fast decode)
 * and, where the CPU has AMX-BF16, its third (AMX tiles for bf16 activations and the fast
 * decode: its own order, checked by check_amx_order) */
static int n_tiers;
static hy_matmul_fn tier_fn[HY_ISA_COUNT + 5];
static const char *tier_name[HY_ISA_COUNT + 5];
static bool tier_amx[HY_ISA_COUNT + 5];

static int setup(void **st) {
    (void)st;
    hy_cpu_features f;
    hy_cpu_detect(&f);
    for (int i = HY_ISA_AVX2; i < HY_ISA_COUNT; i++) {
        if (!hy_isa_supported(&f, (hy_isa)i) || !hy_matmul_get((hy_isa)i)) {
            printf("tier %s: not supported here, skipped\n", hy_isa_name((hy_isa)i));
            continue;
        }
        /* without AVX512_BF16 the tier runs only its no-bf16 instance (the others' bf16 paths
         * would fault); it runs wherever the tier does, so it is checked everywhere */
        const bool bf16 = i < HY_ISA_AVX512 || f.avx512_bf16 || f.avx512_emu;
        if (i == HY_ISA_AVX512 && hy_matmul_avx512_nobf16()) {
            tier_name[n_tiers] = "avx512 (intel, no bf16)";
            tier_fn[n_tiers++] = hy_matmul_avx512_nobf16();
        }
        if (!bf16) {
            printf("tier %s: the instances with bf16 instructions skipped (no avx512_bf16 here)\n", hy_isa_name((hy_isa)i));
            continue;
        }
        tier_name[n_tiers] = hy_isa_name((hy_isa)i);
        tier_fn[n_tiers++] = hy_matmul_get((hy_isa)i);
        if (i == HY_ISA_AVX2 && hy_matmul_avx2_intel()) {
            tier_name[n_tiers] = "avx2 (intel)";
            tier_fn[n_tiers++] = hy_matmul_avx2_intel();
        }
        if (i == HY_ISA_AVX2 && f.avx_vnni && hy_matmul_avx2_vnni()) {
            tier_name[n_tiers] = "avx2 (intel, avx-vnni)";
            tier_fn[n_tiers++] = hy_matmul_avx2_vnni();
        } else if (i == HY_ISA_AVX2) {
            printf("avx2 (intel, avx-vnni): no AVX-VNNI here, skipped\n");
        }
        if (i == HY_ISA_AVX512 && hy_matmul_avx512_intel()) {
            tier_name[n_tiers] = "avx512 (intel)";
            tier_fn[n_tiers++] = hy_matmul_avx512_intel();
        }
    }
    /* AMX: the hardware's, or the emulated tiles of a HYLA_AMX_EMU build */
    if (hy_isa_supported(&f, HY_ISA_AVX512) && hy_matmul_avx512_amx() && (f.amx_bf16 || f.amx_emu) &&
        !f.avx512_emu && hy_cpu_amx_permit(&f)) {
        tier_name[n_tiers] = f.amx_emu ? "avx512 (amx, emulated tiles)" : "avx512 (amx)";
        tier_amx[n_tiers] = true;
        tier_fn[n_tiers++] = hy_matmul_avx512_amx();
    } else {
        printf("avx512 (amx): no AMX-BF16 here, skipped\n");
    }
    return 0;
}

/* Whether tier ti computes FP8's fast decode sum (vdpbf16ps): the avx512 tier's Zen instance;
 * its Intel instances keep FP8 exact (vdpbf16ps at half rate there; matmul_avx512.c) */
static bool tier_fp8dp(int ti) { return !strcmp(tier_name[ti], "avx512"); }

/* A matrix in one format with everything it owns. */
typedef struct owned_mat {
    hy_mat m;
    void *data;
    float *scale;
} owned_mat;

static void owned_free(owned_mat *o) {
    hy_free(o->data);
    hy_free(o->scale);
}

/* Builds W (rows x cols) in format f from fp32 values w. */
static owned_mat make_mat(hy_wfmt f, const float *w, int rows, int cols, int bs0, int bs1) {
    owned_mat o;
    memset(&o, 0, sizeof o);
    o.m.fmt = f;
    o.m.rows = rows;
    o.m.cols = cols;
    o.m.name = "test";
    const size_t n = (size_t)rows * cols;
    switch (f) {
    case HY_WFMT_F32:
        o.data = hy_calloc_aligned(n, 4);
        memcpy(o.data, w, n * 4);
        break;
    case HY_WFMT_BF16:
    case HY_WFMT_F16: {
        uint16_t *p = hy_calloc_aligned(n, 2);
        for (size_t i = 0; i < n; i++) p[i] = f == HY_WFMT_BF16 ? hy_f32_to_bf16(w[i]) : hy_f32_to_f16(w[i]);
        o.data = p;
        break;
    }
    case HY_WFMT_BF16G: {
        uint16_t *b = malloc(n * 2 + 2);
        for (size_t i = 0; i < n; i++) b[i] = hy_f32_to_bf16(w[i]);
        o.data = hy_calloc_aligned(hy_wfmt_bytes(f, rows, cols), 1);
        memset(o.data, 0xab, hy_wfmt_bytes(f, rows, cols)); /* every byte written by the grouping */
        hy_mat_group_rows(o.data, b, rows, cols, 0, rows);
        free(b);
        break;
    }
    case HY_WFMT_FP8:
    case HY_WFMT_FP8G: {
        const int nbr = (rows + bs0 - 1) / bs0, nbc = (cols + bs1 - 1) / bs1;
        uint8_t *p = hy_calloc_aligned(n, 1);
        o.scale = hy_calloc_aligned((size_t)nbr * nbc, 4);
        for (int rb = 0; rb < nbr; rb++) {
            const int r0 = rb * bs0, nr = rows - r0 < bs0 ? rows - r0 : bs0;
            assert_int_equal(hy_fp8_quant_rows(w + (size_t)r0 * cols, nr, cols, bs1, p + (size_t)r0 * cols,
                                               o.scale + (size_t)rb * nbc), 0);
        }
        if (f == HY_WFMT_FP8G) { /* the same codes in row groups */
            uint8_t *g = hy_calloc_aligned(hy_fp8g_code_bytes(rows, cols), 1);
            memset(g, 0xab, hy_fp8g_code_bytes(rows, cols)); /* every byte written by the grouping */
            hy_mat_group_rows_fp8(g, p, rows, cols, 0, rows);
            hy_free(p);
            p = g;
        }
        o.data = p;
        o.m.bs0 = bs0;
        o.m.bs1 = bs1;
        break;
    }
    default: {
        const int nb = hy_q_blocks(rows), G = hy_q_groups(cols);
        o.data = hy_calloc_aligned((size_t)nb, hy_q_block_bytes(f, G));
        o.scale = hy_calloc_aligned((size_t)nb * HY_Q_ROWS, 4);
        for (int b = 0; b < nb; b++) {
            const int nr = rows - b * HY_Q_ROWS < HY_Q_ROWS ? rows - b * HY_Q_ROWS : HY_Q_ROWS;
            assert_int_equal(hy_q_pack_block(f, w + (size_t)b * HY_Q_ROWS * cols, nr, cols, b, o.data, o.scale), 0);
        }
    }
    }
    o.m.data = o.data;
    o.m.scale = o.scale;
    return o;
}

/* Runs fn over rows [0, rows) in the given pieces into y (ldy = rows + 3, padding checked). */
static float *run(hy_matmul_fn fn, const hy_mat *W, int T, const float *x, int ldx, hy_act act, const int *cuts,
                  int ncuts, bool accumulate, void *scratch) {
    const int ldy = W->rows + 3;
    float *y = malloc(sizeof(float) * (size_t)T * ldy);
    for (int i = 0; i < T * ldy; i++) y[i] = accumulate ? 0.5f : -777.0f;
    int prev = 0;
    for (int c = 0; c <= ncuts; c++) {
        const int end = c < ncuts ? cuts[c] : W->rows;
        fn(W, T, x, (size_t)ldx, y, (size_t)ldy, prev, end, accumulate, act, scratch);
        prev = end;
    }
    for (int t = 0; t < T; t++)
        for (int j = W->rows; j < ldy; j++) assert_true(y[(size_t)t * ldy + j] == (accumulate ? 0.5f : -777.0f));
    return y;
}

/* run() with HY_ACT_KEEP_X on every piece after the first (on the first too with keep_first). */
static float *run_keep(hy_matmul_fn fn, const hy_mat *W, int T, const float *x, int ldx, hy_act act, const int *cuts,
                       int ncuts, bool keep_first, void *scratch) {
    const int ldy = W->rows + 3;
    float *y = malloc(sizeof(float) * (size_t)T * ldy);
    for (int i = 0; i < T * ldy; i++) y[i] = -777.0f; /* as run(): padding compared too */
    int prev = 0;
    for (int c = 0; c <= ncuts; c++) {
        const int end = c < ncuts ? cuts[c] : W->rows;
        const bool keep = c > 0 || keep_first;
        fn(W, T, x, (size_t)ldx, y, (size_t)ldy, prev, end, false, keep ? (hy_act)(act | HY_ACT_KEEP_X) : act, scratch);
        prev = end;
    }
    return y;
}

typedef struct stats {
    double worst_ratio[HY_WFMT_COUNT][3]; /* err / (2^-24 Σ|wx|), per format and act mode (am below) */
    long amx_cases[HY_WFMT_COUNT][3];     /* calls checked against the scalar AMX order */
    long amx_exact_cases;                 /* BF16G calls checked against the AMX exact order */
    long cases;
} stats;

static void check_case(stats *S, hy_wfmt f, int rows, int cols, int T, int bs0, int bs1, uint64_t seed) {
    rng r = {seed};
    float *w = malloc(sizeof(float) * (size_t)rows * cols);
    const int ldx = cols + 5;
    float *x = malloc(sizeof(float) * (size_t)T * ldx);
    for (int i = 0; i < rows * cols; i++) w[i] = rng_sym(&r) * (i % 7 == 0 ? 4.0f : 1.0f);
    for (int i = 0; i < T * ldx; i++) x[i] = rng_sym(&r) * (i % 5 == 0 ? 3.0f : 1.0f);
    /* a few rows much smaller than the others (tiny-row quantization) */
    for (int c = 0; c < cols && rows > 2; c++) w[(size_t)1 * cols + c] *= 1e-3f;
    owned_mat o = make_mat(f, w, rows, cols, bs0, bs1);
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(cols), 1);
    const int cut[2] = {rows / 3, rows / 3 + (rows > 20 ? 17 : 1)};
    const int ncut = rows >= 3 ? 2 : 0;

    /* |w||x| sums from the weights as the kernels see them */
    float *wr = malloc(sizeof(float) * (size_t)cols);
    double *absum = malloc(sizeof(double) * (size_t)T * rows);
    for (int o2 = 0; o2 < rows; o2++) {
        hy_mat_row_f32(&o.m, o2, wr);
        for (int t = 0; t < T; t++) {
            double s = 0;
            for (int k = 0; k < cols; k++) s += fabs((double)wr[k] * x[(size_t)t * ldx + k]);
            absum[(size_t)t * rows + o2] = s;
        }
    }
    const bool q = f == HY_WFMT_Q8 || f == HY_WFMT_Q4;
    bool any_amx = false; /* q8 / q4 take bf16 activations only on AMX (elsewhere the int8 path either way) */
    for (int ti = 0; ti < n_tiers; ti++) any_amx |= tier_amx[ti];
    /* am: 0 fp32 activations, 1 HY_ACT_BF16, 2 HY_ACT_BF16_GEMV (BF16 weights round x up to
     * HY_MATMUL_GEMV_MAX_T tokens; every other format the same as fp32) */
    for (int am = 0; am < 3; am++) {
        if (am == 1 && q && !any_amx) continue;
        const hy_act act = am == 1 ? HY_ACT_BF16 : am == 2 ? HY_ACT_BF16_GEMV : HY_ACT_F32;
        float *yref = run(hy_ref_matmul_mat, &o.m, T, x, ldx, act, NULL, 0, false, scratch);
        /* FP8 under the fast decode: the reference computes the sum of the tier with vdpbf16ps
         * (tier_fp8dp); the others stay exact */
        const bool f8fast = am == 2 && f == HY_WFMT_FP8;
        float *yref_x = f8fast ? run(hy_ref_matmul_mat, &o.m, T, x, ldx, HY_ACT_F32, NULL, 0, false, scratch) : NULL;
        const int ldy = rows + 3;
        for (int ti = 0; ti < n_tiers; ti++) {
            const bool dp = tier_fp8dp(ti);
            const float *yr = f8fast && !dp ? yref_x : yref;
            float *y = run(tier_fn[ti], &o.m, T, x, ldx, act, NULL, 0, false, scratch);
            float *ys = run(tier_fn[ti], &o.m, T, x, ldx, act, cut, ncut, false, scratch);
            assert_memory_equal(y, ys, sizeof(float) * (size_t)T * ldy);
            float *ya = run(tier_fn[ti], &o.m, T, x, ldx, act, cut, ncut, true, scratch);
            for (int t = 0; t < T; t++)
                for (int o2 = 0; o2 < rows; o2++)
                    assert_true(ya[(size_t)t * ldy + o2] == 0.5f + y[(size_t)t * ldy + o2]);
            /* the AMX instance's own sums: HY_ACT_BF16 from HY_MATMUL_GEMM_MIN_T tokens on (fp8g, q8
             * and q4 too), and the fast decode's on bf16g and fp8g up to HY_MATMUL_GEMV_MAX_T tokens
             * (1-4: fp32 FMAs in the same order; more: the tiles) */
            const bool amx_sums =
                tier_amx[ti] &&
                ((act == HY_ACT_BF16 && T >= HY_MATMUL_GEMM_MIN_T && (q || f == HY_WFMT_BF16G || f == HY_WFMT_FP8G)) ||
                 (am == 2 && T <= HY_MATMUL_GEMV_MAX_T && (f == HY_WFMT_BF16G || f == HY_WFMT_FP8G)));
            /* the AMX instance's exact BF16G sums: every other call on BF16G (any T) */
            const bool amx_exact = tier_amx[ti] && f == HY_WFMT_BF16G && !amx_sums;
            if (((q || f == HY_WFMT_FP8 || f == HY_WFMT_FP8G || f == HY_WFMT_BF16) && act != HY_ACT_BF16) || amx_sums ||
                amx_exact) {
                /* HY_ACT_KEEP_X: the pieces reuse the activations the first one quantized (FP8:
                 * scaled, per row block; BF16: de-interleaved; AMX: converted to bf16); a call whose
                 * x differs from the previous call's (another buffer, or another ldx) quantizes again
                 * even when told to keep */
                float *yk = run_keep(tier_fn[ti], &o.m, T, x, ldx, act, cut, ncut, false, scratch);
                assert_memory_equal(y, yk, sizeof(float) * (size_t)T * ldy);
                float *xz = calloc((size_t)T * ldx + 1, sizeof(float));
                free(run(tier_fn[ti], &o.m, T, xz, ldx, act, NULL, 0, false, scratch));
                free(yk);
                yk = run_keep(tier_fn[ti], &o.m, T, x, ldx, act, cut, ncut, true, scratch);
                assert_memory_equal(y, yk, sizeof(float) * (size_t)T * ldy);
                free(run(tier_fn[ti], &o.m, T, x + 1, ldx, act, NULL, 0, false, scratch));
                free(yk);
                yk = run_keep(tier_fn[ti], &o.m, T, x, ldx, act, cut, ncut, true, scratch);
                assert_memory_equal(y, yk, sizeof(float) * (size_t)T * ldy);
                free(yk);
                free(xz);
            }
            if (amx_sums) {
                /* bit-identical to the scalar AMX order on the weights' fp32 values (BF16G as stored,
                 * FP8G e4m3·scale, Q8 / Q4 d·h·q; amx_order_dot rounds them to bf16; the fast
                 * decode's FP8G: amx_fp8_row / amx_fp8_token) */
                check_amx_order(&o.m, x, ldx, T, y, ldy, am == 2 ? AMX_FAST : AMX_BF16_ACT,
                                am == 1 ? "amx bf16 act" : "amx fast decode");
                S->amx_cases[f][am]++;
            } else if (amx_exact) {
                check_amx_order(&o.m, x, ldx, T, y, ldy, AMX_EXACT, "amx exact");
                S->amx_exact_cases++;
            } else if ((q || f == HY_WFMT_BF16G || f == HY_WFMT_FP8G) && !amx_sums) {
                if (memcmp(y, yref, sizeof(float) * (size_t)T * ldy)) {
                    for (int i = 0; i < T * ldy; i++)
                        if (y[i] != yref[i]) {
                            printf("%s %s %dx%d T=%d: [%d] %.9g vs ref %.9g\n", tier_name[ti],
                                   hy_wfmt_name(f), rows, cols, T, i, (double)y[i], (double)yref[i]);
                            break;
                        }
                    fail();
                }
            } else {
                /* bf16 activations: one chain per output over the columns (AVX-512 vdpbf16ps, AMX tiles) */
                const double bound = am ? (double)(cols + (cols + 7) / 8 + 8) : (double)((cols + 7) / 8 + 8) * 2.0;
                for (int t = 0; t < T; t++)
                    for (int o2 = 0; o2 < rows; o2++) {
                        const double e = fabs((double)y[(size_t)t * ldy + o2] - yr[(size_t)t * ldy + o2]);
                        const double unit = 0x1p-24 * absum[(size_t)t * rows + o2];
                        const double ratio = unit > 0 ? e / unit : (e > 0 ? INFINITY : 0);
                        if (ratio > S->worst_ratio[f][am]) S->worst_ratio[f][am] = ratio;
                        if (!(ratio <= bound)) {
                            printf("%s %s act=%d %dx%d T=%d out %d tok %d: %.9g vs ref %.9g (ratio %.3g > %.3g)\n",
                                   tier_name[ti], hy_wfmt_name(f), am, rows, cols, T, o2, t,
                                   (double)y[(size_t)t * ldy + o2], (double)yr[(size_t)t * ldy + o2], ratio, bound);
                            fail();
                        }
                    }
            }
            if (am == 2 && (f == HY_WFMT_BF16 || (f == HY_WFMT_FP8 && dp) || amx_sums) &&
                T <= HY_MATMUL_GEMV_MAX_T && cols >= 16) {
                /* the fast decode did round: its sums differ from the fp32 ones */
                float *y32 = run(tier_fn[ti], &o.m, T, x, ldx, HY_ACT_F32, NULL, 0, false, scratch);
                assert_true(memcmp(y, y32, sizeof(float) * (size_t)T * ldy) != 0);
                free(y32);
            }
            /* T-invariance: token by token equals the batch (fp32 activations, or any T for q; the
             * fast decode up to HY_MATMUL_GEMV_MAX_T tokens) */
            if ((am == 0 || (am == 2 && T <= HY_MATMUL_GEMV_MAX_T)) && T > 1) {
                float *y1 = malloc(sizeof(float) * (size_t)ldy);
                for (int t = 0; t < T; t += (T > 16 ? 7 : 1)) {
                    tier_fn[ti](&o.m, 1, x + (size_t)t * ldx, (size_t)ldx, y1, (size_t)ldy, 0, rows, false, act,
                                scratch);
                    assert_memory_equal(y1, y + (size_t)t * ldy, sizeof(float) * (size_t)rows);
                }
                free(y1);
            }
            free(y);
            free(ys);
            free(ya);
        }
        /* the reference obeys the same row-split rule */
        float *yrs = run(hy_ref_matmul_mat, &o.m, T, x, ldx, act, cut, ncut, false, scratch);
        assert_memory_equal(yref, yrs, sizeof(float) * (size_t)T * ldy);
        free(yrs);
        free(yref);
        free(yref_x);
    }
    S->cases++;
    free(wr);
    free(absum);
    hy_free(scratch);
    owned_free(&o);
    free(w);
    free(x);
}

static void test_formats(void **st) {
    (void)st;
    if (!n_tiers) skip();
    static const struct { int rows, cols; } shapes[] = {
        {1, 1}, {3, 7}, {5, 16}, {17, 33}, {16, 64}, {37, 200}, {33, 129}, {70, 511}, {48, 1000}, {19, 1537},
    };
    static const int Ts[] = {1, 2, 3, 7, 9, 32, 64, 65, 300, 600}; /* 600: two token blocks of the bf16 GEMM */
    stats S;
    memset(&S, 0, sizeof S);
    uint64_t seed = 1;
    for (int f = 0; f < HY_WFMT_COUNT; f++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
                const int rows = shapes[si].rows, cols = shapes[si].cols, T = Ts[ti];
                /* keep the scalar reference quick; under sanitizers (memory checking: the smaller
                 * shapes reach the same tails and blocks) a third of that, for CI's time */
                if ((double)rows * cols * T > (HY_TEST_SANITIZED ? 1e6 : 3e6)) continue;
                /* fp8 blocks: the official 128x128, smaller ones so blocks change inside rows, and
                 * on the widest shape blocks wider than the float GEMM's 512-column block */
                const int bs0 = (si % 2) ? 128 : 16, bs1 = cols > 1024 ? 544 : (si % 2) ? 128 : 32;
                check_case(&S, (hy_wfmt)f, rows, cols, T, bs0, bs1, seed++);
            }
    printf("%ld cases x %d tiers; worst |y - ref| in units of 2^-24·Σ|w·x| (bound (K/8+8)·2, bf16 act K+K/8+8):\n",
           S.cases, n_tiers);
    if (S.amx_exact_cases) printf("  AMX exact BF16G sums: %ld calls bit-identical to their scalar order\n", S.amx_exact_cases);
    for (int f = 0; f < HY_WFMT_COUNT; f++) {
        if (S.amx_cases[f][1] + S.amx_cases[f][2] > 0)
            printf("  %-5s fp32 act bit-identical to the reference%s; AMX bf16 act (%ld calls)%s bit-identical to the "
                   "scalar AMX order\n",
                   hy_wfmt_name((hy_wfmt)f), f == HY_WFMT_BF16G ? " (AMX: to its exact order)" : "",
                   S.amx_cases[f][1], S.amx_cases[f][2] ? " and fast decode" : "");
        else if (f == HY_WFMT_Q8 || f == HY_WFMT_Q4 || f == HY_WFMT_BF16G || f == HY_WFMT_FP8G)
            printf("  %-5s bit-identical to the reference\n", hy_wfmt_name((hy_wfmt)f));
        else
            printf("  %-5s fp32 act %.3g, bf16 act %.3g, bf16 GEMV act %.3g\n", hy_wfmt_name((hy_wfmt)f),
                   S.worst_ratio[f][0], S.worst_ratio[f][1], S.worst_ratio[f][2]);
    }
}

/* Row groups past one GEMM row block (128 rows) and column block (512 columns), split at rows
 * inside a group, several FP8 scale blocks per group row; Q8 / Q4 one-token calls over many
 * 16-row blocks, split inside one, and 40 tokens past the AMX int8 GEMM's blocks: bit-identical
 * to the reference, and
 * the GEMM (T = 40, 70) equal to the GEMV token by token (check_case). */
static void test_row_groups_big(void **st) {
    (void)st;
    if (!n_tiers) skip();
    stats S;
    memset(&S, 0, sizeof S);
    check_case(&S, HY_WFMT_BF16G, 300, 1101, 40, 0, 0, 901);
    check_case(&S, HY_WFMT_FP8G, 300, 1100, 40, 128, 128, 902);
    check_case(&S, HY_WFMT_FP8G, 272, 1100, 70, 16, 544, 903);
    /* int8 one-token calls over many 16-row blocks, split inside a block */
    check_case(&S, HY_WFMT_Q8, 300, 1100, 1, 0, 0, 904);
    check_case(&S, HY_WFMT_Q4, 300, 1100, 1, 0, 0, 905);
    /* the AMX int8 GEMM (matmul_amx.c): past one row block (128) and one column block (64
     * groups), a partial last group, a partial last token block */
    check_case(&S, HY_WFMT_Q8, 300, 2100, 40, 0, 0, 906);
    check_case(&S, HY_WFMT_Q4, 300, 2100, 40, 0, 0, 907);
    printf("row groups and int8 blocks: 7 cases past one block, bit-identical to the reference\n");
}

/* Q8 / Q4 at the ends of their integer ranges: weights at their largest code (Q4 nibble 15,
 * Q8 127) against activations quantized to +-127, so the avx2 tier's 16-bit partial sums (Q4:
 * 16 products a lane, |sum| 30480; Q8: 2 products, 32258) reach their largest values. Every
 * tier bit-identical to the reference, for one token (the one-token tiles) and several. */
static void test_q_extremes(void **st) {
    (void)st;
    if (!n_tiers) skip();
    const int rows = 72, cols = 160, T = 5, ldx = cols, ldy = rows + 3;
    float *w = malloc(sizeof(float) * (size_t)rows * cols), *x = malloc(sizeof(float) * (size_t)T * ldx);
    /* tokens: all +1, all -1, alternating groups of sign, one tiny value per group among +-1 */
    for (int t = 0; t < T; t++)
        for (int k = 0; k < cols; k++)
            x[(size_t)t * ldx + k] = t == 0 ? 1.0f : t == 1 ? -1.0f : t == 2 ? ((k / 32) % 2 ? 1.0f : -1.0f)
                                                                 : (k % 32 == 3 ? 1e-3f : (t == 3 ? 1.0f : -1.0f));
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(cols), 1);
    for (int qi = 0; qi < 2; qi++) {
        const hy_wfmt f = qi ? HY_WFMT_Q4 : HY_WFMT_Q8;
        /* rows of +1 (the largest code), of -1 at row 9 of each block, and a row of mixed signs.
         * Q4 takes -8 for a group's largest magnitude (its scale's sign follows), so its code 15
         * (q = 7) needs one larger value of the other sign in the group: -8/7 at column 31 */
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < cols; k++) {
                const float v = r == 5 ? (k % 3 ? 1.0f : -1.0f) : (r % 16 == 9 ? -1.0f : 1.0f);
                w[(size_t)r * cols + k] = qi && k % 32 == 31 ? -v * 8.0f / 7.0f : v;
            }
        owned_mat o = make_mat(f, w, rows, cols, 0, 0);
        /* row 0's first codes are the largest: Q4 nibbles 15 | 15, Q8 127 + 128 */
        assert_int_equal(((const unsigned char *)o.data)[hy_q_rec_offset(f, 0)], 0xff);
        for (int nt = 1; nt <= T; nt += T - 1) {
            float *yref = run(hy_ref_matmul_mat, &o.m, nt, x, ldx, HY_ACT_F32, NULL, 0, false, scratch);
            /* row 0, token 0: the sum of its weights */
            const float want = qi ? (float)cols - (float)(cols / 32) * (1.0f + 8.0f / 7.0f) : (float)cols;
            assert_true(fabsf(yref[0] - want) < 1e-3f * cols);
            for (int ti = 0; ti < n_tiers; ti++) {
                float *y = run(tier_fn[ti], &o.m, nt, x, ldx, HY_ACT_F32, NULL, 0, false, scratch);
                for (int i = 0; i < nt * ldy; i++)
                    if (y[i] != yref[i]) {
                        printf("%s %s T=%d: [%d] %.9g vs ref %.9g\n", tier_name[ti], hy_wfmt_name(f), nt, i,
                               (double)y[i], (double)yref[i]);
                        fail();
                    }
                free(y);
            }
            free(yref);
        }
        owned_free(&o);
    }
    printf("q8 / q4 at the largest codes against activations of +-127: every tier bit-identical to the reference\n");
    hy_free(scratch);
    free(w);
    free(x);
}

/* The activation quantizer: round trip within half a step, NaN/Inf poison only their group. */
static void test_quant_act(void **st) {
    (void)st;
    rng r = {99};
    enum { N = 100 };
    float x[N];
    int8_t q[128];
    float sx[4];
    int32_t corr[4];
    for (int i = 0; i < N; i++) x[i] = rng_sym(&r) * (i == 40 ? 50.0f : 2.0f);
    hy_quant_act_row(x, N, 8, q, sx, corr);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        const double e = fabs((double)x[i] - (double)sx[i / 32] * q[i]) / sx[i / 32];
        if (e > worst) worst = e;
    }
    for (int i = N; i < 128; i++) assert_int_equal(q[i], 0);
    for (int g = 0; g < 4; g++) {
        int s = 0;
        for (int i = 0; i < 32; i++) s += q[g * 32 + i];
        assert_int_equal(corr[g], -8 * s);
    }
    printf("activation int8: worst |x - s·q| = %.3g steps\n", worst);
    assert_true(worst <= 0.5 + 1e-5);
    x[3] = NAN;
    x[70] = INFINITY;
    hy_quant_act_row(x, N, 0, q, sx, corr);
    assert_true(isnan(sx[0]) && isnan(sx[2]) && !isnan(sx[1]) && !isnan(sx[3]));
    for (int i = 0; i < 32; i++) assert_int_equal(q[i], 0);
}

/* Every e4m3 code (scale 1, one product per output) inside a pool job, where threads flush
 * denormal results (base/threadpool.h), FP8 and FP8G on every tier against the reference run
 * there too. The SIMD tiers hold codes as value·2^-120, so e4m3 subnormals are fp32 denormal
 * inputs: the pool must not also treat denormal inputs as zero (DAZ), or they would vanish. */
typedef struct codes_job {
    const hy_mat *W;
    const float *x;
    float *y, *yr;
    void *scratch;
    int ti;
} codes_job;

static void codes_run(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    codes_job *j = arg;
    const int C = j->W->cols, R = j->W->rows;
    hy_ref_matmul_mat(j->W, C, j->x, C, j->yr, R, 0, R, false, HY_ACT_F32, j->scratch);
    tier_fn[j->ti](j->W, C, j->x, C, j->y, R, 0, R, false, HY_ACT_F32, j->scratch);
}

static void test_fp8_codes_in_pool(void **st) {
    (void)st;
    if (!n_tiers) skip();
    enum { R = 16, C = 256 };
    uint8_t *codes = hy_calloc_aligned((size_t)R * C, 1), *grouped = hy_calloc_aligned(hy_fp8g_code_bytes(R, C), 1);
    float *scale = hy_calloc_aligned(4, 4), *x = calloc((size_t)C * C, sizeof(float));
    float *y = malloc(sizeof(float) * (size_t)C * R), *yr = malloc(sizeof(float) * (size_t)C * R);
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(C), 1);
    for (int o = 0; o < R; o++)
        for (int k = 0; k < C; k++) codes[(size_t)o * C + k] = ((k + o) & 0x7f) == 0x7f ? 0 : (uint8_t)((k + o) & 255);
    hy_mat_group_rows_fp8(grouped, codes, R, C, 0, R);
    for (int i = 0; i < 4; i++) scale[i] = 1.0f;
    for (int k = 0; k < C; k++) x[(size_t)k * C + k] = 1.0f;
    hy_threadpool *tp = NULL;
    hy_err e = {0};
    assert_int_equal(hy_threadpool_create(&tp, 1, &e), 0);
    long checked = 0;
    for (int g = 0; g < 2; g++) {
        const hy_mat W = {.fmt = g ? HY_WFMT_FP8G : HY_WFMT_FP8, .rows = R, .cols = C, .data = g ? grouped : codes,
                          .scale = scale, .bs0 = R, .bs1 = 128, .name = "codes"};
        for (int ti = 0; ti < n_tiers; ti++) {
            codes_job j = {&W, x, y, yr, scratch, ti};
            hy_threadpool_run(tp, codes_run, &j);
            for (int i = 0; i < C * R; i++, checked++)
                if (memcmp(&y[i], &yr[i], sizeof y[i])) {
                    printf("%s %s in a pool job, code 0x%02x: %.9g vs ref %.9g\n", tier_name[ti], hy_wfmt_name(W.fmt),
                           codes[(size_t)(i % R) * C + i / R], (double)y[i], (double)yr[i]);
                    fail();
                }
        }
    }
    printf("fp8 / fp8g codes in a pool job: %ld products bit-identical to the reference\n", checked);
    hy_threadpool_free(tp);
    hy_free(scratch);
    free(x);
    free(y);
    free(yr);
    hy_free(scale);
    hy_free(grouped);
    hy_free(codes);
}

/* Non-finite activations: on the int8 path a group holding NaN/Inf poisons exactly the tokens
 * it belongs to (every tier, as the reference); float formats propagate NaN by arithmetic. */
static void test_nonfinite(void **st) {
    (void)st;
    enum { R = 20, C = 100, T = 9 };
    rng r = {5};
    float w[R * C], x[T * C];
    for (int i = 0; i < R * C; i++) w[i] = rng_sym(&r);
    for (int i = 0; i < T * C; i++) x[i] = rng_sym(&r);
    x[1 * C + 40] = NAN;
    x[4 * C + 99] = INFINITY;
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(C), 1);
    for (int f = 0; f < HY_WFMT_COUNT; f++) {
        owned_mat o = make_mat((hy_wfmt)f, w, R, C, 16, 32);
        float yr[T * R], y[T * R];
        for (int Tn = 1; Tn <= T; Tn += T - 1) {
            hy_ref_matmul_mat(&o.m, Tn, x, C, yr, R, 0, R, false, HY_ACT_F32, scratch);
            /* bf16 activations too (the AMX tiles take them from 8 tokens on) and the fast decode
             * (on AMX: bf16g through fp32 FMAs or the tiles): the same rows non-finite */
            for (int ti = 0; ti < n_tiers; ti++)
                for (int am = 0; am < 3; am++) {
                    tier_fn[ti](&o.m, Tn, x, C, y, R, 0, R, false,
                                am == 1 ? HY_ACT_BF16 : am == 2 ? HY_ACT_BF16_GEMV : HY_ACT_F32, scratch);
                    for (int t = 0; t < Tn; t++)
                        for (int i = 0; i < R; i++) {
                            const float a = y[t * R + i], b = yr[t * R + i];
                            assert_int_equal(isnan(a) || isinf(a), isnan(b) || isinf(b));
                            if (t == 1 || t == 4) assert_true(!isfinite(a));
                            else if ((f == HY_WFMT_Q8 || f == HY_WFMT_Q4) && !am) assert_true(a == b);
                        }
                }
        }
        owned_free(&o);
    }
    hy_free(scratch);
}

/* FP8G with a few codes of exponent 0 (subnormal or zero, 1 in ~150) among normal ones, as in
 * real checkpoints: the tiles take those column quads (one token: those units) as e4m3·2^-8
 * against x·scale·2^8 and the rest as e4m3·2^-120 against x·scale·2^120 (vf_fp8x_col8,
 * matmul_grp.inc), in the same chains, so every T must equal the reference bit for bit (FP8G's
 * order is the same on every tier): one token (units of one group mixed), 2-7 and 32 (quads of
 * several groups), 33 and 200 (the GEMM, which reads every code as e4m3·2^-8; 48 in sanitizer
 * builds, for CI time). */
static void test_fp8g_sparse_e0(void **st) {
    (void)st;
    if (!n_tiers) skip();
    enum { R = 144, C = 1000, TMAX = HY_TEST_SANITIZED ? 48 : 200 }; /* sanitizers: the GEMM at 33 and 48 */
    rng r = {77};
    uint8_t *codes = hy_calloc_aligned((size_t)R * C, 1), *grouped = hy_calloc_aligned(hy_fp8g_code_bytes(R, C), 1);
    const int nbc = (C + 127) / 128, nbr = (R + 127) / 128;
    float *scale = hy_calloc_aligned((size_t)nbr * nbc, 4), *x = malloc(sizeof(float) * (size_t)TMAX * C);
    float *y = malloc(sizeof(float) * (size_t)TMAX * R), *yr = malloc(sizeof(float) * (size_t)TMAX * R);
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(C), 1);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(yr);
    long e0 = 0;
    for (size_t i = 0; i < (size_t)R * C; i++) {
        const unsigned u = (unsigned)(rng_u(&r) * 65536.0);
        if (u % 150 == 0) codes[i] = (uint8_t)((u >> 8) & 0x87), e0++; /* exponent 0: subnormal or zero */
        else codes[i] = (uint8_t)((u >> 8 & 0x80) | (1 + (u >> 9) % 14) << 3 | (u >> 12 & 7));
    }
    hy_mat_group_rows_fp8(grouped, codes, R, C, 0, R);
    for (int i = 0; i < nbr * nbc; i++) scale[i] = (float)(0.01 + rng_u(&r));
    for (size_t i = 0; i < (size_t)TMAX * C; i++) x[i] = rng_sym(&r);
    const hy_mat W = {.fmt = HY_WFMT_FP8G, .rows = R, .cols = C, .data = grouped, .scale = scale, .bs0 = 128,
                      .bs1 = 128, .name = "sparse e0"};
    static const int Ts[] = {1, 2, 3, 7, 32, 33, TMAX};
    long checked = 0;
    for (size_t n = 0; n < sizeof Ts / sizeof Ts[0]; n++) {
        const int T = Ts[n];
        hy_ref_matmul_mat(&W, T, x, C, yr, R, 0, R, false, HY_ACT_F32, scratch);
        for (int ti = 0; ti < n_tiers; ti++) {
            tier_fn[ti](&W, T, x, C, y, R, 0, R, false, HY_ACT_F32, scratch);
            for (int i = 0; i < T * R; i++, checked++)
                if (memcmp(&y[i], &yr[i], sizeof y[i])) {
                    printf("%s fp8g sparse e0 T=%d row %d token %d: %.9g vs ref %.9g\n", tier_name[ti], T, i % R,
                           i / R, (double)y[i], (double)yr[i]);
                    fail();
                }
        }
    }
    printf("fp8g with %ld codes of exponent 0 among %d: %ld outputs at T = 1-%d bit-identical to the reference\n",
           e0, R * C, checked, (int)TMAX);
    /* The same codes row-major (FP8): each tier's own order, the same bits for every T (the
     * GEMM reads every code as e4m3·2^-8, the GEMV tiles only the steps holding exponent-0 codes
     * on the Intel instances) */
    const hy_mat Wr = {.fmt = HY_WFMT_FP8, .rows = R, .cols = C, .data = codes, .scale = scale, .bs0 = 128,
                       .bs1 = 128, .name = "sparse e0, row-major"};
    float *yt = malloc(sizeof(float) * (size_t)TMAX * R);
    assert_non_null(yt);
    checked = 0;
    for (int ti = 0; ti < n_tiers; ti++) {
        tier_fn[ti](&Wr, TMAX, x, C, yr, R, 0, R, false, HY_ACT_F32, scratch);
        for (size_t n = 0; n + 1 < sizeof Ts / sizeof Ts[0]; n++) {
            const int T = Ts[n];
            for (int t0 = 0; t0 < TMAX; t0 += T) {
                const int nt = TMAX - t0 < T ? TMAX - t0 : T;
                tier_fn[ti](&Wr, nt, x + (size_t)t0 * C, C, yt + (size_t)t0 * R, R, 0, R, false, HY_ACT_F32, scratch);
            }
            for (int i = 0; i < TMAX * R; i++, checked++)
                if (memcmp(&yt[i], &yr[i], sizeof yt[i])) {
                    printf("%s fp8 sparse e0 T=%d row %d token %d: %.9g vs T=%d %.9g\n", tier_name[ti], T, i % R,
                           i / R, (double)yt[i], TMAX, (double)yr[i]);
                    fail();
                }
        }
    }
    printf("fp8 (row-major), the same codes: %ld outputs at T = 1-33 bit-identical to T = %d\n", checked, TMAX);
    free(yt);
    { /* rows longer than the one-token GEMV's long-row limit (gemv_t1_fp8q_long): one token at a
       * time against the GEMM of 33 */
        enum { R2 = 20, C2 = 8250, T2 = 33 };
        uint8_t *c2 = hy_calloc_aligned((size_t)R2 * C2, 1);
        float *s2 = hy_calloc_aligned(2 * 65, 4), *x2 = malloc(sizeof(float) * (size_t)T2 * C2);
        float *y2 = malloc(sizeof(float) * (size_t)T2 * R2), *y1 = malloc(sizeof(float) * (size_t)T2 * R2);
        void *sc2 = hy_calloc_aligned(hy_matmul_scratch_bytes(C2), 1);
        assert_non_null(x2);
        assert_non_null(y2);
        assert_non_null(y1);
        for (size_t i = 0; i < (size_t)R2 * C2; i++) {
            const unsigned u = (unsigned)(rng_u(&r) * 65536.0);
            c2[i] = u % 150 == 0 ? (uint8_t)((u >> 8) & 0x87) : (uint8_t)((u >> 8 & 0x80) | (1 + (u >> 9) % 14) << 3 | (u >> 12 & 7));
        }
        for (int i = 0; i < 2 * 65; i++) s2[i] = (float)(0.01 + rng_u(&r));
        for (size_t i = 0; i < (size_t)T2 * C2; i++) x2[i] = rng_sym(&r);
        const hy_mat W2 = {.fmt = HY_WFMT_FP8, .rows = R2, .cols = C2, .data = c2, .scale = s2, .bs0 = 128, .bs1 = 128,
                           .name = "sparse e0, long rows"};
        for (int ti = 0; ti < n_tiers; ti++) {
            tier_fn[ti](&W2, T2, x2, C2, y2, R2, 0, R2, false, HY_ACT_F32, sc2);
            for (int t = 0; t < T2; t++)
                tier_fn[ti](&W2, 1, x2 + (size_t)t * C2, C2, y1 + (size_t)t * R2, R2, 0, R2, false, HY_ACT_F32, sc2);
            assert_memory_equal(y1, y2, sizeof(float) * (size_t)T2 * R2);
        }
        printf("fp8 rows of %d columns: one token at a time bit-identical to T = %d\n", C2, T2);
        hy_free(sc2);
        free(x2);
        free(y1);
        free(y2);
        hy_free(s2);
        hy_free(c2);
    }
    hy_free(scratch);
    free(x);
    free(y);
    free(yr);
    hy_free(scale);
    hy_free(grouped);
    hy_free(codes);
}

/* Every e4m3 code through every tier's FP8 and FP8G loaders, exactly: row o holds code
 * (k + o) & 255 at column k and token t is one-hot at column k, so each output is a single
 * product fl32(e4m3 · fl32(scale · 1)) (plus exact zeros) and must equal the reference bit for
 * bit, for T = 1 (GEMV), 32 (GEMV tiles) and 256 (GEMM). Column blocks carry small,
 * subnormal-producing and (second set) scales of 2^8 and more, for which the kernels'
 * x·scale·2^120 overflows and they take their fallback. */
static void test_fp8_codes(void **st) {
    (void)st;
    if (!n_tiers) skip();
    enum { R = 16, C = 256, BS1 = 32, NBC = C / BS1 };
    static const float sets[2][NBC] = {
        {1.0f, 0x1p-20f, 3.7e-3f, 0x1p-140f, 0.5f, 100.0f, 127.9f, 1e-38f},
        {1.0f, 3.7e-3f, 128.0f, 0x1p100f, 0x1p-140f, 2.5e5f, 0.25f, 1e30f},
    };
    uint8_t *data = hy_calloc_aligned((size_t)R * C, 1);
    float *scale = hy_calloc_aligned(NBC, 4);
    float *x = calloc((size_t)C * C, sizeof(float)), *y = malloc(sizeof(float) * (size_t)C * R),
          *yr = malloc(sizeof(float) * (size_t)C * R);
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(C), 1);
    for (int o = 0; o < R; o++)
        for (int k = 0; k < C; k++) /* NaN codes (documented as ±480 in SIMD) would poison the sums as 0·NaN */
            data[(size_t)o * C + k] = ((k + o) & 0x7f) == 0x7f ? 0 : (uint8_t)((k + o) & 255);
    for (int k = 0; k < C; k++) x[(size_t)k * C + k] = 1.0f;
    uint8_t *grouped = hy_calloc_aligned(hy_fp8g_code_bytes(R, C), 1);
    hy_mat_group_rows_fp8(grouped, data, R, C, 0, R);
    hy_mat W = {.fmt = HY_WFMT_FP8, .rows = R, .cols = C, .data = data, .scale = scale, .bs0 = R, .bs1 = BS1,
                .name = "codes"};
    long checked = 0;
    for (int set = 0; set < 4; set++) {
        W.fmt = set < 2 ? HY_WFMT_FP8 : HY_WFMT_FP8G, W.data = set < 2 ? (const void *)data : (const void *)grouped;
        memcpy(scale, sets[set % 2], sizeof sets[set % 2]);
        hy_ref_matmul_mat(&W, C, x, C, yr, R, 0, R, false, HY_ACT_F32, scratch);
        for (int ti = 0; ti < n_tiers; ti++)
            for (int T = 1; T <= C; T = T == 1 ? 32 : C * 2) {
                if (T == 32 * 2) T = C;
                for (int t0 = 0; t0 < C; t0 += T)
                    tier_fn[ti](&W, T, x + (size_t)t0 * C, C, y + (size_t)t0 * R, R, 0, R, false, HY_ACT_F32, scratch);
                for (int k = 0; k < C; k++)
                    for (int o = 0; o < R; o++) {
                        const int code = data[(size_t)o * C + k];
                        const float a = y[(size_t)k * R + o], b = yr[(size_t)k * R + o];
                        if (memcmp(&a, &b, sizeof a)) {
                            printf("%s %s code 0x%02x scale %g T=%d: %.9g vs ref %.9g\n", tier_name[ti],
                                   hy_wfmt_name(W.fmt), code, (double)scale[k / BS1], T, (double)a, (double)b);
                            fail();
                        }
                        checked++;
                    }
            }
    }
    printf("fp8 / fp8g codes: %ld single products bit-identical to the reference\n", checked);
    hy_free(grouped);
    hy_free(scratch);
    free(x);
    free(y);
    free(yr);
    hy_free(scale);
    hy_free(data);
}

/* FP8 activations large enough that x·scale·2^120 overflows: the row block takes the kernels'
 * e4m3·2^-8 fallback, which must give the same products, so a token's result does not depend
 * on a large neighbour in its batch (T = 3 GEMV, T = 40 GEMM, against one token at a time), and
 * stays within the float bound of the reference. R x C: also rows longer than the one-token
 * kernels' long-row limit (matmul_simd.inc: MM_FP8Q_LONG), with a tail of rows and columns. */
static void fp8_large_x_case(const hy_wfmt f, const int R, const int C) {
    enum { T = 40 };
    rng g = {77};
    float *w = malloc(sizeof(float) * R * C), *x = malloc(sizeof(float) * T * C);
    for (int i = 0; i < R * C; i++) w[i] = rng_sym(&g);
    for (int i = 0; i < T * C; i++) x[i] = rng_sym(&g);
    for (int k = 0; k < C; k++) x[1 * C + k] *= 1e9f; /* token 1: x·scale far above 2^8 */
    owned_mat o = make_mat(f, w, R, C, 16, 32);
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(C), 1);
    const int ldy = R + 3;
    float *yref = run(hy_ref_matmul_mat, &o.m, T, x, C, HY_ACT_F32, NULL, 0, false, scratch);
    /* token 0 alone under the fast decode: finite, so the bf16 sum (on 8250 columns the one-token
     * tile of long rows) */
    float *yfast = run(hy_ref_matmul_mat, &o.m, 1, x, C, HY_ACT_BF16_GEMV, NULL, 0, false, scratch);
    for (int ti = 0; ti < n_tiers; ti++) {
        float *one = malloc(sizeof(float) * T * ldy);
        for (int t = 0; t < T; t++) {
            float *y1 = run(tier_fn[ti], &o.m, 1, x + (size_t)t * C, C, HY_ACT_F32, NULL, 0, false, scratch);
            memcpy(one + (size_t)t * ldy, y1, sizeof(float) * ldy);
            free(y1);
        }
        for (int nt = 3; nt <= T; nt += T - 3) {
            float *y = run(tier_fn[ti], &o.m, nt, x, C, HY_ACT_F32, NULL, 0, false, scratch);
            assert_memory_equal(y, one, sizeof(float) * (size_t)nt * ldy);
            free(y);
        }
        /* the fast decode (HY_ACT_BF16_GEMV): a call with token 1, whose x·scale·2^120
         * overflows, takes the exact sum in every row block, as the reference does */
        for (int t0 = 0; t0 < 3; t0++) { /* 3 tokens, 1, and 9 (AMX: through the tiles) */
            const int n = t0 == 0 ? 3 : t0 == 1 ? 1 : 9, first = t0 == 1;
            float *y = run(tier_fn[ti], &o.m, n, x + (size_t)first * C, C, HY_ACT_BF16_GEMV, NULL, 0, false, scratch);
            assert_memory_equal(y, one + (size_t)first * ldy, sizeof(float) * (size_t)n * ldy);
            free(y);
        }
        /* finite tokens 2..4: batched == one at a time under the fast decode too */
        float *y3 = run(tier_fn[ti], &o.m, 3, x + 2 * (size_t)C, C, HY_ACT_BF16_GEMV, NULL, 0, false, scratch);
        for (int t = 0; t < 3; t++) {
            float *y1 = run(tier_fn[ti], &o.m, 1, x + (size_t)(2 + t) * C, C, HY_ACT_BF16_GEMV, NULL, 0, false, scratch);
            assert_memory_equal(y1, y3 + (size_t)t * ldy, sizeof(float) * R);
            free(y1);
        }
        free(y3);
        float *yq = run(tier_fn[ti], &o.m, 1, x, C, HY_ACT_BF16_GEMV, NULL, 0, false, scratch);
        /* rounded where the tier computes the fast decode's sum (FP8G: on AMX, in its order) */
        const bool dp = f == HY_WFMT_FP8 ? tier_fp8dp(ti) : tier_amx[ti];
        assert_true(!memcmp(yq, one, sizeof(float) * R) == !dp);
        if (f == HY_WFMT_FP8G && dp) check_amx_order(&o.m, x, C, 1, yq, ldy, AMX_FAST, "amx fast decode, large x");
        float *wr = malloc(sizeof(float) * C);
        for (int r = 0; r < R; r++) {
            hy_mat_row_f32(&o.m, r, wr); /* the weights as the formula sees them */
            double ab0 = 0;
            for (int k = 0; k < C; k++) ab0 += fabs((double)wr[k] * x[k]);
            if (f == HY_WFMT_FP8 || !dp)
                assert_true(fabs((double)yq[r] - (dp ? yfast : yref)[r]) <= (C + (C + 7) / 8 + 8) * 0x1p-24 * ab0);
            for (int t = 0; t < T; t++) {
                double ab = 0;
                for (int k = 0; k < C; k++) ab += fabs((double)wr[k] * x[(size_t)t * C + k]);
                const double e = fabs((double)one[(size_t)t * ldy + r] - yref[(size_t)t * ldy + r]);
                assert_true(e <= ((C + 7) / 8 + 8) * 2.0 * 0x1p-24 * ab);
            }
        }
        free(wr);
        free(one);
        free(yq);
    }
    printf("%s %dx%d with activations of 1e9: batched == one token at a time on every tier, within bound of the ref; "
           "the fast decode exact where they overflow, rounded where not (fp8: within the bf16 bound of the ref's; "
           "fp8g on AMX: its order)\n",
           hy_wfmt_name(f), R, C);
    free(yfast);
    float *yf = run(hy_ref_matmul_mat, &o.m, 3, x, C, HY_ACT_BF16_GEMV, NULL, 0, false, scratch);
    assert_memory_equal(yf, yref, sizeof(float) * 3 * ldy);
    free(yf);
    free(yref);
    hy_free(scratch);
    owned_free(&o);
    free(w);
    free(x);
}
static void test_fp8_large_x(void **st) {
    (void)st;
    if (!n_tiers) skip();
    for (int f = 0; f < 2; f++) {
        fp8_large_x_case(f ? HY_WFMT_FP8G : HY_WFMT_FP8, 40, 300);
        fp8_large_x_case(f ? HY_WFMT_FP8G : HY_WFMT_FP8, 21, 8250);
    }
}

/* The AMX instance's fast decode with denormals about. bf16g: bf16 weights and activations
 * below 2^-126, and rows whose products (~1e-40) and sums are denormal, which TDPBF16PS reads
 * as zero and flushes. fp8g: subnormal e4m3 codes (below 2^-6 of the block scale), which go to
 * the tiles as bf16 denormals and so read as zero. 1-4 tokens (fp32 FMAs under MXCSR DAZ / FTZ)
 * and 5-32 (the tiles) give the scalar AMX order bit for bit, so one token at a time equals the
 * batch. */
static void amx_denormals_case(int amx, hy_wfmt f) {
    enum { R = 40, C = 300, T = 32 };
    rng r = {99};
    float *w = malloc(sizeof(float) * R * C), *x = malloc(sizeof(float) * T * C);
    for (int o = 0; o < R; o++)
        for (int k = 0; k < C; k++) {
            float v = rng_sym(&r);
            if (o % 4 == 1) v *= 1e-20f; /* tiny row: its products with tiny x are denormal */
            else if (o % 4 == 2 && k % 3 == 0)
                v *= f == HY_WFMT_FP8G ? 0x1p-16f : 1e-39f; /* denormal weights (codes) among normal ones */
            w[(size_t)o * C + k] = v;
        }
    for (int t = 0; t < T; t++)
        for (int k = 0; k < C; k++) {
            float v = rng_sym(&r);
            if (t % 3 == 1) v *= 1e-20f;
            else if (t % 3 == 2 && k % 5 == 0) v *= 1e-39f;
            x[(size_t)t * C + k] = v;
        }
    owned_mat o = make_mat(f, w, R, C, 16, 32);
    long subnormal = 0; /* fp8g: codes with a zero exponent field, not zero */
    if (f == HY_WFMT_FP8G)
        for (size_t i = 0; i < hy_fp8g_code_bytes(R, C); i++) {
            const uint8_t c = ((const uint8_t *)o.m.data)[i];
            subnormal += (c & 0x78) == 0 && (c & 7) != 0;
        }
    void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(C), 1);
    long flushed = 0;
    const int ldy = R + 3;
    long flushed_exact = 0;
    for (int nt = 1; nt <= T; nt = nt < 5 ? nt + 1 : nt == 5 ? 9 : nt == 9 ? T : T + 1) {
        float *y = run(tier_fn[amx], &o.m, nt, x, C, HY_ACT_BF16_GEMV, NULL, 0, false, scratch);
        const long zeros = check_amx_order(&o.m, x, C, nt, y, ldy, AMX_FAST, "amx fast decode, denormals");
        if (nt == T) flushed = zeros;
        free(y);
        if (f == HY_WFMT_BF16G) { /* the exact sums: FMAs (1 token), the tile GEMV (2-32; the GEMM: test_formats) */
            y = run(tier_fn[amx], &o.m, nt, x, C, HY_ACT_F32, NULL, 0, false, scratch);
            const long z = check_amx_order(&o.m, x, C, nt, y, ldy, AMX_EXACT, "amx exact, denormals");
            if (nt == T) flushed_exact = z;
            free(y);
        }
    }
    if (f == HY_WFMT_BF16G) assert_true(flushed_exact > 0);
    if (f == HY_WFMT_FP8G) {
        assert_true(subnormal > 0);
        printf("amx fast decode, fp8g with %ld subnormal codes: T = 1-5, 9, 32 bit-identical to the scalar AMX "
               "order (the codes read as zero)\n",
               subnormal);
    } else {
        assert_true(flushed > 0); /* some sums did flush to zero */
        printf("amx fast decode, bf16g with denormals: T = 1-5, 9, 32 bit-identical to the scalar AMX order (%ld "
               "outputs of tiny rows and tokens flushed to zero); the exact sums too, to their order (%ld)\n",
               flushed, flushed_exact);
    }
    hy_free(scratch);
    owned_free(&o);
    free(w);
    free(x);
}

static void test_amx_denormals(void **st) {
    (void)st;
    int amx = -1;
    for (int ti = 0; ti < n_tiers; ti++)
        if (tier_amx[ti]) amx = ti;
    if (amx < 0) skip();
    amx_denormals_case(amx, HY_WFMT_BF16G);
    amx_denormals_case(amx, HY_WFMT_FP8G);
}

/* BF16 column panels (matmul.h): the same matrix stored row-major and in panels gives
 * bit-identical results on every tier (ref included), for one token, the GEMV tiles, the GEMM
 * with fp32 and with bf16 activations, the fast decode's bf16 GEMV, in split row ranges and accumulating; hy_mat_row_f32
 * reads the same rows; hy_mat_data_offset points at the rows' start in the first panel. */
static void test_bf16_panels(void **st) {
    (void)st;
    static const int shapes[][2] = {{37, 2049}, {70, 4096}, {300, 4100}, {19, 6177}};
    static const int Ts[] = {1, 2, 5, 9, 33, 70};
    rng r = {4242};
    long checked = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int rows = shapes[si][0], cols = shapes[si][1];
        assert_true(hy_panel_wanted(cols));
        float *w = malloc(sizeof(float) * (size_t)rows * cols);
        for (size_t i = 0; i < (size_t)rows * cols; i++) w[i] = rng_sym(&r);
        owned_mat o = make_mat(HY_WFMT_BF16, w, rows, cols, 0, 0);
        uint16_t *pd = hy_calloc_aligned((size_t)rows * cols, 2);
        hy_mat_panelize_rows(pd, o.data, rows, cols, 0, rows / 3);
        hy_mat_panelize_rows(pd, o.data, rows, cols, rows / 3, rows);
        hy_mat P = o.m;
        P.data = pd;
        P.panel = true;
        float *ra = malloc(sizeof(float) * (size_t)cols), *rb = malloc(sizeof(float) * (size_t)cols);
        for (int i = 0; i < rows; i++) {
            hy_mat_row_f32(&o.m, i, ra);
            hy_mat_row_f32(&P, i, rb);
            assert_memory_equal(ra, rb, sizeof(float) * (size_t)cols);
            assert_true(hy_mat_data_offset(&P, i) == (size_t)i * HY_PANEL_COLS * 2);
            assert_ptr_equal(hy_mat_elem(&P, i, 0, 2), pd + (size_t)i * HY_PANEL_COLS);
        }
        const int cuts[] = {rows / 2 + 1};
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
            const int T = Ts[ti], ldx = cols + 5;
            float *x = malloc(sizeof(float) * (size_t)T * ldx);
            for (int i = 0; i < T * ldx; i++) x[i] = rng_sym(&r);
            void *scratch = hy_calloc_aligned(hy_matmul_scratch_bytes(cols), 1);
            for (int ti2 = -1; ti2 < n_tiers; ti2++) {
                const hy_matmul_fn fn = ti2 < 0 ? hy_ref_matmul_mat : tier_fn[ti2];
                for (int act = 0; act <= HY_ACT_BF16_GEMV; act += act ? 3 : 1) /* f32, bf16, bf16 GEMV */
                    for (int acc = 0; acc < 2; acc++) {
                        float *ya = run(fn, &o.m, T, x, ldx, (hy_act)act, cuts, 1, acc, scratch);
                        float *yb = run(fn, &P, T, x, ldx, (hy_act)act, cuts, acc ? 0 : 1, acc, scratch);
                        if (memcmp(ya, yb, sizeof(float) * (size_t)T * (rows + 3)))
                            fail_msg("panels differ: %s, %dx%d, T %d, act %d, acc %d",
                                     ti2 < 0 ? "ref" : tier_name[ti2], rows, cols, T, act, acc);
                        free(ya);
                        free(yb);
                        checked++;
                    }
            }
            hy_free(scratch);
            free(x);
        }
        free(ra);
        free(rb);
        hy_free(pd);
        owned_free(&o);
        free(w);
    }
    printf("bf16 panels: %ld cases bit-identical to row-major\n", checked);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quant_act),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_row_groups_big),
        cmocka_unit_test(test_q_extremes),
        cmocka_unit_test(test_fp8_codes),
        cmocka_unit_test(test_fp8g_sparse_e0),
        cmocka_unit_test(test_fp8_codes_in_pool),
        cmocka_unit_test(test_fp8_large_x),
        cmocka_unit_test(test_bf16_panels),
        cmocka_unit_test(test_amx_denormals),
        cmocka_unit_test(test_exact_parts),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
