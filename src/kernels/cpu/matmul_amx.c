/*
 * The avx512 tier's Intel matmul instance with AMX (Advanced Matrix Extensions, Sapphire Rapids
 * and later): hy_matmul_avx512_amx() is hy_matmul_avx512_intel() except that row groups
 * (HY_WFMT_BF16G, HY_WFMT_FP8G) and int8 blocks (Q8, Q4) with bf16 activations (HY_ACT_BF16,
 * the opt-in fast prefill) from HY_MATMUL_GEMM_MIN_T tokens on go through TDPBF16PS tiles. kernels/cpu/dispatch.c picks
 * it where the CPU has AMX-BF16 and the OS granted this process the tile state
 * (hy_cpu_amx_permit).
 *
 * Why only there: a tile multiplies bf16 by bf16, so it cannot compute the exact fp32-activation
 * contract (matmul.h). With bf16 activations BF16G gets the same products as the fp32 FMA chain
 * of the other instances, summed in another order; FP8G gets weights bf16(fl32(e4m3·scale)),
 * the FP8 semantics of HY_ACT_BF16 (the other instances keep FP8G exact), and Q8 / Q4
 * bf16(fl32(fl32(d·h)·q)) (the others run their int8 path, bit-exact, either way: a W8A8 whose
 * per-group float steps bound it, ~0.35 TFLOP/s here). One core of this
 * file's development machine (a Xeon under KVM): 3.7 TFLOP/s from registers against ~0.2 for
 * the fp32 FMAs.
 *
 * Order (matmul.h, HY_ACT_BF16 with AMX): per (row, token) one fp32 accumulator over the column
 * blocks of 32 in order; within a block the hardware's TDPBF16PS (pairs of products, bf16
 * denormals read as zero, denormal results flushed). It depends on the column count only, so
 * results do not depend on T (from HY_MATMUL_GEMM_MIN_T on), the row range or the thread.
 *
 * BF16G needs no repacking: 16 consecutive column pairs of a row group are 16 x 64 contiguous
 * bytes, dword i of row j = row i's columns 2j, 2j+1, which is exactly the B operand of a tile
 * (K/2 rows of N pairs). FP8G, Q8 and Q4 are converted to that layout one block at a time (an
 * int8 block of 16 rows is a row group). Blocking: per
 * thread, tokens in blocks of MG_NB, converted to bf16 once ([column block][token][MG_KC], zero
 * padded); rows in blocks of MG_AMX_MC (whose weights of one column block, 256 KiB, stay in L2
 * while every token passes them), C tiles of 32 tokens x 32 rows parked between column blocks
 * ([token][MG_AMX_MC] fp32). Measured (2 threads, T = 512, 27B shapes): 2.2-2.3 TFLOP/s, ~30%
 * of the AMX peak. Within +-5%: column blocks of 128 or 512-2048, prefetching the next block's
 * weights or the next tokens, groups outside tokens, 2 x 2 tiles of L1 blocks. What holds it
 * there: beyond its 2 MiB L2 this core reads ~29 GB/s whether from L3 or DRAM, and the tokens'
 * converted blocks stream from there once per row block; each 16x16x32 tile product loads 1 KiB
 * (2 x 2 C tiles: the most the 8 tiles allow), and parking accumulators in L2 costs ~20%.
 */
#include "kernels/cpu/matmul_blk.h"
#include "kernels/matmul.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && !defined(HY_AVX512_EMU)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16")
#endif
#include <immintrin.h>

#include "kernels/cpu/fp8x_avx512.h"

/* tiles: C (tokens 0-15 | 16-31) x (group 0 | 1) = 0 1 / 2 3, A (tokens) 4 5, B (groups) 6 7 */
typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

