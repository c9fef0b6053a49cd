/*
 * Scalar reference of the matmul contract (kernels/matmul.h) for every weight format, and the
 * pieces every tier shares: sizes, the activation quantizer of the Q8/Q4 path, row
 * dequantization. Plain C, no intrinsics: the oracle the SIMD kernels are tested against.
 * Float formats reduce with ref.c's order (8 interleaved lanes, combined pairwise); Q8/Q4
 * follow the bit-reproducible formula of matmul.h exactly (fmaf), so SIMD tiers must match
 * them bit for bit.
 * Threading: stateless; a call writes only its rows and its scratch.
 */
#include "kernels/matmul.h"

#include "base/error.h"
#include "base/fp.h"
#include "kernels/cpu/matmul_blk.h"

#include <math.h>
#include <string.h>

#define LANES 8
#define ALIGN_UP(n, a) (((n) + (a) - 1) / (a) * (a))

/* Largest token block the SIMD GEMMs keep quantized/converted at once, and the float GEMM's
 * fixed buffers (see matmul_simd.inc, which asserts against these numbers). */
#define SCRATCH_Q_TOKENS 32
#define SCRATCH_F_BYTES (1024u * 1024u)

const char *hy_wfmt_name(hy_wfmt f) {
    switch (f) {
    case HY_WFMT_F32: return "f32";
    case HY_WFMT_BF16: return "bf16";
    case HY_WFMT_F16: return "f16";
    case HY_WFMT_FP8: return "fp8";
    case HY_WFMT_Q8: return "q8";
    case HY_WFMT_Q4: return "q4";
    case HY_WFMT_BF16G: return "bf16g";
    case HY_WFMT_FP8G: return "fp8g";
    default: return "?";
    }
}

size_t hy_matmul_scratch_bytes(int max_cols) {
    const size_t G = (size_t)hy_q_groups(max_cols > 0 ? max_cols : 1), Kp = G * HY_Q_GROUP;
    size_t q = SCRATCH_Q_TOKENS * ALIGN_UP(Kp + 8 * G, 64);  /* int8 activations + scales + corrections */
    size_t ref = ALIGN_UP(Kp * sizeof(float), 64) + ALIGN_UP(Kp + 8 * G, 64); /* reference: one row + one token */
    size_t n = q > ref ? q : ref;
    if (n < SCRATCH_F_BYTES) n = SCRATCH_F_BYTES;
    if (n < hy_mg_scratch_bytes(max_cols)) n = hy_mg_scratch_bytes(max_cols);
    if (n < hy_mg_amx_scratch_bytes(max_cols)) n = hy_mg_amx_scratch_bytes(max_cols);
    /* FP8 GEMV: x times the scales, padded to the SIMD tiers' blocks of up to 64 columns (also
     * room for the BF16 GEMV's x in the pair order, padded to 2·VL <= 64 columns) */
    const size_t f8x = (size_t)HY_MATMUL_GEMV_MAX_T * ALIGN_UP((size_t)(max_cols > 0 ? max_cols : 1), 64) * sizeof(float);
    if (n < f8x) n = f8x;
    return ALIGN_UP(n, 64) + HY_MATMUL_SCRATCH_HDR;
}

int hy_matmul_row_align(hy_wfmt fmt) {
    return fmt == HY_WFMT_Q8 || fmt == HY_WFMT_Q4                ? HY_Q_ROWS
           : fmt == HY_WFMT_BF16G || fmt == HY_WFMT_FP8G ? HY_G_ROWS
                                                           : 8;
}

int hy_matmul_min_rows(const hy_mat *W, hy_isa isa) {
    const int a = hy_matmul_row_align(W->fmt), m = W->panel && hy_matmul_panel_walk(isa) ? HY_PANEL_ROWS : a;
    return (m + a - 1) / a * a;
}

bool hy_matmul_bf16_groups(hy_isa isa, bool intel) {
    switch (isa) {
    case HY_ISA_AVX2: return hy_matmul_avx2_bf16_groups();
    case HY_ISA_AVX512: return intel ? hy_matmul_avx512_intel_bf16_groups() : hy_matmul_avx512_bf16_groups();
    default: return false;
    }
}

bool hy_matmul_fp8_groups(hy_isa isa, bool intel) {
    switch (isa) {
    case HY_ISA_AVX2: return hy_matmul_avx2_fp8_groups();
    case HY_ISA_AVX512: return intel ? hy_matmul_avx512_intel_fp8_groups() : hy_matmul_avx512_fp8_groups();
    default: return false;
    }
}

