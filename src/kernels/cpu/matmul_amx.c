/*
 * The avx512 tier's Intel matmul instance with AMX (Advanced Matrix Extensions, Sapphire Rapids
 * and later): hy_matmul_avx512_amx() is hy_matmul_avx512_intel() except that row groups
 * (HY_WFMT_BF16G, HY_WFMT_FP8G) and int8 blocks (Q8, Q4) with bf16 activations (HY_ACT_BF16,
 * the opt-in fast prefill) from HY_MATMUL_GEMM_MIN_T tokens on go through TDPBF16PS tiles, and
 * so do BF16G and FP8G matrices under the fast decode (HY_ACT_BF16_GEMV, up to
 * HY_MATMUL_GEMV_MAX_T tokens; the fewest with fp32 FMAs in the tiles' order, below). kernels/cpu/dispatch.c picks
 * it where the CPU has AMX-BF16 and the OS granted this process the tile state
 * (hy_cpu_amx_permit).
 *
 * BF16G's exact sums (fp32 activations) go through the tiles too, for every T (amx_exact): each
 * activation as three bf16 parts that hold it exactly (amx_split3), one TDPBF16PS per part and
 * step on the same weight tile. Products stay exact and the sums are fp32 in TDPBF16PS's order
 * (matmul.h), so the error against the exact sum is no larger than the fma chain's (random
 * 64 x 256 x K products, K = 1024-17408: mean 7.5e-9 against 2.4e-8 of Σ|w·x|). Measured
 * alternated against HYLA_AMX=0 (the fma chain), 2 threads: bench_matmul one thread 2.1-2.3x
 * (320-360 GFLOP/s); pp512 27B slice:4 1.75-1.87x (575 GFLOP/s), 0.8B 1.5-1.7x, pp4096 1.45x;
 * batched decode (bench_streams, 0.8B) 8 streams 1.2x, 16 1.55x, 32 1.8x; one stream 0.96-0.99x.
 * One token takes fp32 FMAs in the tiles' order (amx_emu: tiles there slowed the 0.8B decode
 * to 0.95x), 2-32 the tile GEMV, more the GEMM (at 8 streams 0.75x of the GEMV).
 *
 * Q8 and Q4 from AMX_Q_MIN_T (32) tokens on take int8 tiles (AMX-INT8, amx_qexact below):
 * their integer sums are exact, so the results are the Intel instance's bit for bit (fp32
 * activations; bf16 ones take the tiles below as before). Measured against
 * the build before (the Intel instance's vpdpbusd tiles), 2 threads, pp512: 0.8B q8 1.8x
 * (388-408 -> 694-740 tok/s), q4 1.9-2.0x; 27B slice:4 q8 2.5x, q4 2.1x. FP8G keeps the Intel
 * instance's exact sums: on tiles they would take the codes unscaled against three parts of
 * x·scale, and the one-token decode the same order (tried: pp512 1.25x, decode 0.85x).
 * With bf16 activations (from HY_MATMUL_GEMM_MIN_T tokens) BF16G gets the same products as the
 * fp32 FMA chain of the other instances, summed in another order; FP8G gets weights
 * bf16(fl32(e4m3·scale)), the FP8 semantics of HY_ACT_BF16 (the other instances keep FP8G
 * exact), and Q8 / Q4 bf16(fl32(fl32(d·h)·q)) (the others run their int8 path, bit-exact,
 * either way). One core of this
 * file's development machine (a Xeon under KVM): 3.7 TFLOP/s from registers against ~0.2 for
 * the fp32 FMAs.
 *
 * Order (matmul.h, HY_ACT_BF16 with AMX): per (row, token) one fp32 accumulator over the column
 * blocks of 32 in order; within a block the hardware's TDPBF16PS (as the Intel SDM gives it: an
 * fma chain from zero over the even columns and one over the odd, acc += even + odd, bf16
 * denormals read as zero, denormal results flushed; test_matmul_simd checks it bit for bit
 * against a scalar form). It depends on the column count only, so results do not depend on T
 * (from HY_MATMUL_GEMM_MIN_T on; under the fast decode any T), the row range or the thread.
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

#include <cpuid.h>

#include "kernels/cpu/amx_begin.h"

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/fp8x_avx512.h"

/* the instance for everything not on tiles; the emulated test build may run where the CPU has
 * no AVX-512 BF16 */
#if defined(HY_AMX_EMU)
#define AMX_BASE hy_matmul_avx512_nobf16
#define AMX_QUANT hy_quant_act_row_avx512_nobf16
#else
#define AMX_BASE hy_matmul_avx512_intel
#define AMX_QUANT hy_quant_act_row_avx512_intel
#endif

/* tiles: C (tokens 0-15 | 16-31) x (group 0 | 1) = 0 1 / 2 3, A (tokens) 4 5, B (groups) 6 7 */

#define AMX_KS 32                                /* columns per tile step */
#define AMX_NP 3                                 /* bf16 parts of an fp32 activation (amx_split3) */
#define AMX_NBP (MG_NB)                          /* token rows of the converted block */
#define AMX_TAIL_BYTES ((size_t)(MG_AMX_MC / HY_G_ROWS) * 1024)
_Static_assert(MG_NB % 32 == 0 && MG_AMX_MC % 32 == 0 && MG_KC % AMX_KS == 0, "AMX blocks");
_Static_assert(AMX_TAIL_BYTES <= (size_t)MG_AMX_MC * MG_KC * 2, "AMX tail buffer fits the weight panel's scratch");
_Static_assert(HY_G_ROWS == 16 && HY_Q_ROWS == 16, "a row group / int8 block is a tile's 16 columns");
_Static_assert(MG_KC % HY_Q_GROUP == 0, "column blocks of whole int8 groups");

/* The scratch past its header (hy_mg_amx_scratch_bytes): parked accumulators (or a pass's C
 * tiles), then the weight panel (or the tails and FP8G steps), then the converted tokens */
static inline unsigned char *amx_wbuf(void *base) { return (unsigned char *)base + (size_t)MG_NB * MG_AMX_MC * 4; }
static inline void *amx_xbuf(void *base) { return amx_wbuf(base) + (size_t)MG_AMX_MC * MG_KC * 2; }


/* The exact sums (fp32 activations, matmul.h) take x = x1 + x2 + x3 in three bf16 parts, each
 * the top 16 bits of what the previous ones left (truncated, so nothing rounds up or overflows):
 * 8 + 8 + 8 significant bits hold every fp32 value exactly, and bf16 weights times them are exact
 * products. A value that is not finite is its first part (NaN quieted), the others zero. Parts
 * below 2^-126 are bf16 denormals, which TDPBF16PS reads as zero (and vcvtne2ps2bf16 flushes). */
static inline void amx_split3(__m512 lo, __m512 hi, __m512i part[AMX_NP]) {
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u), qnan = _mm512_set1_epi32(0x7fc00000);
    /* fpclass: QNaN 0x01, +Inf 0x08, -Inf 0x10, SNaN 0x80 */
    const __mmask16 fl = (__mmask16)~_mm512_fpclass_ps_mask(lo, 0x99), fh = (__mmask16)~_mm512_fpclass_ps_mask(hi, 0x99);
    const __mmask16 nl = _mm512_fpclass_ps_mask(lo, 0x81), nh = _mm512_fpclass_ps_mask(hi, 0x81);
    for (int p = 0; p < AMX_NP; p++) {
        __m512i l = _mm512_and_si512(_mm512_castps_si512(lo), top), h = _mm512_and_si512(_mm512_castps_si512(hi), top);
        if (p == 0) l = _mm512_mask_mov_epi32(l, nl, qnan), h = _mm512_mask_mov_epi32(h, nh, qnan);
        part[p] = (__m512i)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(h), _mm512_castsi512_ps(l));
        lo = _mm512_maskz_sub_ps(fl, lo, _mm512_castsi512_ps(l));
        hi = _mm512_maskz_sub_ps(fh, hi, _mm512_castsi512_ps(h));
    }
}

