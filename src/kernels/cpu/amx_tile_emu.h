/*
 * The AMX tile instructions the AMX kernels use (matmul_amx.c, attn_amx.c), and the bf16
 * conversion they take from AVX-512 BF16, written in plain C and AVX-512 F/BW for test builds
 * only (cmake -DHYLA_AMX_EMU=ON, `make test-amxemu`): an AVX-512 machine without AMX (an Ice
 * Lake, say, as CI's may be) then runs those kernels' tiling, packing, tails and masks against their scalar
 * oracles instead of skipping them. Never part of a release build (a tile product here costs
 * thousands of scalar FMAs).
 *
 * Included by the AMX kernels inside a region compiled for AVX-512 F/BW/DQ/VL only; each
 * intrinsic name they use is redefined to a function here (a new one without an entry here
 * fails to compile in that build: "target specific option mismatch", or an undefined
 * builtin).
 *
 * State: the tile registers and their configuration are per thread, as on hardware
 * (_Thread_local: a model of the CPU's register file, not engine state), and per file that
 * includes this header, unlike hardware: harmless, since every kernel loads its own
 * configuration at entry and keeps nothing in tiles between calls.
 * Semantics, those the kernels' results depend on and their tests check bit for bit
 * (tests/kernels/test_matmul_simd.c, amx_order_dot): TDPBF16PS per output element and call,
 * one fma chain from zero over the even pairs' products and one over the odd, then
 * acc + (even + odd), bf16 inputs with denormals read as zero and every result's denormals
 * flushed; rows and column bytes past a tile's configuration read as zero; loads zero the
 * rest of a row. VCVTNE2PS2BF16: round to nearest even, denormals to signed zero, NaNs quieted.
 */
#ifndef HY_KERNELS_CPU_AMX_TILE_EMU_H
#define HY_KERNELS_CPU_AMX_TILE_EMU_H

#include "kernels/cpu/bf16r_avx512.h"

#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ax_file {
    uint8_t rows[8];
    uint16_t colsb[8];
    _Alignas(64) uint8_t t[8][16][64];
} ax_file;
static _Thread_local ax_file ax_regs;

static inline void ax_loadconfig(const void *cfg) {
    const uint8_t *c = cfg;
    memset(&ax_regs, 0, sizeof ax_regs);
    for (int i = 0; i < 8; i++) {
        uint16_t cb;
        memcpy(&cb, c + 16 + 2 * i, 2);
        ax_regs.colsb[i] = cb > 64 ? 64 : cb;
        ax_regs.rows[i] = c[48 + i] > 16 ? 16 : c[48 + i];
    }
}
static inline void ax_release(void) { memset(&ax_regs, 0, sizeof ax_regs); }
static inline void ax_zero(int i) { memset(ax_regs.t[i], 0, sizeof ax_regs.t[i]); }
static inline void ax_loadd(int i, const void *base, size_t stride) {
    memset(ax_regs.t[i], 0, sizeof ax_regs.t[i]);
    for (int r = 0; r < ax_regs.rows[i]; r++)
        memcpy(ax_regs.t[i][r], (const uint8_t *)base + (size_t)r * stride, ax_regs.colsb[i]);
}
static inline void ax_stored(int i, void *base, size_t stride) {
    for (int r = 0; r < ax_regs.rows[i]; r++)
        memcpy((uint8_t *)base + (size_t)r * stride, ax_regs.t[i][r], ax_regs.colsb[i]);
}

static inline float ax_ftz(float v) { return fabsf(v) < 1.17549435e-38f ? copysignf(0.0f, v) : v; }
/* element j of a tile row of bf16 as fp32, denormals as zero */
static inline float ax_bf16(const uint8_t *row, int j) {
    uint16_t h;
    memcpy(&h, row + 2 * j, 2);
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return ax_ftz(f);
}
static inline void ax_dpbf16ps(int c, int a, int b) {
    const int M = ax_regs.rows[c], N = ax_regs.colsb[c] / 4, K = ax_regs.colsb[a] / 4;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float e = 0.0f, o = 0.0f, acc;
            for (int k = 0; k < K; k++) {
                const uint8_t *ar = ax_regs.t[a][m], *br = ax_regs.t[b][k];
                e = ax_ftz(fmaf(ax_bf16(ar, 2 * k), ax_bf16(br, 2 * n), e));
                o = ax_ftz(fmaf(ax_bf16(ar, 2 * k + 1), ax_bf16(br, 2 * n + 1), o));
            }
            memcpy(&acc, ax_regs.t[c][m] + 4 * n, 4);
            acc = ax_ftz(acc + ax_ftz(e + o));
            memcpy(ax_regs.t[c][m] + 4 * n, &acc, 4);
        }
}

/* TDPBSSD: signed bytes of a times signed bytes of b, four per dword, summed into int32 c
 * (wrapping, as the hardware) */
static inline void ax_dpbssd(int c, int a, int b) {
    const int M = ax_regs.rows[c], N = ax_regs.colsb[c] / 4, K = ax_regs.colsb[a] / 4;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            uint32_t acc;
            memcpy(&acc, ax_regs.t[c][m] + 4 * n, 4);
            for (int k = 0; k < K; k++)
                for (int i = 0; i < 4; i++)
                    acc += (uint32_t)((int32_t)(int8_t)ax_regs.t[a][m][4 * k + i] *
                                      (int32_t)(int8_t)ax_regs.t[b][k][4 * n + i]);
            memcpy(ax_regs.t[c][m] + 4 * n, &acc, 4);
        }
}

/* bf16 of b in elements 0..15, of a in 16..31 */
static inline __m512bh ax_cvtne2ps_pbh(__m512 a, __m512 b) {
    const __m512i w[2] = {bf16r_bits(b), bf16r_bits(a)};
    /* the high word of each dword: word 2i+1 of b for i < 16, of a (index bit 5) after */
    uint16_t ix[32];
    for (int i = 0; i < 32; i++) ix[i] = (uint16_t)(2 * i + 1);
    return (__m512bh)_mm512_permutex2var_epi16(w[0], _mm512_loadu_si512(ix), w[1]);
}

#undef _tile_loadconfig
#undef _tile_release
#undef _tile_zero
#undef _tile_loadd
#undef _tile_stored
#undef _tile_dpbf16ps
#undef _tile_dpbssd
#undef _mm512_cvtne2ps_pbh
#define _tile_loadconfig ax_loadconfig
#define _tile_release ax_release
#define _tile_zero(i) ax_zero(i)
#define _tile_loadd(i, base, stride) ax_loadd((i), (base), (size_t)(stride))
#define _tile_stored(i, base, stride) ax_stored((i), (base), (size_t)(stride))
#define _tile_dpbf16ps(c, a, b) ax_dpbf16ps((c), (a), (b))
#define _tile_dpbssd(c, a, b) ax_dpbssd((c), (a), (b))
#define _mm512_cvtne2ps_pbh ax_cvtne2ps_pbh

#endif