bool hy_matmul_panel_walk(hy_isa isa) {
    switch (isa) {
    case HY_ISA_AVX2: return hy_matmul_avx2_panel_walk();
    case HY_ISA_AVX512: return hy_matmul_avx512_panel_walk();
    default: return false;
    }
}

hy_matmul_fn hy_matmul_get(hy_isa isa) {
    switch (isa) {
    case HY_ISA_REF: return hy_ref_matmul_mat;
    case HY_ISA_AVX2: return hy_matmul_avx2();
    case HY_ISA_AVX512: return hy_matmul_avx512();
    default: return NULL;
    }
}

hy_mat hy_mat_from_tensor(const hy_tensor *t) {
    hy_mat m;
    memset(&m, 0, sizeof m);
    m.fmt = t->dtype == HY_DTYPE_F32 ? HY_WFMT_F32 : t->dtype == HY_DTYPE_F16 ? HY_WFMT_F16
            : t->dtype == HY_DTYPE_F8_E4M3                                  ? HY_WFMT_FP8
                                                                            : HY_WFMT_BF16;
    m.rows = (int)t->shape[0];
    m.cols = (int)t->shape[1];
    m.data = t->data;
    m.name = t->name;
    return m;
}

size_t hy_wfmt_bytes(hy_wfmt f, int64_t rows, int64_t cols) {
    switch (f) {
    case HY_WFMT_F32: return (size_t)(rows * cols * 4);
    case HY_WFMT_BF16:
    case HY_WFMT_F16: return (size_t)(rows * cols * 2);
    case HY_WFMT_FP8: return (size_t)(rows * cols + ((rows + 127) / 128) * ((cols + 127) / 128) * 4);
    case HY_WFMT_BF16G: return (size_t)((rows + HY_G_ROWS - 1) / HY_G_ROWS) * (size_t)((cols + 1) / 2) * HY_G_ROWS * 4;
    case HY_WFMT_FP8G:
        return hy_fp8g_code_bytes((int)rows, (int)cols) + (size_t)(((rows + 127) / 128) * ((cols + 127) / 128) * 4);
    case HY_WFMT_Q8:
    case HY_WFMT_Q4: {
        const size_t nb = (size_t)hy_q_blocks((int)rows), G = (size_t)hy_q_groups((int)cols);
        return nb * hy_q_block_bytes(f, (int)G) + nb * HY_Q_ROWS * 4;
    }
    default: return 0;
    }
}

size_t hy_mat_data_offset(const hy_mat *W, int r) {
    switch (W->fmt) {
    case HY_WFMT_Q8:
    case HY_WFMT_Q4: return (size_t)hy_q_blocks(r) * hy_q_block_bytes(W->fmt, hy_q_groups(W->cols));
    case HY_WFMT_FP8: return (size_t)r * (size_t)W->cols;
    case HY_WFMT_BF16G: return hy_wfmt_bytes(HY_WFMT_BF16G, r, W->cols);
    case HY_WFMT_FP8G: return hy_fp8g_code_bytes(r, W->cols);
    /* BF16 panels: where the rows start in the first panel, the part read first */
    case HY_WFMT_BF16: return (size_t)r * hy_mat_ld(W, 0) * 2;
    default: return hy_wfmt_bytes(W->fmt, r, W->cols); /* F32 / F16: row-major, nothing else */
    }
}

void hy_mat_panelize_rows(uint16_t *dst, const uint16_t *src, int rows, int cols, int r0, int r1) {
    const hy_mat W = {.fmt = HY_WFMT_BF16, .rows = rows, .cols = cols, .data = dst, .panel = true};
    for (int r = r0; r < r1; r++)
        for (int k0 = 0, k1; k0 < cols; k0 = k1) {
            k1 = hy_mat_run_end(&W, k0);
            memcpy((void *)hy_mat_elem(&W, r, k0, 2), src + (size_t)r * (size_t)cols + k0, (size_t)(k1 - k0) * 2);
        }
}

/* Both row-group layouts hold, per group and per 4-byte unit of columns (2 bf16 or 4 fp8),
 * HY_G_ROWS rows' units back to back: es = the element size. */