/* Tokens [0, nb) of x, every column, into xbf [column block][MG_NB][MG_KC]: np = 1 rounded to
 * bf16, np = AMX_NP the exact parts (amx_split3), part p at xbf + p·pst; columns past K and
 * tokens up to the next multiple of 32 are zeros. */
static void amx_pack_x(const float *x, size_t ldx, int nb, int K, int np, size_t pst, uint16_t *xbf) {
    const int nbp = (nb + 31) / 32 * 32;
    for (int kb = 0; kb * MG_KC < K; kb++) {
        const int kc = K - kb * MG_KC < MG_KC ? K - kb * MG_KC : MG_KC, kcp = (kc + AMX_KS - 1) / AMX_KS * AMX_KS;
        for (int t = 0; t < nbp; t++) {
            uint16_t *d = xbf + ((size_t)kb * AMX_NBP + (size_t)t) * MG_KC;
            if (t >= nb) {
                for (int p = 0; p < np; p++) memset(d + (size_t)p * pst, 0, (size_t)kcp * 2);
                continue;
            }
            const float *s = x + (size_t)t * ldx + (size_t)kb * MG_KC;
            for (int k = 0; k < kcp; k += 32) {
                if (np == 1) {
                    _mm512_storeu_si512(d + k, amx_bf16x32(s + k, kc - k));
                    continue;
                }
                __m512i part[AMX_NP];
                amx_split3(amx_load16(s + k, kc - k), amx_load16(s + k + 16, kc - k - 16), part);
                for (int p = 0; p < AMX_NP; p++) _mm512_storeu_si512(d + (size_t)p * pst + k, part[p]);
            }
        }
    }
}

/* One column block: C tiles of 32 tokens x 2 groups over ns steps of 32 columns. wg[i]: group
 * i's first pair of the block (64 bytes per pair); tail[i]: its last step's 16 pairs, zero
 * padded, where the group has fewer (NULL: none). xa: the block's tokens (MG_KC apart), np
 * parts pst apart, each step's parts in turn on the same weight tiles; park: their
 * accumulators, MG_AMX_MC floats apart. */
static void amx_step_block(const unsigned char *wg0, const unsigned char *wg1, const unsigned char *tail0,
                           const unsigned char *tail1, int ns, const uint16_t *xa, int np, size_t pst, float *park,
                           bool first) {
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
    if (np == 1) {
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
    } else {
        for (int s = 0; s < ns; s++) {
            _tile_loadd(6, s < nfull ? wg0 + (size_t)s * 1024 : tail0, 64);
            _tile_loadd(7, s < nfull ? wg1 + (size_t)s * 1024 : tail1, 64);
            for (int p = 0; p < np; p++) {
                const uint16_t *xp = xa + (size_t)p * pst + (size_t)s * AMX_KS;
                _tile_loadd(4, xp, xld);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_loadd(5, xp + 16 * (size_t)MG_KC, xld);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
        }
    }
    _tile_stored(0, park, pld);
    _tile_stored(1, park + HY_G_ROWS, pld);
    _tile_stored(2, park + 16 * (size_t)MG_AMX_MC, pld);
    _tile_stored(3, park + 16 * (size_t)MG_AMX_MC + HY_G_ROWS, pld);
}

/* Rows [max(rb, o0), min(re, o1)) x tokens [0, T) of results c ([token][cld] floats, row rb first)
 * into y (rows below o0 are another call's). */
static void amx_put_rows(const float *c, size_t cld, int T, int rb, int re, int o0, int o1, float *y, size_t ldy,
                         bool accumulate) {
    const int r0 = rb > o0 ? rb : o0, r1 = re < o1 ? re : o1;
    for (int t = 0; t < T; t++) {
        const float *p = c + (size_t)t * cld - rb;
        float *d = y + (size_t)t * ldy;
        for (int r = r0; r < r1; r += 16) {
            const __mmask16 m = (__mmask16)(r1 - r >= 16 ? 0xffffu : (1u << (r1 - r)) - 1u);
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
            /* the codes as value·2^-120 (fp8x_avx512.h), times 2^60 exactly, times scale·2^60: one
             * rounding; 64 codes holding one of exponent 0 (a denormal there, an assist per
             * multiply on these cores) as value·2^-8 (vf_fp8x_col8) times scale·2^8 instead, the
             * same rounding. (col8 for every code ran 0.95x at 1e-4 of them subnormal: the 0.8B
             * fp8 pp512 --fast-prefill 735-741 against 774-777 tok/s.) */
            const float s = srow[(k0 + 4 * q) / W->bs1];
            const __m512i c = _mm512_loadu_si512(src + (size_t)q * 64);
            __m512 w[4];
            if (vi_fp8x_e0(c)) {
                __m512i t, u;
                vi_fp8x_tu(c, &t, &u);
                for (int j = 0; j < 4; j++) w[j] = _mm512_mul_ps(vf_fp8x_col8(t, u, j), _mm512_set1_ps(s * 256.0f));
            } else {
                const __m512 sc = _mm512_set1_ps(s * 0x1p60f), up = _mm512_set1_ps(0x1p60f);
                vf_fp8x_quad(c, w);
                for (int j = 0; j < 4; j++) w[j] = _mm512_mul_ps(_mm512_mul_ps(w[j], up), sc);
            }
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
                     bool accumulate, bool packed, int np, void *scratch) {
    const bool f8 = W->fmt == HY_WFMT_FP8G, q = W->fmt == HY_WFMT_Q8 || W->fmt == HY_WFMT_Q4;
    const int K = W->cols, npair = (K + 1) / 2;
    const size_t pst = (size_t)((K + MG_KC - 1) / MG_KC) * AMX_NBP * MG_KC; /* elements between parts */
    const size_t gstride = (size_t)npair * 64;
    float *park = scratch;
    unsigned char *wbuf = amx_wbuf(scratch);
    uint16_t *xbf = amx_xbuf(scratch);
    const unsigned char *data = W->data;
    amx_config();
    for (int sb = 0; sb < T; sb += MG_NB) {
        const int nb = T - sb < MG_NB ? T - sb : MG_NB;
        if (!packed) amx_pack_x(x + (size_t)sb * ldx, ldx, nb, K, np, pst, xbf);
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
                                       tail ? wbuf + (size_t)g1 * 1024 : NULL, ns, xk + (size_t)tb * MG_KC, np, pst,
                                       park + (size_t)tb * MG_AMX_MC + (size_t)g * HY_G_ROWS, kb == 0);
                    }
            }
            amx_put_rows(park, MG_AMX_MC, nb, rb, re, o0, re, y + (size_t)sb * ldy, ldy, accumulate);
        }
    }
    _tile_release();
}

