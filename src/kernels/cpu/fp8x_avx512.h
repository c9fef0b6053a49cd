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

#endif