static void group_rows(unsigned char *dst, const unsigned char *src, int rows, int cols, int r0, int r1, int es) {
    HY_ASSERT(r0 % HY_G_ROWS == 0 && (r1 % HY_G_ROWS == 0 || r1 == rows));
    const size_t rb = (size_t)cols * (size_t)es, nu = (rb + 3) / 4; /* bytes per row, units per row */
    const int g1 = (r1 + HY_G_ROWS - 1) / HY_G_ROWS;
    for (int g = r0 / HY_G_ROWS; g < g1; g++) {
        unsigned char *d = dst + (size_t)g * nu * HY_G_ROWS * 4;
        for (size_t q = 0; q < nu; q++)
            for (int i = 0; i < HY_G_ROWS; i++) {
                const int r = g * HY_G_ROWS + i;
                const unsigned char *sr = src + (size_t)(r - r0) * rb;
                for (size_t b = 0; b < 4; b++) d[(q * HY_G_ROWS + (size_t)i) * 4 + b] = r < rows && 4 * q + b < rb ? sr[4 * q + b] : 0;
            }
    }
}

void hy_mat_group_rows(uint16_t *dst, const uint16_t *src, int rows, int cols, int r0, int r1) {
    group_rows((unsigned char *)dst, (const unsigned char *)src, rows, cols, r0, r1, 2);
}

void hy_mat_group_rows_fp8(uint8_t *dst, const uint8_t *src, int rows, int cols, int r0, int r1) {
    group_rows(dst, src, rows, cols, r0, r1, 1);
}

size_t hy_mat_bytes(const hy_mat *W) {
    if (W->fmt == HY_WFMT_FP8 || W->fmt == HY_WFMT_FP8G) {
        size_t nbr = (size_t)((W->rows + W->bs0 - 1) / W->bs0), nbc = (size_t)((W->cols + W->bs1 - 1) / W->bs1);
        const size_t codes = W->fmt == HY_WFMT_FP8 ? (size_t)W->rows * (size_t)W->cols : hy_fp8g_code_bytes(W->rows, W->cols);
        return codes + nbr * nbc * 4;
    }
    return hy_wfmt_bytes(W->fmt, W->rows, W->cols);
}

/* ---- element access ------------------------------------------------------------------- */

static inline float fp8_scale(const hy_mat *W, int r, int k) {
    const int nbc = (W->cols + W->bs1 - 1) / W->bs1;
    return W->scale[(size_t)(r / W->bs0) * (size_t)nbc + (size_t)(k / W->bs1)];
}

/* The signed quantized value of (r, k) in a packed Q8/Q4 matrix. */
static inline int q_value(const hy_mat *W, int r, int k) {
    const int b = r / HY_Q_ROWS, j = r % HY_Q_ROWS, g = k / HY_Q_GROUP;
    const int c = k % HY_Q_GROUP;
    const unsigned char *rec = hy_q_record(W, b, g);
    if (W->fmt == HY_WFMT_Q8) return (int)rec[(c / 4) * 64 + j * 4 + c % 4] - 128;
    const int v = c / 8, w = c % 8;
    const unsigned char byte = rec[v * 64 + j * 4 + w % 4];
    return (int)(w < 4 ? byte & 15 : byte >> 4) - 8;
}

static inline float q_h(const hy_mat *W, int r, int g) {
    return hy_f16_to_f32(hy_q_gscale(W, r / HY_Q_ROWS, g)[r % HY_Q_ROWS]);
}

/* Element (r, k) of a row-group matrix: the bf16 value (BF16G) or the e4m3 code's value
 * without its scale (FP8G). */
static float grouped_value(const hy_mat *W, int r, int k) {
    const size_t g = (size_t)(r / HY_G_ROWS), i = (size_t)(r % HY_G_ROWS);
    if (W->fmt == HY_WFMT_FP8G) {
        const size_t nq = (size_t)(W->cols + 3) / 4;
        return hy_fp8_e4m3_to_f32(((const uint8_t *)W->data)[((g * nq + (size_t)k / 4) * HY_G_ROWS + i) * 4 + (size_t)(k & 3)]);
    }
    const size_t np = (size_t)(W->cols + 1) / 2;
    return hy_bf16_to_f32(((const uint16_t *)W->data)[((g * np + (size_t)k / 2) * HY_G_ROWS + i) * 2 + (size_t)(k & 1)]);
}