/* ---- The fast decode (HY_ACT_BF16_GEMV) on BF16G and FP8G: up to HY_MATMUL_GEMV_MAX_T tokens ----
 * The sum of every (row, token) is amx_gemm's chain of TDPBF16PS steps of 32 columns, so results
 * are those of the fast prefill on BF16G and do not depend on T. 5-32 tokens go through the tiles
 * (amx_gemv): the A tiles hold exactly the call's tokens (5-16: one tile and four row groups a
 * pass; 17-32: two tiles and two groups), the C tiles stay in the tiles over all the columns,
 * and BF16G weights are tile-loaded where they lie (amx_gemm, which pads the tokens to 32, parks
 * its accumulators in memory between column blocks and converts the tokens per call, ran the
 * 0.8B at one token at 0.65x the fp32 GEMV). 1-4 tokens compute the same sums with fp32 FMAs
 * (amx_emu, below): a core running tile instructions runs everything else slower too (this
 * machine: a scalar loop 20-30% slower while a tile product came every 64-16384 of its
 * iterations), and the one-token decode through the tiles streamed its weights at 0.88-0.92 of
 * the fp32 GEMV's speed (hyla bench tg64, 0.8B, alternated; software prefetch or touching the
 * lines with vector loads first did not help), 0.96-0.98 with amx_emu.
 * Engine, 0.8B bf16, 2 threads, bench_streams tok/s fast decode against the exact one, same
 * run: 1 stream 20.1 / 21.2, 2 39.2 / 36.6, 4 69.3 / 66.4, 5 87.5 / 77.4, 8 129.7 / 94.9,
 * 16 216.9 / 123.1, 32 316.6 / 140.3.
 * FP8G takes the FP8 sum of the fast decode (matmul.h): the codes as the bf16 bits of
 * e4m3·2^-120 (a shift and an AND, no scale per weight: subnormal codes are bf16 denormals,
 * which TDPBF16PS reads as zero) against x·scale·2^120 rounded to bf16, per row block of the
 * scales (amx_pack_tokens). amx_gemm's conversion (bf16(e4m3·scale), a multiply per weight) ran
 * one token at 0.49x the exact GEMV and 8 at 0.87x. 0.8B with fp8 weights (lm_head bf16), same
 * run: 1 stream 25.5 / 26.3, 2 47.1 / 42.5, 5 102.9 / 82.4, 8 144.6 / 100.2, 16 230.4 / 110.7,
 * 32 310.4 / 115.2; one thread, one token, 131072 x 5120 FP8G from DRAM: 0.98-1.01x the exact
 * GEMV (the one-stream loss was lm_head's: bf16 248320 x 1024 at 0.94-0.97x, while the weight
 * prefetch past a group's end went into the next group, not the next tile's: hy_grp_pf_off;
 * since, both threads: 0.96x the exact GEMV, and 1 stream of the 0.8B bf16 0.96x, fp8 0.96-1.00x). */

/* prefetch distance of the tile GEMV's weight streams (2048: 0.90-0.92 of the fp32 GEMV at one
 * token; none 0.88-0.90, 8192 0.80) */
#define AMX_PF 2048
/* bytes of one 32-column step of a row group: BF16G 16 column pairs, FP8G 8 column quads */
#define AMX_STEP_BF16 1024
#define AMX_STEP_FP8 512
/* 64-byte units of one row group: BF16G column pairs, FP8G column quads */
static inline int amx_units(const hy_mat *W) {
    return W->fmt == HY_WFMT_FP8G ? (W->cols + 3) / 4 : (W->cols + 1) / 2;
}

/* 32 bf16 values as the fp32 values they are, into d[0, 32) */
static inline void amx_store_f32(float *d, __m512i b) {
    _mm512_storeu_si512(d, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(b)), 16));
    _mm512_storeu_si512(d + 16, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(b, 1)), 16));
}

/* The fast decode's tokens: x's T tokens rounded to bf16, [T][kp] (kp: K up to whole tile
 * steps, zero padded), as bf16 values (amx_gemv) or their fp32 values (f32: amx_emu). For FP8G
 * (sr: the scales of its row block, bs1 columns each, a multiple of 32: one scale a vector)
 * bf16(fl32(scale·2^120)·x). Returns whether every one of them is finite. */
