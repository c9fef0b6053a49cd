/*
 * The avx512 tier's Intel matmul instance with AMX (Advanced Matrix Extensions, Sapphire Rapids
 * and later): hy_matmul_avx512_amx() is hy_matmul_avx512_intel() except that BF16 row groups
 * (HY_WFMT_BF16G) with bf16 activations (HY_ACT_BF16, the opt-in fast prefill) from
 * HY_MATMUL_GEMM_MIN_T tokens on go through TDPBF16PS tiles. kernels/cpu/dispatch.c picks it
 * where the CPU has AMX-BF16 and the OS granted this process the tile state
 * (hy_cpu_amx_permit).
 *
 * Why only there: a tile multiplies bf16 by bf16, so it cannot compute the exact fp32-activation
 * contract (matmul.h); with bf16 activations it computes the same products as the fp32 FMA
 * chain of the other instances, summed in another order. One core (this file's development
 * machine, a Xeon under KVM): 3.7 TFLOP/s from registers against ~0.2 for the fp32 FMAs.
 *
 * Order (matmul.h, HY_ACT_BF16 with AMX): per (row, token) one fp32 accumulator over the column
 * blocks of 32 in order; within a block the hardware's TDPBF16PS (pairs of products, bf16
 * denormals read as zero, denormal results flushed). It depends on the column count only, so
 * results do not depend on T (from HY_MATMUL_GEMM_MIN_T on), the row range or the thread.
 *
 * The weights need no repacking: 16 consecutive column pairs of a row group are 16 x 64
 * contiguous bytes, dword i of row j = row i's columns 2j, 2j+1, which is exactly the B operand
 * of a tile (K/2 rows of N pairs). Blocking: per thread, tokens in blocks of MG_NB, converted
 * to bf16 once ([column block][token][MG_KC], zero padded); rows in blocks of MG_MC (whose
 * weights of one column block, 64 KiB, stay in L2 while every token passes them), C tiles of
 * 32 tokens x 32 rows parked between column blocks ([token][MG_MC] fp32).
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

/* tiles: C (tokens 0-15 | 16-31) x (group 0 | 1) = 0 1 / 2 3, A (tokens) 4 5, B (groups) 6 7 */
typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

#define AMX_KS 32                                /* columns per tile step */
#define AMX_NBP (MG_NB)                          /* token rows of the converted block */
#define AMX_TAIL_BYTES ((size_t)(MG_MC / HY_G_ROWS) * 1024)
_Static_assert(MG_NB % 32 == 0 && MG_MC % 32 == 0 && MG_KC % AMX_KS == 0, "AMX blocks");
_Static_assert(AMX_TAIL_BYTES <= (size_t)MG_MC * MG_KC * 2, "AMX tail buffer fits the weight panel's scratch");

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
 * their accumulators, MG_MC floats apart. */
static void amx_step_block(const unsigned char *wg0, const unsigned char *wg1, const unsigned char *tail0,
                           const unsigned char *tail1, int ns, const uint16_t *xa, float *park, bool first) {
    const size_t pld = (size_t)MG_MC * 4, xld = (size_t)MG_KC * 2;
    if (first) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, park, pld);
        _tile_loadd(1, park + HY_G_ROWS, pld);
        _tile_loadd(2, park + 16 * (size_t)MG_MC, pld);
        _tile_loadd(3, park + 16 * (size_t)MG_MC + HY_G_ROWS, pld);
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
    _tile_stored(2, park + 16 * (size_t)MG_MC, pld);
    _tile_stored(3, park + 16 * (size_t)MG_MC + HY_G_ROWS, pld);
}

/* The parked results of rows [rb, re) x tokens [0, nb) into y (rows below o0 are another call's). */
static void amx_write(const float *park, int rb, int re, int o0, int nb, float *y, size_t ldy, bool accumulate) {
    const int lo = rb > o0 ? rb : o0;
    for (int t = 0; t < nb; t++) {
        const float *p = park + (size_t)t * MG_MC - rb;
        float *d = y + (size_t)t * ldy;
        for (int r = lo; r < re; r += 16) {
            const __mmask16 m = (__mmask16)(re - r >= 16 ? 0xffffu : (1u << (re - r)) - 1u);
            __m512 v = _mm512_maskz_loadu_ps(m, p + r);
            if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, d + r));
            _mm512_mask_storeu_ps(d + r, m, v);
        }
    }
}