#define AMX_KS 32                                /* columns per tile step */
#define AMX_NBP (MG_NB)                          /* token rows of the converted block */
#define AMX_TAIL_BYTES ((size_t)(MG_AMX_MC / HY_G_ROWS) * 1024)
_Static_assert(MG_NB % 32 == 0 && MG_AMX_MC % 32 == 0 && MG_KC % AMX_KS == 0, "AMX blocks");
_Static_assert(AMX_TAIL_BYTES <= (size_t)MG_AMX_MC * MG_KC * 2, "AMX tail buffer fits the weight panel's scratch");
_Static_assert(HY_G_ROWS == 16 && HY_Q_ROWS == 16, "a row group / int8 block is a tile's 16 columns");
_Static_assert(MG_KC % HY_Q_GROUP == 0, "column blocks of whole int8 groups");

static void amx_config(void) {
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) c.colsb[i] = 64, c.rows[i] = 16;
    _tile_loadconfig(&c);
}

/* Tokens [0, nb) of x, every column, rounded to bf16 into xbf [column block][MG_NB][MG_KC];
 * columns past K and tokens up to the next multiple of 32 are zeros. */
static void amx_pack_x(const float *x, size_t ldx, int nb, int K, uint16_t *xbf) {
    const int nbp = (nb + 31) / 32 * 32;
    for (int kb = 0; kb * MG_KC < K; kb++) {
        const int kc = K - kb * MG_KC < MG_KC ? K - kb * MG_KC : MG_KC, kcp = (kc + AMX_KS - 1) / AMX_KS * AMX_KS;
        for (int t = 0; t < nbp; t++) {
            uint16_t *d = xbf + ((size_t)kb * AMX_NBP + (size_t)t) * MG_KC;
            if (t >= nb) {
                memset(d, 0, (size_t)kcp * 2);
                continue;
            }
            const float *s = x + (size_t)t * ldx + (size_t)kb * MG_KC;
            for (int k = 0; k < kcp; k += 32) {
                const int n = kc - k;
                const __m512 lo = n >= 16 ? _mm512_loadu_ps(s + k)
                                          : _mm512_maskz_loadu_ps((__mmask16)((1u << (n > 0 ? n : 0)) - 1u), s + k);
                const __m512 hi = n >= 32 ? _mm512_loadu_ps(s + k + 16)
                                  : n > 16 ? _mm512_maskz_loadu_ps((__mmask16)((1u << (n - 16)) - 1u), s + k + 16)
                                           : _mm512_setzero_ps();
                _mm512_storeu_si512(d + k, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            }
        }
    }
}

/* One column block: C tiles of 32 tokens x 2 groups over ns steps of 32 columns. wg[i]: group
 * i's first pair of the block (64 bytes per pair); tail[i]: its last step's 16 pairs, zero
 * padded, where the group has fewer (NULL: none). xa: the block's tokens (MG_KC apart); park:
 * their accumulators, MG_AMX_MC floats apart. */
static void amx_step_block(const unsigned char *wg0, const unsigned char *wg1, const unsigned char *tail0,
                           const unsigned char *tail1, int ns, const uint16_t *xa, float *park, bool first) {
    const size_t pld = (size_t)MG_AMX_MC * 4, xld = (size_t)MG_KC * 2;
    if (first) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, park, pld);
        _tile_loadd(1, park + HY_G_ROWS, pld);
        _tile_loadd(2, park + 16 * (size_t)MG_AMX_MC, pld);
        _tile_loadd(3, park + 16 * (size_t)MG_AMX_MC + HY_G_ROWS, pld);
    }
    const int nfull = tail0 ? ns - 1 : ns;
    for (int s = 0; s < nfull; s++) {
        _tile_loadd(4, xa + (size_t)s * AMX_KS, xld);
        _tile_loadd(6, wg0 + (size_t)s * 1024, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, wg1 + (size_t)s * 1024, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, xa + 16 * (size_t)MG_KC + (size_t)s * AMX_KS, xld);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    if (tail0) {
        const size_t s = (size_t)nfull;
        _tile_loadd(4, xa + s * AMX_KS, xld);
        _tile_loadd(6, tail0, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, tail1, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, xa + 16 * (size_t)MG_KC + s * AMX_KS, xld);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, park, pld);
    _tile_stored(1, park + HY_G_ROWS, pld);
    _tile_stored(2, park + 16 * (size_t)MG_AMX_MC, pld);
    _tile_stored(3, park + 16 * (size_t)MG_AMX_MC + HY_G_ROWS, pld);
}