static bool amx_pack_tokens(const float *x, size_t ldx, int T, int K, int kp, const float *sr, int bs1, void *dst,
                            bool f32) {
    const __m512i ex = _mm512_set1_epi16(0x7f80);
    __mmask32 bad = 0;
    for (int t = 0; t < T; t++) {
        const float *s = x + (size_t)t * ldx;
        for (int k = 0; k < kp; k += 32) {
            __m512i b = _mm512_setzero_si512();
            if (k < K) {
                __m512 lo = amx_load16(s + k, K - k), hi = amx_load16(s + k + 16, K - k - 16);
                if (sr) {
                    const __m512 sc = _mm512_set1_ps(sr[k / bs1] * 0x1p120f);
                    lo = _mm512_mul_ps(lo, sc);
                    hi = _mm512_mul_ps(hi, sc);
                }
                /* past K zeros even where 0·scale is not (an infinite scale) */
                const __mmask32 in = K - k >= 32 ? 0xffffffffu : (1u << (K - k)) - 1u;
                b = _mm512_maskz_mov_epi16(in, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
                bad |= _mm512_cmpeq_epi16_mask(_mm512_and_si512(b, ex), ex);
            }
            if (f32) amx_store_f32((float *)dst + (size_t)t * kp + k, b);
            else _mm512_storeu_si512((uint16_t *)dst + (size_t)t * kp + k, b);
        }
    }
    return bad == 0;
}

/* The exact sums' tokens for the tile GEMV: x's T tokens as amx_split3's parts, [part][T][kp]
 * bf16 (kp: K up to whole tile steps, zero padded). */
static void amx_pack_exact(const float *x, size_t ldx, int T, int K, int kp, void *dst, bool f32) {
    for (int t = 0; t < T; t++) {
        const float *s = x + (size_t)t * ldx;
        for (int k = 0; k < kp; k += 32) {
            __m512i part[AMX_NP];
            amx_split3(amx_load16(s + k, K - k), amx_load16(s + k + 16, K - k - 16), part);
            for (int p = 0; p < AMX_NP; p++) {
                const size_t at = ((size_t)p * T + t) * kp + k;
                if (f32) amx_store_f32((float *)dst + at, part[p]);
                else _mm512_storeu_si512((uint16_t *)dst + at, part[p]);
            }
        }
    }
}

/* One FP8G step of a row group (nq of its 8 column quads at src, the rest zero) as the bf16 bits
 * of e4m3·2^-120 in the BF16G pair layout (tile B): per quad, vi_fp8x_tu's two halves (t: columns
 * 1 and 3 of each row, u: 0 and 2, one 16-bit lane each) interleaved into the pairs (0, 1) and
 * (2, 3), then the AND that vf_fp8x_quad applies. */
static void amx_fp8_step(const unsigned char *src, int nq, unsigned char *dst) {
    const __m512i m = _mm512_set1_epi16((short)0x87f0);
    const __m512i i01 = _mm512_set_epi16(62, 30, 60, 28, 58, 26, 56, 24, 54, 22, 52, 20, 50, 18, 48, 16, 46, 14, 44,
                                         12, 42, 10, 40, 8, 38, 6, 36, 4, 34, 2, 32, 0);
    const __m512i i23 = _mm512_add_epi16(i01, _mm512_set1_epi16(1));
    for (int q = 0; q < AMX_STEP_FP8 / 64; q++) {
        __m512i p01 = _mm512_setzero_si512(), p23 = p01;
        if (q < nq) {
            __m512i t, u;
            vi_fp8x_tu(_mm512_loadu_si512(src + (size_t)q * 64), &t, &u);
            p01 = _mm512_and_si512(_mm512_permutex2var_epi16(u, i01, t), m);
            p23 = _mm512_and_si512(_mm512_permutex2var_epi16(u, i23, t), m);
        }
        _mm512_storeu_si512(dst + (size_t)(2 * q) * 64, p01);
        _mm512_storeu_si512(dst + (size_t)(2 * q + 1) * 64, p23);
    }
}

/* tiles for T tokens: C 0-3, A 4 (and 5 from 17 tokens on), B 5-7 (6-7) */
static void amx_config_gemv(int T) {
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    const int t0 = T > 16 ? 16 : T, t1 = T > 16 ? T - 16 : 0;
    for (int i = 0; i < 8; i++) c.colsb[i] = 64, c.rows[i] = 16;
    if (t1) {
        c.rows[0] = c.rows[1] = c.rows[4] = (uint8_t)t0;
        c.rows[2] = c.rows[3] = c.rows[5] = (uint8_t)t1;
    } else {
        c.rows[0] = c.rows[1] = c.rows[2] = c.rows[3] = c.rows[4] = (uint8_t)t0;
    }
    _tile_loadconfig(&c);
}

/* One step of 32 columns: group i's B tile at b[i]; the tokens' columns at xa (tokens xld
 * elements apart) */
static inline __attribute__((always_inline)) void amx_gemv_step(const unsigned char *const b[4], int ng, bool two,
                                                                const uint16_t *xa, size_t xld) {
    const size_t ld = xld * 2;
    _tile_loadd(4, xa, ld);
    if (two) {
        _tile_loadd(5, xa + 16 * xld, ld);
        _tile_loadd(6, b[0], 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(2, 5, 6);
        if (ng > 1) {
            _tile_loadd(7, b[1], 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(3, 5, 7);
        }
    } else {
        _tile_loadd(5, b[0], 64);
        _tile_dpbf16ps(0, 4, 5);
        if (ng > 1) {
            _tile_loadd(6, b[1], 64);
            _tile_dpbf16ps(1, 4, 6);
        }
        if (ng > 2) {
            _tile_loadd(7, b[2], 64);
            _tile_dpbf16ps(2, 4, 7);
        }
        if (ng > 3) {
            _tile_loadd(5, b[3], 64);
            _tile_dpbf16ps(3, 4, 5);
        }
    }
}

/* The groups' last step (the pairs / quads of it each has, zero padded to the whole step) in
 * tbuf, one step a group; tail[i] points there, or every tail[i] is NULL where the groups end
 * on whole steps. */
static void amx_tails(const hy_mat *W, int g0, int ng, int nst, unsigned char *tbuf, const unsigned char *tail[4]) {
    const int per = (W->fmt == HY_WFMT_FP8G ? AMX_STEP_FP8 : AMX_STEP_BF16) / 64, nu = amx_units(W);
    const int jt = (nst - 1) * per;
    const size_t sb = (size_t)per * 64;
    for (int i = 0; i < 4; i++) tail[i] = NULL;
    if (jt + per <= nu) return;
    memset(tbuf, 0, (size_t)ng * sb);
    for (int i = 0; i < ng; i++) {
        const unsigned char *src =
            (const unsigned char *)W->data + ((size_t)(g0 + i) * (size_t)nu + (size_t)jt) * 64;
        memcpy(tbuf + (size_t)i * sb, src, (size_t)(nu - jt) * 64);
        tail[i] = tbuf + (size_t)i * sb;
    }
}

/* Rows [o0, o1) (one scale row block for FP8G) of T tokens through the tiles; xs: the tokens
 * as bf16, [T][kp] (amx_pack_tokens), or np parts of them [np][T][kp] (amx_pack_exact: each
 * step's parts in turn). */
static void amx_gemv(const hy_mat *W, int T, const uint16_t *xs, int kp, int np, float *y, size_t ldy, int o0,
                     int o1, bool accumulate, void *scratch) {
    const bool two = T > 16, f8 = W->fmt == HY_WFMT_FP8G;
    const int gp = two ? 2 : 4, nst = kp / AMX_KS, nu = amx_units(W);
    const size_t gstride = (size_t)nu * 64, sb = f8 ? AMX_STEP_FP8 : AMX_STEP_BF16;
    float *cbuf = scratch; /* the C tiles of a pass: [32 tokens][64 rows] */
    unsigned char *tbuf = amx_wbuf(scratch);
    unsigned char *stage = tbuf + 4 * AMX_STEP_BF16; /* FP8G: a pass's converted steps, two in turn */
    amx_config_gemv(T);
    const int gend = (o1 + HY_G_ROWS - 1) / HY_G_ROWS;
    for (int g0 = o0 / HY_G_ROWS; g0 < gend; g0 += gp) {
        const int ng = gend - g0 < gp ? gend - g0 : gp;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        const unsigned char *w[4], *tail[4];
        for (int i = 0; i < 4; i++)
            w[i] = (const unsigned char *)W->data + (size_t)(g0 + (i < ng ? i : 0)) * gstride;
        if (!f8) amx_tails(W, g0, ng, nst, tbuf, tail);
        for (int s = 0; s < nst; s++) {
            const unsigned char *b[4];
            for (int i = 0; i < ng; i++)
                for (size_t l = 0; l < sb; l += 64)
                    _mm_prefetch((const char *)w[i] + hy_grp_pf_off((size_t)s * sb + AMX_PF + l, gstride, ng),
                                 _MM_HINT_T0);
            if (f8) {
                unsigned char *st = stage + (size_t)(s & 1) * 4 * AMX_STEP_BF16;
                const int q = nu - s * (AMX_STEP_FP8 / 64); /* quads left */
                for (int i = 0; i < ng; i++) {
                    amx_fp8_step(w[i] + (size_t)s * sb, q, st + (size_t)i * AMX_STEP_BF16);
                    b[i] = st + (size_t)i * AMX_STEP_BF16;
                }
            } else {
                for (int i = 0; i < ng; i++) b[i] = s == nst - 1 && tail[0] ? tail[i] : w[i] + (size_t)s * sb;
            }
            for (int p = 0; p < np; p++)
                amx_gemv_step(b, ng, two, xs + (size_t)p * (size_t)T * (size_t)kp + (size_t)s * AMX_KS, (size_t)kp);
        }
        const size_t cld = 64 * 4;
        _tile_stored(0, cbuf, cld);
        _tile_stored(1, cbuf + 16, cld);
        if (two) {
            _tile_stored(2, cbuf + 16 * 64, cld);
            _tile_stored(3, cbuf + 16 * 64 + 16, cld);
        } else {
            _tile_stored(2, cbuf + 32, cld);
            _tile_stored(3, cbuf + 48, cld);
        }
        amx_put_rows(cbuf, 64, T, g0 * HY_G_ROWS, (g0 + ng) * HY_G_ROWS, o0, o1, y, ldy, accumulate);
    }
    _tile_release();
}

/* ---- TDPBF16PS with fp32 FMAs, for the fast decode's calls of few tokens and the exact sums' one-token calls ----
 * What one TDPBF16PS does for an output (Intel SDM; matched bit for bit on this machine, 51200
 * outputs of random 64-column products over value spreads of e^±1 to e^±8, where a single fp32
 * FMA chain over the columns matched 25-64%): with DAZ and FTZ (denormal inputs read as zero,
 * denormal results flushed), round to nearest even, two FMA chains from zero over the step's 16
 * column pairs, one over the pairs' first columns and one over their second, then
 * acc = acc + (first + second). MXCSR gives the FMAs the same DAZ and FTZ for the call. */
#define AMX_EMU_MAX_T 4
/* row groups per pass: one token 4 (8 chains), as the fp32 GEMV of this instance; more tokens 2 */
#define AMX_EMU_NG 4
#define AMX_EMU_CLD (AMX_EMU_NG * HY_G_ROWS) /* floats per token of a pass's results */
#if defined(__clang__)
#define AMX_UNROLL _Pragma("unroll")
#else
#define AMX_UNROLL _Pragma("GCC unroll 16")
#endif

/* NG groups (wg[g]: their first pair or quad) x T tokens (xf, kp apart) over nst steps, the
 * last one at tail[g] where tail[0] is not NULL; results into c ([token][AMX_EMU_NG·16]). Four
 * columns at a time: two BF16G pairs (even columns: the low halves), or one FP8G quad
 * (vf_fp8x_quad: the bf16 bits of amx_fp8_step as fp32). */
static inline __attribute__((always_inline)) void amx_emu_tile(const bool F8, const int NG, const int T, const int NP,
                                                               const unsigned char *const wg[AMX_EMU_NG],
                                                               const unsigned char *const tail[4], int nst,
                                                               size_t gs, const float *xf, int kp, float *c) {
    const size_t sb = F8 ? AMX_STEP_FP8 : AMX_STEP_BF16, pst = (size_t)T * (size_t)kp;
    __m512 acc[AMX_EMU_NG][AMX_EMU_MAX_T];
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    AMX_UNROLL for (int g = 0; g < NG; g++)
        AMX_UNROLL for (int t = 0; t < T; t++) acc[g][t] = _mm512_setzero_ps();
    for (int s = 0; s < nst; s++) {
        const unsigned char *w[AMX_EMU_NG];
        AMX_UNROLL for (int g = 0; g < NG; g++) w[g] = s == nst - 1 && tail[0] ? tail[g] : wg[g] + (size_t)s * sb;
        __m512 e[AMX_NP][AMX_EMU_NG][AMX_EMU_MAX_T], o[AMX_NP][AMX_EMU_NG][AMX_EMU_MAX_T];
        AMX_UNROLL for (int p = 0; p < NP; p++) AMX_UNROLL for (int g = 0; g < NG; g++)
            AMX_UNROLL for (int t = 0; t < T; t++) e[p][g][t] = o[p][g][t] = _mm512_setzero_ps();
        const float *xs = xf + (size_t)s * AMX_KS;
        AMX_UNROLL for (int j = 0; j < AMX_KS; j += 4) { /* columns j .. j + 3 of the step */
            AMX_UNROLL for (int g = 0; g < NG; g++) {
                __m512 v[4];
                if (F8) {
                    _mm_prefetch((const char *)wg[g] + hy_grp_pf_off((size_t)s * sb + (size_t)j * 16 + AMX_PF, gs, NG),
                                 _MM_HINT_T0);
                    vf_fp8x_quad(_mm512_loadu_si512(w[g] + (size_t)j * 16), v);
                } else {
                    AMX_UNROLL for (int h = 0; h < 2; h++) {
                        const size_t off = (size_t)(j / 2 + h) * 64;
                        _mm_prefetch((const char *)wg[g] + hy_grp_pf_off((size_t)s * sb + off + AMX_PF, gs, NG),
                                     _MM_HINT_T0);
                        const __m512i d = _mm512_loadu_si512(w[g] + off);
                        v[2 * h] = _mm512_castsi512_ps(_mm512_slli_epi32(d, 16));
                        v[2 * h + 1] = _mm512_castsi512_ps(_mm512_and_si512(d, hi));
                    }
                }
                AMX_UNROLL for (int h = 0; h < 2; h++) AMX_UNROLL for (int p = 0; p < NP; p++)
                    AMX_UNROLL for (int t = 0; t < T; t++) {
                        const float *xt = xs + (size_t)p * pst + (size_t)t * kp + j + 2 * h;
                        e[p][g][t] = _mm512_fmadd_ps(v[2 * h], _mm512_set1_ps(xt[0]), e[p][g][t]);
                        o[p][g][t] = _mm512_fmadd_ps(v[2 * h + 1], _mm512_set1_ps(xt[1]), o[p][g][t]);
                    }
            }
        }
        /* one TDPBF16PS per part, in turn */
        AMX_UNROLL for (int p = 0; p < NP; p++) AMX_UNROLL for (int g = 0; g < NG; g++)
            AMX_UNROLL for (int t = 0; t < T; t++)
                acc[g][t] = _mm512_add_ps(acc[g][t], _mm512_add_ps(e[p][g][t], o[p][g][t]));
    }
    AMX_UNROLL for (int g = 0; g < NG; g++)
        AMX_UNROLL for (int t = 0; t < T; t++) _mm512_storeu_ps(c + (size_t)t * AMX_EMU_CLD + g * 16, acc[g][t]);
}

/* amx_emu_tile's cases: the tokens and groups as constants */
static inline __attribute__((always_inline)) void amx_emu_case(const bool F8, int T, int ng,
                                                               const unsigned char *const wg[AMX_EMU_NG],
                                                               const unsigned char *const tail[4], int nst,
                                                               size_t gs, const float *xf, int kp, float *c) {
#define AMX_EMU_T(NG)                                                                                       \
    switch (T) {                                                                                            \
    case 2: amx_emu_tile(F8, NG, 2, 1, wg, tail, nst, gs, xf, kp, c); break;                                \
    case 3: amx_emu_tile(F8, NG, 3, 1, wg, tail, nst, gs, xf, kp, c); break;                                \
    default: amx_emu_tile(F8, NG, 4, 1, wg, tail, nst, gs, xf, kp, c); break;                               \
    }
    if (T == 1) switch (ng) {
        case 1: amx_emu_tile(F8, 1, 1, 1, wg, tail, nst, gs, xf, kp, c); break;
        case 2: amx_emu_tile(F8, 2, 1, 1, wg, tail, nst, gs, xf, kp, c); break;
        case 3: amx_emu_tile(F8, 3, 1, 1, wg, tail, nst, gs, xf, kp, c); break;
        default: amx_emu_tile(F8, 4, 1, 1, wg, tail, nst, gs, xf, kp, c); break;
        }
    else if (ng == 2) AMX_EMU_T(2)
    else AMX_EMU_T(1)
#undef AMX_EMU_T
}

/* The exact parts' case (BF16G, one token: amx_exact) */
static void amx_emu_exact_case(int ng, const unsigned char *const wg[AMX_EMU_NG], const unsigned char *const tail[4],
                               int nst, size_t gs, const float *xf, int kp, float *c) {
    if (ng == 1) amx_emu_tile(false, 1, 1, AMX_NP, wg, tail, nst, gs, xf, kp, c);
    else if (ng == 2) amx_emu_tile(false, 2, 1, AMX_NP, wg, tail, nst, gs, xf, kp, c);
    else amx_emu_tile(false, 3, 1, AMX_NP, wg, tail, nst, gs, xf, kp, c);
}
/* groups per pass of amx_emu: T tokens, np parts (the exact parts of one token: three groups, so
 * that their 18 chains fit the registers; four spilled, and two passes of two parts ran slower) */
static int amx_emu_groups(int T, int np) { return np > 1 ? 3 : T > 1 ? 2 : 4; }

/* Rows [o0, o1) (one scale row block for FP8G) of T <= AMX_EMU_MAX_T tokens with fp32 FMAs;
 * xf: the tokens as fp32 values of bf16, [T][kp] (amx_pack_tokens), or np parts of them
 * [np][T][kp] (amx_pack_exact). */
static void amx_emu(const hy_mat *W, int T, const float *xf, int kp, int np, float *y, size_t ldy, int o0, int o1,
                    bool accumulate, void *scratch) {
    const bool f8 = W->fmt == HY_WFMT_FP8G;
    const int nst = kp / AMX_KS;
    const size_t gstride = (size_t)amx_units(W) * 64;
    float *cbuf = scratch;
    unsigned char *tbuf = amx_wbuf(scratch);
    const unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u); /* FTZ, DAZ */
    const int gend = (o1 + HY_G_ROWS - 1) / HY_G_ROWS;
    const int gp = amx_emu_groups(T, np);
    for (int g0 = o0 / HY_G_ROWS; g0 < gend; g0 += gp) {
        const int ng = gend - g0 < gp ? gend - g0 : gp;
        const unsigned char *wg[AMX_EMU_NG], *tail[4];
        for (int g = 0; g < AMX_EMU_NG; g++)
            wg[g] = (const unsigned char *)W->data + (size_t)(g0 + (g < ng ? g : 0)) * gstride;
        amx_tails(W, g0, ng, nst, tbuf, tail);
        if (np > 1) amx_emu_exact_case(ng, wg, tail, nst, gstride, xf, kp, cbuf);
        else if (f8) amx_emu_case(true, T, ng, wg, tail, nst, gstride, xf, kp, cbuf);
        else amx_emu_case(false, T, ng, wg, tail, nst, gstride, xf, kp, cbuf);
        amx_put_rows(cbuf, AMX_EMU_CLD, T, g0 * HY_G_ROWS, (g0 + ng) * HY_G_ROWS, o0, o1, y, ldy, accumulate);
    }
    _mm_setcsr(csr);
}
_Static_assert(AMX_EMU_NG == 4 && AMX_EMU_MAX_T == 4, "amx_emu's cases");
_Static_assert(4 * AMX_STEP_BF16 + 2 * 4 * AMX_STEP_BF16 <= AMX_TAIL_BYTES, "amx_gemv's tails and FP8G steps");

/* ---- Q8 / Q4 exact sums on int8 tiles (AMX-INT8) ----------------------------------------- */

/* The int8 path's integer sums are exact, so TDPBSSD (signed bytes times signed bytes, int32
 * sums) gives the very i_g of matmul.h's Q8 / Q4 semantics, whatever its order: a tile's 16
 * tokens (A: their int8 activations of one group, 32 bytes each) times 16 rows (B: the group's
 * record as signed q, 8 quads x 16 rows x 4: Q8's bytes 128 + q with their top bit flipped,
 * Q4's nibbles 8 + q unpacked, minus 8), then the same float steps in the same order as the
 * Intel instance's q_tile: acc = fma((float)i_g, fl32(h·s_x), acc) over the groups, y = acc·d.
 * So results are bit-identical to every other kernel's. Blocking: every token quantized once
 * per call into the scratch (kept across the row pieces of one matmul under HY_ACT_KEEP_X);
 * rows in blocks of AMX_QMC whose weights of AMX_QKG groups, converted, stay in L2 while every
 * 16-token block passes them, 16 accumulators per tile in registers over the block's groups,
 * parked between column blocks. Tiles: C 0 / 1 (groups in turn), A 4 / 5, B 6 / 7. With the
 * weights as stored (unsigned, TDPBSUD) each step also added the zero point's correction:
 * one thread, T = 512, 0.8B shapes, 0.93x of this. */
#define AMX_QMC 128 /* rows per row block (8 int8 blocks) */
#define AMX_QKG 64  /* groups per column block: 128 rows x 2048 columns, 256 KiB of Q8 */
_Static_assert(AMX_QMC % HY_Q_ROWS == 0 && AMX_QKG % 2 == 0, "int8 tile blocks");

static void amx_config_q(void) {
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    c.rows[0] = c.rows[1] = 16, c.colsb[0] = c.colsb[1] = 64; /* C: 16 tokens x 16 rows int32 */
    c.rows[4] = c.rows[5] = 16, c.colsb[4] = c.colsb[5] = 32; /* A: 16 tokens x one group */
    c.rows[6] = c.rows[7] = 8, c.colsb[6] = c.colsb[7] = 64;  /* B: 8 quads x 16 rows x 4 */
    _tile_loadconfig(&c);
}

/* Where the int8 path's parts lie in the scratch past its header: Tp tokens' int8 activations
 * (Kp apart), their scales and hy_quant_act_row's corrections ([token][group]), parked
 * accumulators ([token][AMX_QMC]), a row block's converted records ([block][group][512]), two
 * C tiles. */
typedef struct amx_qbuf {
    int8_t *xq;
    float *sx;
    int32_t *corr;
    float *park;
    unsigned char *rec;
    int32_t *cb;
} amx_qbuf;
static size_t amx_qbuf_at(void *base, int Tp, int G, amx_qbuf *b) {
    const size_t Kp = (size_t)G * HY_Q_GROUP, xq = (size_t)Tp * Kp, sg = (size_t)Tp * G * 4;
    const size_t park = (size_t)Tp * AMX_QMC * 4, rec = (size_t)(AMX_QMC / HY_Q_ROWS) * AMX_QKG * 512;
    unsigned char *p = base;
    b->xq = (int8_t *)p;
    b->sx = (float *)(p + xq);
    b->corr = (int32_t *)(p + xq + sg);
    b->park = (float *)(p + xq + 2 * sg);
    b->rec = p + xq + 2 * sg + park;
    b->cb = (int32_t *)(p + xq + 2 * sg + park + rec);
    return xq + 2 * sg + park + rec + 2 * 1024;
}

/* Tokens [0, T) quantized by the base instance (hy_quant_act_row's values bit for bit; its
 * corrections, for zero point 0, go to b->corr unread: signed weights need none); rows up to
 * Tp are zeros. */
static void amx_quant_tokens(const float *x, size_t ldx, int T, int Tp, int K, const amx_qbuf *b) {
    const int G = hy_q_groups(K);
    const size_t Kp = (size_t)G * HY_Q_GROUP;
    for (int t = 0; t < Tp; t++) {
        int8_t *q = b->xq + (size_t)t * Kp;
        float *s = b->sx + (size_t)t * G;
        if (t < T) {
            AMX_QUANT(x + (size_t)t * ldx, K, 0, q, s, b->corr + (size_t)t * G);
            continue;
        }
        memset(q, 0, Kp);
        memset(s, 0, (size_t)G * 4);
    }
}

/* Groups [g0, g0 + ng) of blocks [b0, b0 + nb) as signed q in the tile layout: Q8's bytes
 * 128 + q with the top bit flipped; Q4's record v: its low nibbles quad 2v, its high ones quad
 * 2v + 1, each 8 + q minus 8. */
static void amx_unpack_q(const hy_mat *W, int b0, int nb, int g0, int ng, unsigned char *dst) {
    const bool q4 = W->fmt == HY_WFMT_Q4;
    const __m512i lo = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8((char)0x80), eight = _mm512_set1_epi8(8);
    for (int b = 0; b < nb; b++)
        for (int g = 0; g < ng; g++) {
            const unsigned char *r = hy_q_record(W, b0 + b, g0 + g);
            unsigned char *d = dst + ((size_t)b * AMX_QKG + (size_t)g) * 512;
            if (!q4) {
                for (int v = 0; v < 8; v++)
                    _mm512_storeu_si512(d + (size_t)v * 64, _mm512_xor_si512(_mm512_loadu_si512(r + (size_t)v * 64), top));
                continue;
            }
            for (int v = 0; v < 4; v++) {
                const __m512i w = _mm512_loadu_si512(r + (size_t)v * 64);
                _mm512_storeu_si512(d + (size_t)(2 * v) * 64, _mm512_sub_epi8(_mm512_and_si512(w, lo), eight));
                _mm512_storeu_si512(d + (size_t)(2 * v + 1) * 64,
                                    _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(w, 4), lo), eight));
            }
        }
}