void hy_mat_row_f32(const hy_mat *W, int r, float *dst) {
    const int n = W->cols;
    switch (W->fmt) {
    case HY_WFMT_F32: memcpy(dst, (const float *)W->data + (size_t)r * n, (size_t)n * sizeof(float)); break;
    case HY_WFMT_BF16:
        for (int k0 = 0, k1; k0 < n; k0 = k1) {
            const uint16_t *p = hy_mat_elem(W, r, k0, 2);
            k1 = hy_mat_run_end(W, k0);
            for (int k = k0; k < k1; k++) dst[k] = hy_bf16_to_f32(p[k - k0]);
        }
        break;
    case HY_WFMT_F16: {
        const uint16_t *p = (const uint16_t *)W->data + (size_t)r * n;
        for (int k = 0; k < n; k++) dst[k] = hy_f16_to_f32(p[k]);
        break;
    }
    case HY_WFMT_FP8: {
        const uint8_t *p = (const uint8_t *)W->data + (size_t)r * n;
        float lut[256];
        for (int i = 0; i < 256; i++) lut[i] = hy_fp8_e4m3_to_f32((uint8_t)i);
        for (int k0 = 0; k0 < n; k0 += W->bs1) {
            const float s = fp8_scale(W, r, k0);
            const int k1 = n - k0 < W->bs1 ? n : k0 + W->bs1;
            for (int k = k0; k < k1; k++) dst[k] = lut[p[k]] * s;
        }
        break;
    }
    case HY_WFMT_FP8G:
        for (int k = 0; k < n; k++) dst[k] = grouped_value(W, r, k) * fp8_scale(W, r, k);
        break;
    case HY_WFMT_BF16G:
        for (int k = 0; k < n; k++) dst[k] = grouped_value(W, r, k);
        break;
    case HY_WFMT_Q8:
    case HY_WFMT_Q4: {
        const float d = W->scale[r];
        for (int k = 0; k < n; k++) dst[k] = d * q_h(W, r, k / HY_Q_GROUP) * (float)q_value(W, r, k);
        break;
    }
    default: HY_ASSERT(!"hy_mat_row_f32: bad format");
    }
}

/* ---- activation quantization ---------------------------------------------------------- */

void hy_quant_act_row(const float *x, int cols, int zp, int8_t *xq, float *sx, int32_t *corr) {
    const int G = hy_q_groups(cols);
    for (int g = 0; g < G; g++) {
        const int k0 = g * HY_Q_GROUP, n = cols - k0 < HY_Q_GROUP ? cols - k0 : HY_Q_GROUP;
        float amax = 0.0f;
        bool bad = false;
        for (int i = 0; i < n; i++) {
            const float a = fabsf(x[k0 + i]);
            if (!isfinite(a)) bad = true;
            if (a > amax) amax = a;
        }
        int8_t *q = xq + k0;
        int32_t sum = 0;
        if (bad) {
            memset(q, 0, HY_Q_GROUP);
            sx[g] = NAN;
        } else {
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            for (int i = 0; i < n; i++) {
                /* round to nearest even by the 1.5·2^23 trick (|v| <= 127 + rounding): no libm call */
                float v = (x[k0 + i] * id + 0x1.8p23f) - 0x1.8p23f;
                if (v > 127.0f) v = 127.0f;
                if (v < -127.0f) v = -127.0f;
                q[i] = (int8_t)v;
                sum += q[i];
            }
            for (int i = n; i < HY_Q_GROUP; i++) q[i] = 0;
            sx[g] = d;
        }
        corr[g] = -zp * sum;
    }
}

/* ---- the reference kernel ------------------------------------------------------------- */