/* The parked results of rows [rb, re) x tokens [0, nb) into y (rows below o0 are another call's). */
static void amx_write(const float *park, int rb, int re, int o0, int nb, float *y, size_t ldy, bool accumulate) {
    const int lo = rb > o0 ? rb : o0;
    for (int t = 0; t < nb; t++) {
        const float *p = park + (size_t)t * MG_AMX_MC - rb;
        float *d = y + (size_t)t * ldy;
        for (int r = lo; r < re; r += 16) {
            const __mmask16 m = (__mmask16)(re - r >= 16 ? 0xffffu : (1u << (re - r)) - 1u);
            __m512 v = _mm512_maskz_loadu_ps(m, p + r);
            if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, d + r));
            _mm512_mask_storeu_ps(d + r, m, v);
        }
    }
}

/* two columns of 16 rows as bf16 (round to nearest even) column pairs: dword i = (a_i, b_i) */
static inline __m512i amx_pair(__m512 a, __m512 b) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
}

/* Groups [g0, g0 + ng) of an FP8G W, columns [k0, k0 + kc) (k0 a multiple of 4), as
 * bf16(fl32(e4m3·scale)) in the BF16G pair layout: group i's pair j at dst + (i·MG_KC/2 + j)·64,
 * zero pairs up to the next whole step. */
static void amx_conv_fp8g(const hy_mat *W, int g0, int ng, int k0, int kc, unsigned char *dst) {
    const int nq = (kc + 3) / 4, npp = (kc + AMX_KS - 1) / AMX_KS * (AMX_KS / 2);
    const size_t gstride = (size_t)((W->cols + 3) / 4) * 64;
    const int nbc = (W->cols + W->bs1 - 1) / W->bs1;
    for (int g = 0; g < ng; g++) {
        const unsigned char *src = (const unsigned char *)W->data + (size_t)(g0 + g) * gstride + (size_t)(k0 / 4) * 64;
        const float *srow = W->scale + (size_t)((g0 + g) * HY_G_ROWS / W->bs0) * (size_t)nbc;
        unsigned char *d = dst + (size_t)g * (MG_KC / 2) * 64;
        for (int q = 0; q < nq; q++) {
            /* the codes as value·2^-120 (fp8x_avx512.h), times 2^60 exactly, times scale·2^60: one rounding */
            const __m512 sc = _mm512_set1_ps(srow[(k0 + 4 * q) / W->bs1] * 0x1p60f), up = _mm512_set1_ps(0x1p60f);
            __m512 w[4];
            vf_fp8x_quad(_mm512_loadu_si512(src + (size_t)q * 64), w);
            for (int j = 0; j < 4; j++) w[j] = _mm512_mul_ps(_mm512_mul_ps(w[j], up), sc);
            _mm512_storeu_si512(d + (size_t)(2 * q) * 64, amx_pair(w[0], w[1]));
            _mm512_storeu_si512(d + (size_t)(2 * q + 1) * 64, amx_pair(w[2], w[3]));
        }
        memset(d + (size_t)(2 * nq) * 64, 0, (size_t)(npp - 2 * nq) * 64);
    }
}

/* Block b (16 rows: one tile's columns) of a Q8 / Q4 W, columns [k0, k0 + kc) (k0 a multiple of
 * HY_Q_GROUP), as bf16(fl32(fl32(d·h)·q)) (hy_mat_row_f32's fp32 weights, rounded) in the BF16G
 * pair layout at dst (pair j at dst + j·64). Columns past W->cols are zero weights already. */