/* acc[t] over group g, from C tile contents cb: q_tile's float step */
static inline __attribute__((always_inline)) void amx_q_step(__m512 acc[16], const int32_t *cb, const uint16_t *h16,
                                                              const float *sx, size_t G) {
    const __m512 h = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h16));
#pragma GCC unroll 16
    for (int t = 0; t < 16; t++)
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(cb + 16 * t)),
                                 _mm512_mul_ps(h, _mm512_set1_ps(sx[(size_t)t * G])), acc[t]);
}

/* One 16-token x 16-row tile over groups [g0, g1) of the block whose converted records start
 * at rec (group g0's); acc in, acc out. */
static inline __attribute__((always_inline)) void amx_q_tile(const hy_mat *W, int blk, const unsigned char *rec,
                                                              const amx_qbuf *b, int t0, int G, int g0, int g1,
                                                              __m512 acc[16]) {
    const size_t Kp = (size_t)G * HY_Q_GROUP;
    const int8_t *xa = b->xq + (size_t)t0 * Kp;
    const float *sx = b->sx + (size_t)t0 * G;
    const uint16_t *h0 = hy_q_gscale(W, blk, 0);
    const size_t uh = hy_q_unit_bytes(W->fmt) / 2;
#define AMX_Q_REC(g) (rec + (size_t)((g) - g0) * 512)
#define AMX_Q_H(g) (h0 + (size_t)((g) / 2) * uh + (size_t)((g) % 2) * HY_Q_ROWS)
    /* group g's C tile is stored right after its product, and its float step runs after the
     * next group's product is issued: 1.05x reading each C tile back at once. 2 x 2 tiles per
     * group (four products in flight, the accumulators in L1 instead of registers): 0.75x. One
     * thread, 0.8B shapes, T = 512. */
    for (int g = g0; g < g1; g += 2) {
        _tile_zero(0);
        _tile_loadd(4, xa + (size_t)g * HY_Q_GROUP, Kp);
        _tile_loadd(6, AMX_Q_REC(g), 64);
        _tile_dpbssd(0, 4, 6);
        _tile_stored(0, b->cb, 64);
        if (g > g0) amx_q_step(acc, b->cb + 256, AMX_Q_H(g - 1), sx + g - 1, (size_t)G);
        if (g + 1 == g1) {
            amx_q_step(acc, b->cb, AMX_Q_H(g), sx + g, (size_t)G);
            break;
        }
        _tile_zero(1);
        _tile_loadd(5, xa + (size_t)(g + 1) * HY_Q_GROUP, Kp);
        _tile_loadd(7, AMX_Q_REC(g + 1), 64);
        _tile_dpbssd(1, 5, 7);
        _tile_stored(1, b->cb + 256, 64);
        amx_q_step(acc, b->cb, AMX_Q_H(g), sx + g, (size_t)G);
        if (g + 2 == g1) amx_q_step(acc, b->cb + 256, AMX_Q_H(g + 1), sx + g + 1, (size_t)G);
    }
#undef AMX_Q_REC
#undef AMX_Q_H
}

