/*
 * VCVTNEPS2BF16's rounding written in AVX-512 F integer code, for code that must run where the
 * CPU lacks AVX512_BF16 (matmul_avx512_nobf16.c's vf_round_bf16; amx_tile_emu.h's emulated
 * vcvtne2ps2bf16). Include it inside a region compiled for AVX-512 F. No state.
 */
#ifndef HY_KERNELS_CPU_BF16R_AVX512_H
#define HY_KERNELS_CPU_BF16R_AVX512_H

#include <immintrin.h>

/* v rounded to bf16 as fp32 bit patterns (low 16 bits zero): denormals to signed zero, NaNs
 * quieted, the rest to the nearest bf16 value, ties to even */
static inline __m512i bf16r_bits(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 den = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd);
    r = _mm512_mask_mov_epi32(r, den, _mm512_and_si512(u, _mm512_set1_epi32((int)0x80000000u)));
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
    return _mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u));
}

#endif