static void amx_conv_q(const hy_mat *W, int b, int k0, int kc, unsigned char *dst) {
    const bool q4 = W->fmt == HY_WFMT_Q4;
    const int ngq = (kc + HY_Q_GROUP - 1) / HY_Q_GROUP;
    const __m512 d = _mm512_loadu_ps(W->scale + (size_t)b * HY_Q_ROWS);
    const __m512i m8 = _mm512_set1_epi32(0xff), m4 = _mm512_set1_epi32(0xf);
    const __m512i z8 = _mm512_set1_epi32(128), z4 = _mm512_set1_epi32(8);
    for (int gi = 0; gi < ngq; gi++) {
        const int g = k0 / HY_Q_GROUP + gi;
        const unsigned char *rec = hy_q_record(W, b, g);
        const __m512 s = _mm512_mul_ps(d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)hy_q_gscale(W, b, g))));
        unsigned char *o = dst + (size_t)gi * (HY_Q_GROUP / 2) * 64;
        /* one 64-byte vector: dword j = row j; Q8 four columns, Q4 eight (low nibbles first) */
        for (int v = 0; v < (q4 ? 4 : 8); v++) {
            const __m512i c = _mm512_loadu_si512(rec + (size_t)v * 64);
            __m512 w[8];
            for (int i = 0; i < (q4 ? 8 : 4); i++) {
                const __m512i q = q4 ? _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(c, 8 * (i % 4) + 4 * (i / 4)), m4), z4)
                                     : _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(c, 8 * i), m8), z8);
                w[i] = _mm512_mul_ps(s, _mm512_cvtepi32_ps(q));
            }
            const int np = q4 ? 4 : 2; /* pairs of this vector's columns */
            for (int p = 0; p < np; p++)
                _mm512_storeu_si512(o + (size_t)(v * np + p) * 64, amx_pair(w[2 * p], w[2 * p + 1]));
        }
    }
}

/* BF16G: the row groups in place (their last step, where short, copied zero padded); FP8G, Q8 and
 * Q4: each block's weights converted to bf16 pairs first (amx_conv_fp8g, amx_conv_q) into the
 * panel buffer. */