/* Rows [o0, o1) of a Q8 / Q4 W times T tokens (padded to 16s), the exact sums (above). packed: the
 * scratch already holds these tokens quantized (HY_ACT_KEEP_X). Returns false,
 * computing nothing, when the tokens do not fit the scratch. */
static bool amx_qexact(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                       bool accumulate, bool packed, void *base) {
    const int G = hy_q_groups(W->cols), Tp = (T + 15) / 16 * 16;
    amx_qbuf b;
    if (amx_qbuf_at(base, Tp, G, &b) > hy_mg_amx_scratch_bytes(W->cols)) return false;
    if (!packed) amx_quant_tokens(x, ldx, T, Tp, W->cols, &b);
    amx_config_q();
    for (int rb = o0 / HY_Q_ROWS * HY_Q_ROWS; rb < o1; rb += AMX_QMC) {
        const int re = rb + AMX_QMC < o1 ? rb + AMX_QMC : o1, nbk = (re - rb + HY_Q_ROWS - 1) / HY_Q_ROWS;
        for (int g0 = 0; g0 < G; g0 += AMX_QKG) {
            const int g1 = G - g0 < AMX_QKG ? G : g0 + AMX_QKG;
            amx_unpack_q(W, rb / HY_Q_ROWS, nbk, g0, g1 - g0, b.rec);
            for (int t0 = 0; t0 < T; t0 += 16)
                for (int k = 0; k < nbk; k++) {
                    const int blk = rb / HY_Q_ROWS + k, rlo = blk * HY_Q_ROWS;
                    float *park = b.park + (size_t)t0 * AMX_QMC + (size_t)k * HY_Q_ROWS;
                    __m512 acc[16];
#pragma GCC unroll 16
                    for (int t = 0; t < 16; t++)
                        acc[t] = g0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(park + (size_t)t * AMX_QMC);
                    amx_q_tile(W, blk, b.rec + (size_t)k * AMX_QKG * 512, &b, t0, G, g0, g1, acc);
                    if (g1 < G) {
#pragma GCC unroll 16
                        for (int t = 0; t < 16; t++) _mm512_storeu_ps(park + (size_t)t * AMX_QMC, acc[t]);
                        continue;
                    }
                    /* q_tile's end: y = acc·d, rows [o0, o1) only */
                    const int a = o0 > rlo ? o0 - rlo : 0, e = o1 - rlo < HY_Q_ROWS ? o1 - rlo : HY_Q_ROWS;
                    const __mmask16 m = (__mmask16)(((1u << e) - 1u) & ~((1u << a) - 1u));
                    const __m512 d = _mm512_loadu_ps(W->scale + rlo);
#pragma GCC unroll 16
                    for (int t = 0; t < 16; t++) {
                        if (t0 + t >= T) break;
                        float *yt = y + (size_t)(t0 + t) * ldy + rlo;
                        __m512 v = _mm512_mul_ps(acc[t], d);
                        if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, yt), v);
                        _mm512_mask_storeu_ps(yt, m, v);
                    }
                }
        }
    }
    return true;
}