static void amx_gemm_bf16g(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                           bool accumulate, void *scratch) {
    const int K = W->cols, npair = (K + 1) / 2;
    const size_t gstride = (size_t)npair * 64;
    float *park = scratch;
    unsigned char *tailbuf = (unsigned char *)scratch + (size_t)MG_NB * MG_MC * 4;
    uint16_t *xbf = (uint16_t *)(tailbuf + (size_t)MG_MC * MG_KC * 2);
    const unsigned char *data = W->data;
    amx_config();
    for (int sb = 0; sb < T; sb += MG_NB) {
        const int nb = T - sb < MG_NB ? T - sb : MG_NB;
        amx_pack_x(x + (size_t)sb * ldx, ldx, nb, K, xbf);
        for (int rb = o0 / HY_G_ROWS * HY_G_ROWS; rb < o1; rb += MG_MC) {
            const int re = o1 - rb < MG_MC ? o1 : rb + MG_MC;
            const int g0 = rb / HY_G_ROWS, ng = (re - rb + HY_G_ROWS - 1) / HY_G_ROWS;
            for (int kb = 0; kb * MG_KC < K; kb++) {
                const int kc = K - kb * MG_KC < MG_KC ? K - kb * MG_KC : MG_KC, ns = (kc + AMX_KS - 1) / AMX_KS;
                const int j0 = kb * MG_KC / 2, jt = j0 + (ns - 1) * (AMX_KS / 2); /* first pair of the last step */
                const bool tail = jt + AMX_KS / 2 > npair;
                if (tail) { /* the last step's pairs that the groups have, zero padded */
                    memset(tailbuf, 0, (size_t)ng * 1024);
                    for (int g = 0; g < ng; g++)
                        memcpy(tailbuf + (size_t)g * 1024, data + (size_t)(g0 + g) * gstride + (size_t)jt * 64,
                               (size_t)(npair - jt) * 64);
                }
                const uint16_t *xk = xbf + (size_t)kb * AMX_NBP * MG_KC;
                for (int tb = 0; tb < nb; tb += 32)
                    for (int g = 0; g < ng; g += 2) {
                        /* an odd last group pairs with itself (its second C tiles are never written out) */
                        const int g1 = g + 1 < ng ? g + 1 : g;
                        amx_step_block(data + (size_t)(g0 + g) * gstride + (size_t)j0 * 64,
                                       data + (size_t)(g0 + g1) * gstride + (size_t)j0 * 64,
                                       tail ? tailbuf + (size_t)g * 1024 : NULL,
                                       tail ? tailbuf + (size_t)g1 * 1024 : NULL, ns, xk + (size_t)tb * MG_KC,
                                       park + (size_t)tb * MG_MC + (size_t)g * HY_G_ROWS, kb == 0);
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

static void mm_amx(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                   bool accumulate, hy_act act, void *scratch) {
    if (W->fmt == HY_WFMT_BF16G && HY_ACT_MODE(act) == HY_ACT_BF16 && T >= HY_MATMUL_GEMM_MIN_T) {
        if (o1 <= o0) return;
        memset(scratch, 0, HY_MATMUL_SCRATCH_HDR); /* what the instance kept there is gone */
        amx_gemm_bf16g(W, T, x, ldx, y, ldy, o0, o1, accumulate, (unsigned char *)scratch + HY_MATMUL_SCRATCH_HDR);
        return;
    }
    hy_matmul_avx512_intel()(W, T, x, ldx, y, ldy, o0, o1, accumulate, act, scratch);
}

hy_matmul_fn hy_matmul_avx512_amx(void) { return hy_matmul_avx512_intel() ? mm_amx : NULL; }

#else
hy_matmul_fn hy_matmul_avx512_amx(void) { return NULL; }
#endif