static void amx_gemm(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                     bool accumulate, bool packed, void *scratch) {
    const bool f8 = W->fmt == HY_WFMT_FP8G, q = W->fmt == HY_WFMT_Q8 || W->fmt == HY_WFMT_Q4;
    const int K = W->cols, npair = (K + 1) / 2;
    const size_t gstride = (size_t)npair * 64;
    float *park = scratch;
    unsigned char *wbuf = (unsigned char *)scratch + (size_t)MG_NB * MG_AMX_MC * 4;
    uint16_t *xbf = (uint16_t *)(wbuf + (size_t)MG_AMX_MC * MG_KC * 2);
    const unsigned char *data = W->data;
    amx_config();
    for (int sb = 0; sb < T; sb += MG_NB) {
        const int nb = T - sb < MG_NB ? T - sb : MG_NB;
        if (!packed) amx_pack_x(x + (size_t)sb * ldx, ldx, nb, K, xbf);
        for (int rb = o0 / HY_G_ROWS * HY_G_ROWS; rb < o1; rb += MG_AMX_MC) {
            const int re = o1 - rb < MG_AMX_MC ? o1 : rb + MG_AMX_MC;
            const int g0 = rb / HY_G_ROWS, ng = (re - rb + HY_G_ROWS - 1) / HY_G_ROWS;
            for (int kb = 0; kb * MG_KC < K; kb++) {
                const int kc = K - kb * MG_KC < MG_KC ? K - kb * MG_KC : MG_KC, ns = (kc + AMX_KS - 1) / AMX_KS;
                const int j0 = kb * MG_KC / 2, jt = j0 + (ns - 1) * (AMX_KS / 2); /* first pair of the last step */
                const unsigned char *wb = data + (size_t)g0 * gstride + (size_t)j0 * 64; /* group g: + g·gs */
                size_t gs = gstride;
                bool tail = false;
                if (f8 || q) {
                    if (f8) amx_conv_fp8g(W, g0, ng, kb * MG_KC, kc, wbuf);
                    else
                        for (int g = 0; g < ng; g++)
                            amx_conv_q(W, g0 + g, kb * MG_KC, kc, wbuf + (size_t)g * (MG_KC / 2) * 64);
                    wb = wbuf, gs = (size_t)(MG_KC / 2) * 64;
                } else if (jt + AMX_KS / 2 > npair) { /* the last step's pairs the groups have, zero padded */
                    tail = true;
                    memset(wbuf, 0, (size_t)ng * 1024);
                    for (int g = 0; g < ng; g++)
                        memcpy(wbuf + (size_t)g * 1024, data + (size_t)(g0 + g) * gstride + (size_t)jt * 64,
                               (size_t)(npair - jt) * 64);
                }
                const uint16_t *xk = xbf + (size_t)kb * AMX_NBP * MG_KC;
                for (int tb = 0; tb < nb; tb += 32)
                    for (int g = 0; g < ng; g += 2) {
                        /* an odd last group pairs with itself (its second C tiles are never written out) */
                        const int g1 = g + 1 < ng ? g + 1 : g;
                        amx_step_block(wb + (size_t)g * gs, wb + (size_t)g1 * gs, tail ? wbuf + (size_t)g * 1024 : NULL,
                                       tail ? wbuf + (size_t)g1 * 1024 : NULL, ns, xk + (size_t)tb * MG_KC,
                                       park + (size_t)tb * MG_AMX_MC + (size_t)g * HY_G_ROWS, kb == 0);
                    }
            }
            amx_write(park, rb, re, o0, nb, y + (size_t)sb * ldy, ldy, accumulate);
        }
    }
    _tile_release();
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* What the scratch's converted tokens hold (the AMX part of the scratch header, matmul_blk.h):
 * HY_ACT_KEEP_X lets the pieces of one matmul (the forward's row pieces of 128, the
 * up_proj after gate_proj) skip amx_pack_x, which took ~25% of amx_gemm's time when every
 * piece converted all its tokens again. Valid only when one token block held them all. */
typedef struct amx_rec {
    const float *x;
    size_t ldx;
    int T, K, valid;
} amx_rec;
_Static_assert(sizeof(amx_rec) <= MM_HDR_AMX_BYTES, "AMX scratch record");

static void mm_amx(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                   bool accumulate, hy_act act, void *scratch) {
    amx_rec *rec = (amx_rec *)((unsigned char *)scratch + MM_HDR_SIMD_BYTES);
    const bool fmt = W->fmt == HY_WFMT_BF16G || W->fmt == HY_WFMT_FP8G || W->fmt == HY_WFMT_Q8 || W->fmt == HY_WFMT_Q4;
    if (fmt && HY_ACT_MODE(act) == HY_ACT_BF16 && T >= HY_MATMUL_GEMM_MIN_T) {
        if (o1 <= o0) return;
        memset(scratch, 0, MM_HDR_SIMD_BYTES); /* what the Intel instance kept in the scratch is gone */
        const bool packed = (act & HY_ACT_KEEP_X) && rec->valid && rec->x == x && rec->ldx == ldx && rec->T == T &&
                            rec->K == W->cols;
        *rec = (amx_rec){x, ldx, T, W->cols, T <= MG_NB};
        amx_gemm(W, T, x, ldx, y, ldy, o0, o1, accumulate, packed,
                 (unsigned char *)scratch + HY_MATMUL_SCRATCH_HDR);
        return;
    }
    rec->valid = 0; /* the Intel instance may write over the converted tokens */
    hy_matmul_avx512_intel()(W, T, x, ldx, y, ldy, o0, o1, accumulate, act, scratch);
}

hy_matmul_fn hy_matmul_avx512_amx(void) { return hy_matmul_avx512_intel() ? mm_amx : NULL; }

#else
hy_matmul_fn hy_matmul_avx512_amx(void) { return NULL; }
#endif