#include "kernels/cpu/amx_end.h"

/* What the scratch's converted tokens hold (the AMX part of the scratch header, matmul_blk.h):
 * HY_ACT_KEEP_X lets the pieces of one matmul (the forward's row pieces of 128, the
 * up_proj after gate_proj) skip the conversion, which took ~25% of amx_gemm's time when every
 * piece converted all its tokens again. Valid only when one token block held them all. */
typedef enum amx_layout {
    AMX_X_GEMM = 1, /* amx_pack_x's */
    AMX_X_BF16,     /* the fast decode's on BF16G (amx_pack_tokens: bf16 or, from T, fp32) */
    AMX_X_FP8,      /* the fast decode's on FP8G, of one matrix's row block (amx_pack_tokens) */
    AMX_X_GEMM3,    /* amx_pack_x's exact parts */
    AMX_X_EXACT,    /* amx_pack_exact's, bf16 (the tile GEMV) */
    AMX_X_EXACT_F32, /* amx_pack_exact's, their fp32 values (amx_emu) */
    AMX_X_Q,         /* amx_quant_tokens' (Q8 and Q4) */
} amx_layout;
typedef struct amx_rec {
    const float *x;
    size_t ldx;
    int T, K, valid;
    amx_layout layout;
    const float *scale; /* AMX_X_FP8: the matrix's block scales and the row block */
    int rbk;
} amx_rec;
_Static_assert(sizeof(amx_rec) <= MM_HDR_AMX_BYTES, "AMX scratch record");

/* Whether this call may use the tokens the previous one converted (HY_ACT_KEEP_X, the same x,
 * T and K, the same layout and, for FP8G, the same scales and row block); records this call's.
 * The Intel instance's record is cleared: the conversion writes over what it kept in the
 * scratch. */
