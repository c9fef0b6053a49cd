/*
 * e4m3 codes as fp32 with AVX-512 BW, 64 at a time, without shuffles: shared by the avx512 matmul
 * instances (matmul_avx512.c) and the AMX one's FP8G conversion (matmul_amx.c). Include inside a
 * region compiled for AVX-512 (kernels/cpu/avx512_begin.h, which also brings the emulated
 * intrinsics of the test build, or matmul_amx.c's own), after the intrinsics.
 */
#ifndef HY_KERNELS_CPU_FP8X_AVX512_H
#define HY_KERNELS_CPU_FP8X_AVX512_H

/* 4·VL e4m3 bytes (one integer vector) -> fp32 of the values times 2^-120 in the quad order of
 * matmul_simd.inc: w[j] lane l is byte 4l+j. Each byte is moved to the top of a 16-bit half
 * and shifted right arithmetically by 4, which puts its exponent+mantissa at bits 26..20 of the
 * lane with the sign above (fp32 exponent field 0000eeee: subnormal codes become fp32
 * subnormals, exact; NaN codes read as ±480·2^-120); the AND keeps sign and those bits. Five
 * shifts and four ANDs per 64 codes, no shuffle: 29-30 GB/s from L2 on one Zen 4 core against
 * 26 for sign-extending 16 codes at a time (vpmovsxbd + shift + AND). */
static inline void vf_fp8x_quad(__m512i d, __m512 w[4]) {
    const __m512i m = _mm512_set1_epi32((int)0x87f00000u);
    const __m512i t = _mm512_srai_epi16(d, 4), u = _mm512_srai_epi16(_mm512_slli_epi16(d, 8), 4);
    w[0] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(u, 16), m));
    w[1] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(t, 16), m));
    w[2] = _mm512_castsi512_ps(_mm512_and_si512(u, m));
    w[3] = _mm512_castsi512_ps(_mm512_and_si512(t, m));
}
/* vf_fp8x_quad in two steps, for the FP8G tiles (which keep t and u, not four vectors):
 * column j of the 4 (lane l = byte 4l + j) from t and u */
static inline void vi_fp8x_tu(__m512i d, __m512i *t, __m512i *u) {
    *t = _mm512_srai_epi16(d, 4);
    *u = _mm512_srai_epi16(_mm512_slli_epi16(d, 8), 4);
}
static inline __m512 vf_fp8x_col(__m512i t, __m512i u, int j) {
    const __m512i s = j & 1 ? t : u;
    return _mm512_castsi512_ps(_mm512_and_si512(j < 2 ? _mm512_slli_epi32(s, 16) : s, _mm512_set1_epi32((int)0x87f00000u)));
}

/* vf_fp8x_col's codes as e4m3·2^-8 with no fp32 denormal. Why: an Intel core takes a microcode
 * assist of ~100 cycles for every multiply or FMA that reads a denormal (FTZ does not help), and
 * vf_fp8x_col makes one of every subnormal code: with 1e-4 of the codes subnormal (random
 * weights) FP8G's GEMM ran 1.35x slower, with 1.5e-3 (outlier blocks) 5x. The exponent field
 * raised by 112 (e + 112 < 128, so the add is an OR) is exact for e >= 1; a code of exponent 0
 * then reads (1 + m/8)·2^-15, and 2v - 2^-14, exact in both steps, is its value m·2^-17 (zero
 * for the zero codes, whose sign is lost: +0 and -0 add alike to a sum that starts at +0). The
 * NaN codes read ±480·2^-8, as vf_fp8x_col's ±480·2^-120. */
static inline __m512 vf_fp8x_col8(__m512i t, __m512i u, int j) {
    const __m512i s = j & 1 ? t : u;
    const __m512i b = _mm512_and_si512(j < 2 ? _mm512_slli_epi32(s, 16) : s, _mm512_set1_epi32((int)0x87f00000u));
    const __m512 v = _mm512_castsi512_ps(_mm512_add_epi32(b, _mm512_set1_epi32(112 << 23)));
    const __m512 c = _mm512_castsi512_ps(
        _mm512_add_epi32(_mm512_and_si512(b, _mm512_set1_epi32((int)0x80000000u)), _mm512_set1_epi32(113 << 23)));
    const __mmask16 e0 = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(0x1p-14f), _CMP_LT_OQ);
    return _mm512_add_ps(v, _mm512_maskz_mov_ps(e0, _mm512_sub_ps(v, c)));
}
/* Whether any of the 4·VL codes of d has exponent 0 (a subnormal, or a zero), where
 * vf_fp8x_col would make a denormal (or a zero): the tiles take vf_fp8x_col8 then. */
static inline bool vi_fp8x_e0(__m512i d) { return _mm512_testn_epi8_mask(d, _mm512_set1_epi8(0x78)) != 0; }

#endif