static inline float lanes_sum(const float acc[LANES]) {
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static float dot_f32(const float *w, const float *x, int n, bool bf16) {
    float acc[LANES] = {0};
    int i = 0;
    if (!bf16) {
        for (; i + LANES <= n; i += LANES)
            for (int l = 0; l < LANES; l++) acc[l] += w[i + l] * x[i + l];
        for (int l = 0; i < n; i++, l++) acc[l] += w[i] * x[i];
    } else {
        for (; i + LANES <= n; i += LANES)
            for (int l = 0; l < LANES; l++) acc[l] += w[i + l] * hy_round_bf16(x[i + l]);
        for (int l = 0; i < n; i++, l++) acc[l] += w[i] * hy_round_bf16(x[i]);
    }
    return lanes_sum(acc);
}

static inline void put(float *y, float d, bool accumulate) {
    if (accumulate) *y += d;
    else *y = d;
}

void hy_ref_matmul_mat(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                       bool accumulate, hy_act act, void *scratch) {
    const int n = W->cols;
    if (W->fmt == HY_WFMT_Q8 || W->fmt == HY_WFMT_Q4) {
        const int G = hy_q_groups(n);
        int8_t *xq = scratch;
        float *sx = (float *)((char *)scratch + ALIGN_UP((size_t)G * HY_Q_GROUP, 64));
        int32_t *corr = (int32_t *)(sx + G);
        for (int t = 0; t < T; t++) {
            hy_quant_act_row(x + (size_t)t * ldx, n, 0, xq, sx, corr);
            for (int o = o0; o < o1; o++) {
                float acc = 0.0f;
                for (int g = 0; g < G; g++) {
                    int32_t idot = 0;
                    for (int c = 0; c < HY_Q_GROUP && g * HY_Q_GROUP + c < n; c++)
                        idot += q_value(W, o, g * HY_Q_GROUP + c) * xq[g * HY_Q_GROUP + c];
                    acc = fmaf((float)idot, q_h(W, o, g) * sx[g], acc);
                }
                put(y + (size_t)t * ldy + o, acc * W->scale[o], accumulate);
            }
        }
        return;
    }
    const bool bf16 = hy_act_rounds(act, W->fmt, T);
    if (W->fmt == HY_WFMT_BF16G || W->fmt == HY_WFMT_FP8G) {
        /* one fma chain per output over the columns in order (matmul.h): the SIMD tiers' bits;
         * FP8G: the codes times fl32(scale·x), with either activation mode */
        const bool f8 = W->fmt == HY_WFMT_FP8G;
        /* the row's values and scales once, not once per token (the same operands; the tests,
         * which run this oracle on every case: test_matmul_simd 11.4 -> 7.7 s here) */
        float *wv = scratch, *sc = wv + ALIGN_UP((size_t)n, 16); /* sc: FP8G only */
        for (int o = o0; o < o1; o++) {
            for (int k = 0; k < n; k++) wv[k] = grouped_value(W, o, k);
            if (f8)
                for (int k = 0; k < n; k++) sc[k] = fp8_scale(W, o, k);
            for (int t = 0; t < T; t++) {
                const float *xt = x + (size_t)t * ldx;
                float acc = 0.0f;
                for (int k = 0; k < n; k++)
                    acc = fmaf(wv[k], f8 ? xt[k] * sc[k] : bf16 ? hy_round_bf16(xt[k]) : xt[k], acc);
                put(y + (size_t)t * ldy + o, acc, accumulate);
            }
        }
        return;
    }
    float *row = scratch;
    if (W->fmt == HY_WFMT_FP8 && !bf16) {
        /* e4m3 codes times x already multiplied by the block scales (matmul.h); the fast decode
         * (the avx512 tier's sum): subnormal codes as 0, times bf16(x·scale·2^120)·2^-120, unless
         * some token's x·scale·2^120 in the row block is not finite */
        const bool fast = hy_act_gemv_bf16(act, T);
        float lut[256], *xs = row + ALIGN_UP((size_t)n, 16);
        for (int i = 0; i < 256; i++) lut[i] = hy_fp8_e4m3_to_f32((uint8_t)i);
        for (int o = o0; o < o1; o++) {
            bool f = fast;
            for (int t = 0; t < T && f; t++)
                for (int k = 0; k < n && f; k++)
                    f = isfinite(x[(size_t)t * ldx + k] * (fp8_scale(W, o, k) * 0x1p120f));
            const uint8_t *p = (const uint8_t *)W->data + (size_t)o * n;
            for (int k = 0; k < n; k++) row[k] = !f ? lut[p[k]] : (p[k] & 0x78) ? lut[p[k]] * 0x1p-120f : 0.0f;
            for (int t = 0; t < T; t++) {
                for (int k = 0; k < n; k++) {
                    const float xk = x[(size_t)t * ldx + k];
                    xs[k] = f ? hy_round_bf16(xk * (fp8_scale(W, o, k) * 0x1p120f)) : xk * fp8_scale(W, o, k);
                }
                put(y + (size_t)t * ldy + o, dot_f32(row, xs, n, false), accumulate);
            }
        }
        return;
    }
    for (int o = o0; o < o1; o++) {
        hy_mat_row_f32(W, o, row);
        if (bf16 && W->fmt != HY_WFMT_BF16)
            for (int k = 0; k < n; k++) row[k] = hy_round_bf16(row[k]);
        for (int t = 0; t < T; t++) put(y + (size_t)t * ldy + o, dot_f32(row, x + (size_t)t * ldx, n, bf16), accumulate);
    }
}