static bool amx_keep(void *scratch, hy_act act, const amx_rec *now) {
    amx_rec *rec = (amx_rec *)((unsigned char *)scratch + MM_HDR_SIMD_BYTES);
    const bool packed = (act & HY_ACT_KEEP_X) && rec->valid && rec->layout == now->layout && rec->x == now->x &&
                        rec->ldx == now->ldx && rec->T == now->T && rec->K == now->K && rec->scale == now->scale &&
                        rec->rbk == now->rbk;
    memset(scratch, 0, MM_HDR_SIMD_BYTES);
    *rec = *now;
    return packed;
}

/* The fast decode: BF16G over the call's rows in one piece; FP8G per row block of its scales
 * (each its own tokens), a row block whose scaled tokens are not finite through the Intel
 * instance's exact sums (matmul.h). */
static void amx_fast(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                     bool accumulate, hy_act act, void *scratch) {
    const int K = W->cols, kp = (K + AMX_KS - 1) / AMX_KS * AMX_KS;
    const bool emu = T <= AMX_EMU_MAX_T, f8 = W->fmt == HY_WFMT_FP8G;
    amx_rec *rec = (amx_rec *)((unsigned char *)scratch + MM_HDR_SIMD_BYTES);
    void *base = (unsigned char *)scratch + HY_MATMUL_SCRATCH_HDR;
    void *xs = amx_xbuf(base);
    for (int rb = o0, re; rb < o1; rb = re) {
        const int rbk = f8 ? rb / W->bs0 : 0;
        re = f8 && (rbk + 1) * W->bs0 < o1 ? (rbk + 1) * W->bs0 : o1;
        const amx_rec now = {x, ldx, T, K, 1, f8 ? AMX_X_FP8 : AMX_X_BF16, f8 ? W->scale : NULL, rbk};
        const float *sr = f8 ? W->scale + (size_t)rbk * (size_t)((K + W->bs1 - 1) / W->bs1) : NULL;
        const bool finite = amx_keep(scratch, act, &now) || amx_pack_tokens(x, ldx, T, K, kp, sr, W->bs1, xs, emu);
        if (f8 && !finite) {
            rec->valid = 0;
            AMX_BASE()(W, T, x, ldx, y, ldy, rb, re, accumulate, act & ~HY_ACT_KEEP_X, scratch);
            continue;
        }
        if (emu) amx_emu(W, T, xs, kp, 1, y, ldy, rb, re, accumulate, base);
        else amx_gemv(W, T, xs, kp, 1, y, ldy, rb, re, accumulate, base);
    }
}

/* BF16G's exact sums (matmul.h): the activations' three parts on the tiles, the GEMM above
 * HY_MATMUL_GEMV_MAX_T tokens, the tile GEMV from 2 on, one token with fp32 FMAs (the same
 * chains). */
static void amx_exact(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                      bool accumulate, hy_act act, void *scratch) {
    const int K = W->cols;
    void *base = (unsigned char *)scratch + HY_MATMUL_SCRATCH_HDR;
    if (T > HY_MATMUL_GEMV_MAX_T) {
        const bool packed = amx_keep(scratch, act, &(amx_rec){x, ldx, T, K, T <= MG_NB, AMX_X_GEMM3, NULL, 0});
        amx_gemm(W, T, x, ldx, y, ldy, o0, o1, accumulate, packed, AMX_NP, base);
        return;
    }
    const int kp = (K + AMX_KS - 1) / AMX_KS * AMX_KS;
    const bool emu = T == 1;
    void *xs = amx_xbuf(base);
    if (!amx_keep(scratch, act, &(amx_rec){x, ldx, T, K, 1, emu ? AMX_X_EXACT_F32 : AMX_X_EXACT, NULL, 0}))
        amx_pack_exact(x, ldx, T, K, kp, xs, emu);
    if (emu) amx_emu(W, T, xs, kp, AMX_NP, y, ldy, o0, o1, accumulate, base);
    else amx_gemv(W, T, xs, kp, AMX_NP, y, ldy, o0, o1, accumulate, base);
}

/* Q8 / Q4 from this many tokens on take the int8 tiles (amx_qexact; bit-identical to the
 * Intel instance's sums, which take fewer). 0.8B q8 prefill, 2 threads, 3 rounds alternated
 * against the Intel instance's: 16 tokens 0.97x, 24 0.94-0.97x, 32 1.07-1.13x, 64 1.4x. */
#define AMX_Q_MIN_T 32

static inline __attribute__((always_inline)) void mm_amx_body(const bool I8, const hy_mat *W, int T, const float *x,
                                                               size_t ldx, float *y, size_t ldy, int o0, int o1,
                                                               bool accumulate, hy_act act, void *scratch) {
    amx_rec *rec = (amx_rec *)((unsigned char *)scratch + MM_HDR_SIMD_BYTES);
    void *base = (unsigned char *)scratch + HY_MATMUL_SCRATCH_HDR;
    const bool q = W->fmt == HY_WFMT_Q8 || W->fmt == HY_WFMT_Q4;
    const bool fmt = W->fmt == HY_WFMT_BF16G || W->fmt == HY_WFMT_FP8G || q;
    if (fmt && HY_ACT_MODE(act) == HY_ACT_BF16 && T >= HY_MATMUL_GEMM_MIN_T) {
        if (o1 <= o0) return;
        const bool packed = amx_keep(scratch, act, &(amx_rec){x, ldx, T, W->cols, T <= MG_NB, AMX_X_GEMM, NULL, 0});
        amx_gemm(W, T, x, ldx, y, ldy, o0, o1, accumulate, packed, 1, base);
        return;
    }
    if (I8 && q && T >= AMX_Q_MIN_T) { /* the int8 semantics (fp32 activations, or the fast decode's flag) */
        if (o1 <= o0) return;
        const amx_rec now = {x, ldx, T, W->cols, 1, AMX_X_Q, NULL, 0};
        if (amx_qexact(W, T, x, ldx, y, ldy, o0, o1, accumulate, amx_keep(scratch, act, &now), base)) return;
        rec->valid = 0; /* did not fit: nothing quantized */
    }
    if ((W->fmt == HY_WFMT_BF16G || (W->fmt == HY_WFMT_FP8G && W->bs1 % AMX_KS == 0)) && hy_act_gemv_bf16(act, T)) {
        if (o1 > o0) amx_fast(W, T, x, ldx, y, ldy, o0, o1, accumulate, act, scratch);
        return;
    }
    if (W->fmt == HY_WFMT_BF16G) { /* the exact sums, any T */
        if (o1 > o0) amx_exact(W, T, x, ldx, y, ldy, o0, o1, accumulate, act, scratch);
        return;
    }
    rec->valid = 0; /* the Intel instance may write over the converted tokens */
    AMX_BASE()(W, T, x, ldx, y, ldy, o0, o1, accumulate, act, scratch);
}

static void mm_amx(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                   bool accumulate, hy_act act, void *scratch) {
    mm_amx_body(false, W, T, x, ldx, y, ldy, o0, o1, accumulate, act, scratch);
}
static void mm_amx_i8(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                      bool accumulate, hy_act act, void *scratch) {
    mm_amx_body(true, W, T, x, ldx, y, ldy, o0, o1, accumulate, act, scratch);
}

/* AMX-INT8 (leaf 7 EDX bit 25; its tile state is AMX-BF16's, which dispatch checks); the
 * emulated tiles have it */
static bool amx_int8_cpu(void) {
#if defined(HY_AMX_EMU)
    return true;
#else
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7) return false;
    __cpuid_count(7, 0, a, b, c, d);
    return (d >> 25) & 1;
#endif
}

hy_matmul_fn hy_matmul_avx512_amx(void) { return AMX_BASE() ? (amx_int8_cpu() ? mm_amx_i8 : mm_amx) : NULL; }

#else
hy_matmul_fn hy_matmul_avx512_amx(void) { return NULL; }
#endif
