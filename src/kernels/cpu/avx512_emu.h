/*
 * The AVX-512 intrinsics the avx512 tier uses, written as portable GCC vector code, for test
 * builds only (cmake -DHYLA_AVX512_EMU=ON, `make test-avx512emu`): machines without AVX-512
 * (CI's, and this project's Zen 3 ones) then run that tier's own tiling, tails, masks and
 * layouts against the scalar reference instead of skipping it. Never part of a release build:
 * the emulation is many times slower than the instructions.
 *
 * Included by kernels/cpu/avx512_begin.h inside a region compiled for AVX2+FMA+F16C; it includes
 * <immintrin.h> itself, then keeps the compiler's own __m512 / __m512i / __m512bh types (64-byte
 * GCC vectors), so the kernels' casts between them mean what they mean on hardware, and
 * redefines each intrinsic name the tier uses to a function here (an intrinsic the tier starts
 * using without an entry here fails to compile in that build: "target specific option
 * mismatch"). tests/kernels/test_avx512_emu.c checks every function against AVX2, against the
 * pseudocode, and on AVX-512 CPUs against the instructions. Semantics follow Intel's pseudocode, including the parts
 * the kernels' results depend on: round-to-nearest-even, MINPS/MAXPS's "second operand unless
 * a < b" (NaN), VDPBF16PS's two fused steps (odd pair first, denormals as zero), VCVTNEPS2BF16's
 * rounding (denormals as zero, NaN made quiet), GCC's reduction trees, and masked loads that
 * touch no byte outside their mask.
 */
#ifndef HY_KERNELS_CPU_AVX512_EMU_H
#define HY_KERNELS_CPU_AVX512_EMU_H

#if defined(__clang__)
#error "the AVX-512 emulation (HY_AVX512_EMU) is written for GCC's vector extensions"
#endif

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* 64-byte vectors are passed by value in a region without AVX-512, which GCC notes as an ABI
 * difference (-Wpsabi, turned off by the build option: the note has no line to silence it at).
 * Every function here is static and both sides of each call are compiled in this region, so
 * they agree. */

#define E5 static inline __attribute__((always_inline))
/* the lane-by-lane ones stay calls: inlined and unrolled at every use, they made the tier's
 * matmul file take minutes to compile */
#define E5N static __attribute__((noinline, unused))

typedef float e5_f32 __attribute__((vector_size(64), may_alias));
typedef int32_t e5_i32 __attribute__((vector_size(64), may_alias));
typedef uint32_t e5_u32 __attribute__((vector_size(64), may_alias));
typedef int16_t e5_i16 __attribute__((vector_size(64), may_alias));
typedef uint16_t e5_u16 __attribute__((vector_size(64), may_alias));
typedef int8_t e5_i8 __attribute__((vector_size(64), may_alias));
typedef uint8_t e5_u8 __attribute__((vector_size(64), may_alias));
typedef int64_t e5_i64 __attribute__((vector_size(64), may_alias));

E5 float e5_bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
E5 uint32_t e5_f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
/* denormals as zero (VDPBF16PS, VCVTNEPS2BF16) */
E5 float e5_daz(float f) { return (e5_f_bits(f) & 0x7f800000u) ? f : e5_bits_f(e5_f_bits(f) & 0x80000000u); }

/* ---- set, load, store ---- */
E5 __m512 e5_setzero_ps(void) { return (__m512)(e5_f32){0}; }
E5 __m512i e5_setzero_si512(void) { return (__m512i)(e5_i32){0}; }
E5 __m512 e5_set1_ps(float x) { return (__m512)((e5_f32){0} + x); }
E5 __m512i e5_set1_epi32(int x) { return (__m512i)((e5_i32){0} + x); }
E5 __m512i e5_set1_epi8(char x) { return (__m512i)((e5_i8){0} + (int8_t)x); }
E5 __m512i e5_set_epi32(int e15, int e14, int e13, int e12, int e11, int e10, int e9, int e8, int e7, int e6,
                        int e5, int e4, int e3, int e2, int e1, int e0) {
    return (__m512i)(e5_i32){e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15};
}
E5 __m512i e5_set_epi16(short e31, short e30, short e29, short e28, short e27, short e26, short e25, short e24,
                        short e23, short e22, short e21, short e20, short e19, short e18, short e17, short e16,
                        short e15, short e14, short e13, short e12, short e11, short e10, short e9, short e8,
                        short e7, short e6, short e5, short e4, short e3, short e2, short e1, short e0) {
    return (__m512i)(e5_i16){e0,  e1,  e2,  e3,  e4,  e5,  e6,  e7,  e8,  e9,  e10, e11, e12, e13, e14, e15,
                             e16, e17, e18, e19, e20, e21, e22, e23, e24, e25, e26, e27, e28, e29, e30, e31};
}
E5 __m512 e5_loadu_ps(const void *p) {
    __m512 v;
    memcpy(&v, p, 64);
    return v;
}
E5 __m512i e5_loadu_si512(const void *p) {
    __m512i v;
    memcpy(&v, p, 64);
    return v;
}
E5 void e5_storeu_ps(void *p, __m512 v) { memcpy(p, &v, 64); }
E5 void e5_storeu_si512(void *p, __m512i v) { memcpy(p, &v, 64); }
/* masked element copies: lanes outside the mask are zero and their memory is not read */
#define E5_MASKZ_LOAD(n, esz, m, p, out)                                                                  \
    do {                                                                                                  \
        unsigned char *o_ = (unsigned char *)(out);                                                       \
        memset(o_, 0, (size_t)(n) * (esz));                                                               \
        for (int i_ = 0; i_ < (n); i_++)                                                                  \
            if (((m) >> i_) & 1) memcpy(o_ + (size_t)i_ * (esz), (const unsigned char *)(p) + (size_t)i_ * (esz), (esz)); \
    } while (0)
#define E5_MASK_STORE(n, esz, m, p, v)                                                                    \
    do {                                                                                                  \
        const unsigned char *s_ = (const unsigned char *)(v);                                             \
        for (int i_ = 0; i_ < (n); i_++)                                                                  \
            if (((m) >> i_) & 1) memcpy((unsigned char *)(p) + (size_t)i_ * (esz), s_ + (size_t)i_ * (esz), (esz)); \
    } while (0)
E5N __m512 e5_maskz_loadu_ps(__mmask16 m, const void *p) {
    __m512 v;
    E5_MASKZ_LOAD(16, 4, (unsigned)m, p, &v);
    return v;
}
E5N void e5_mask_storeu_ps(void *p, __mmask16 m, __m512 v) { E5_MASK_STORE(16, 4, (unsigned)m, p, &v); }
E5N __m512i e5_maskz_loadu_epi16(__mmask32 m, const void *p) {
    __m512i v;
    E5_MASKZ_LOAD(32, 2, (uint32_t)m, p, &v);
    return v;
}
E5N void e5_mask_storeu_epi16(void *p, __mmask32 m, __m512i v) { E5_MASK_STORE(32, 2, (uint32_t)m, p, &v); }
E5N __m512i e5_maskz_loadu_epi8(__mmask64 m, const void *p) {
    __m512i v;
    E5_MASKZ_LOAD(64, 1, (uint64_t)m, p, &v);
    return v;
}
E5N __m256i e5_256_maskz_loadu_epi16(__mmask16 m, const void *p) {
    __m256i v;
    E5_MASKZ_LOAD(16, 2, (unsigned)m, p, &v);
    return v;
}
E5N __m128i e5_128_maskz_loadu_epi8(__mmask16 m, const void *p) {
    __m128i v;
    E5_MASKZ_LOAD(16, 1, (unsigned)m, p, &v);
    return v;
}

/* ---- fp32 arithmetic ---- */
E5 __m512 e5_add_ps(__m512 a, __m512 b) { return (__m512)((e5_f32)a + (e5_f32)b); }
E5 __m512 e5_sub_ps(__m512 a, __m512 b) { return (__m512)((e5_f32)a - (e5_f32)b); }
E5 __m512 e5_mul_ps(__m512 a, __m512 b) { return (__m512)((e5_f32)a * (e5_f32)b); }
E5 __m512 e5_div_ps(__m512 a, __m512 b) { return (__m512)((e5_f32)a / (e5_f32)b); }
E5 __m512 e5_min_ps(__m512 a, __m512 b) {
    e5_f32 x = (e5_f32)a;
    const e5_f32 y = (e5_f32)b;
    for (int i = 0; i < 16; i++) x[i] = x[i] < y[i] ? x[i] : y[i];
    return (__m512)x;
}
E5 __m512 e5_max_ps(__m512 a, __m512 b) {
    e5_f32 x = (e5_f32)a;
    const e5_f32 y = (e5_f32)b;
    for (int i = 0; i < 16; i++) x[i] = x[i] > y[i] ? x[i] : y[i];
    return (__m512)x;
}
/* fused, one rounding: two AVX2 FMAs */
E5 __m512 e5_fmadd_ps(__m512 a, __m512 b, __m512 c) {
    __m256 a2[2], b2[2], c2[2];
    memcpy(a2, &a, 64);
    memcpy(b2, &b, 64);
    memcpy(c2, &c, 64);
    for (int h = 0; h < 2; h++) c2[h] = _mm256_fmadd_ps(a2[h], b2[h], c2[h]);
    __m512 r;
    memcpy(&r, c2, 64);
    return r;
}
E5 __m512 e5_fnmadd_ps(__m512 a, __m512 b, __m512 c) {
    __m256 a2[2], b2[2], c2[2];
    memcpy(a2, &a, 64);
    memcpy(b2, &b, 64);
    memcpy(c2, &c, 64);
    for (int h = 0; h < 2; h++) c2[h] = _mm256_fnmadd_ps(a2[h], b2[h], c2[h]);
    __m512 r;
    memcpy(&r, c2, 64);
    return r;
}
E5 __m512 e5_abs_ps(__m512 a) { return (__m512)((e5_u32)a & 0x7fffffffu); }
/* only the immediates the kernels use: round to an integer, nearest even, no scaling */
E5N __m512 e5_roundscale_ps(__m512 a, int imm) {
    e5_f32 r = (e5_f32)a;
    if ((imm & 0xf3) != _MM_FROUND_TO_NEAREST_INT) __builtin_trap();
    for (int i = 0; i < 16; i++) r[i] = nearbyintf(r[i]);
    return (__m512)r;
}
/* a · 2^floor(b) */
E5N __m512 e5_scalef_ps(__m512 a, __m512 b) {
    e5_f32 r = (e5_f32)a;
    const e5_f32 y = (e5_f32)b;
    for (int i = 0; i < 16; i++) {
        if (isnan(r[i]) || isnan(y[i])) {
            r[i] = r[i] + y[i];
        } else if (isinf(y[i])) {
            const bool bad = y[i] > 0 ? r[i] == 0 : isinf(r[i]);
            r[i] = bad ? NAN : (y[i] > 0 ? r[i] * INFINITY : copysignf(0.0f, r[i]));
        } else {
            const float e = floorf(y[i]);
            r[i] = ldexpf(r[i], e > 1000.0f ? 1000 : e < -1000.0f ? -1000 : (int)e);
        }
    }
    return (__m512)r;
}
E5N __mmask16 e5_cmp_ps_mask(__m512 a, __m512 b, int pred) {
    const e5_f32 x = (e5_f32)a, y = (e5_f32)b;
    unsigned m = 0;
    for (int i = 0; i < 16; i++) {
        const bool un = isnan(x[i]) || isnan(y[i]);
        bool r;
        switch (pred & 15) {
        case 0: r = !un && x[i] == y[i]; break;
        case 1: r = !un && x[i] < y[i]; break;
        case 2: r = !un && x[i] <= y[i]; break;
        case 3: r = un; break;
        case 4: r = un || x[i] != y[i]; break;
        case 5: r = un || !(x[i] < y[i]); break;
        case 6: r = un || !(x[i] <= y[i]); break;
        case 7: r = !un; break;
        case 8: r = un || x[i] == y[i]; break;
        case 9: r = un || x[i] < y[i]; break;
        case 10: r = un || x[i] <= y[i]; break;
        case 11: r = false; break;
        case 12: r = !un && x[i] != y[i]; break;
        case 13: r = !un && x[i] >= y[i]; break;
        case 14: r = !un && x[i] > y[i]; break;
        default: r = true; break;
        }
        m |= (unsigned)r << i;
    }
    return (__mmask16)m;
}
E5N __m512 e5_maskz_mov_ps(__mmask16 m, __m512 a) {
    e5_f32 r = (e5_f32)a;
    for (int i = 0; i < 16; i++)
        if (!((m >> i) & 1)) r[i] = 0.0f;
    return (__m512)r;
}
E5N __mmask64 e5_testn_epi8_mask(__m512i a, __m512i b) {
    const e5_u8 x = (e5_u8)a, y = (e5_u8)b;
    uint64_t m = 0;
    for (int i = 0; i < 64; i++) m |= (uint64_t)((x[i] & y[i]) == 0) << i;
    return (__mmask64)m;
}
E5N __mmask16 e5_cmpeq_epi16_mask256(__m256i a, __m256i b) {
    int16_t x[16], y[16];
    memcpy(x, &a, 32);
    memcpy(y, &b, 32);
    unsigned m = 0;
    for (int i = 0; i < 16; i++) m |= (unsigned)(x[i] == y[i]) << i;
    return (__mmask16)m;
}
E5N __m512 e5_mask_mul_ps(__m512 src, __mmask16 k, __m512 a, __m512 b) {
    e5_f32 r = (e5_f32)src;
    const e5_f32 x = (e5_f32)a, y = (e5_f32)b;
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1) r[i] = x[i] * y[i];
    return (__m512)r;
}
/* GCC's trees (avx512fintrin.h): 256-bit halves (high op low), 128-bit halves, then {2,3,0,1} */
E5N float e5_reduce_add_ps(__m512 a) {
    const e5_f32 v = (e5_f32)a;
    float t3[8], t6[4], t8[4];
    for (int i = 0; i < 8; i++) t3[i] = v[8 + i] + v[i];
    for (int i = 0; i < 4; i++) t6[i] = t3[4 + i] + t3[i];
    for (int i = 0; i < 4; i++) t8[i] = t6[i] + t6[i ^ 2];
    return t8[0] + t8[1];
}
E5 float e5_maxf(float x, float y) { return x > y ? x : y; }
E5N float e5_reduce_max_ps(__m512 a) {
    const e5_f32 v = (e5_f32)a;
    float t3[8], t6[4], t8[4];
    for (int i = 0; i < 8; i++) t3[i] = e5_maxf(v[8 + i], v[i]);
    for (int i = 0; i < 4; i++) t6[i] = e5_maxf(t3[4 + i], t3[i]);
    for (int i = 0; i < 4; i++) t8[i] = e5_maxf(t6[i], t6[i ^ 2]);
    return e5_maxf(t8[0], t8[1]);
}
E5N int e5_reduce_add_epi32(__m512i a) {
    const e5_u32 v = (e5_u32)a;
    uint32_t s = 0;
    for (int i = 0; i < 16; i++) s += v[i];
    return (int)s;
}

/* ---- casts, lanes, shuffles ---- */
E5 __m512 e5_castsi512_ps(__m512i a) { return (__m512)a; }
E5 __m256 e5_castps512_ps256(__m512 a) {
    __m256 r;
    memcpy(&r, &a, 32);
    return r;
}
E5 __m512i e5_castsi256_si512(__m256i a) {
    __m512i r = e5_setzero_si512();
    memcpy(&r, &a, 32);
    return r;
}
E5 __m256 e5_extractf32x8_ps(__m512 a, int imm) {
    __m256 r;
    memcpy(&r, (const char *)&a + 32 * (imm & 1), 32);
    return r;
}
E5 __m512 e5_insertf32x8(__m512 a, __m256 b, int imm) {
    memcpy((char *)&a + 32 * (imm & 1), &b, 32);
    return a;
}
/* 128-bit blocks: two of a (imm bits 1:0, 3:2), then two of b (5:4, 7:6) */
E5N __m512i e5_shuffle_i32x4(__m512i a, __m512i b, int imm) {
    __m512i r;
    for (int j = 0; j < 4; j++) memcpy((char *)&r + 16 * j, (const char *)(j < 2 ? &a : &b) + 16 * ((imm >> 2 * j) & 3), 16);
    return r;
}
E5 __m512 e5_shuffle_f32x4(__m512 a, __m512 b, int imm) {
    return (__m512)e5_shuffle_i32x4((__m512i)a, (__m512i)b, imm);
}
/* in each 128-bit lane: a[imm 1:0], a[3:2], b[5:4], b[7:6] */
E5N __m512 e5_shuffle_ps(__m512 a, __m512 b, int imm) {
    const e5_f32 x = (e5_f32)a, y = (e5_f32)b;
    e5_f32 r;
    for (int l = 0; l < 16; l += 4) {
        r[l + 0] = x[l + (imm & 3)];
        r[l + 1] = x[l + ((imm >> 2) & 3)];
        r[l + 2] = y[l + ((imm >> 4) & 3)];
        r[l + 3] = y[l + ((imm >> 6) & 3)];
    }
    return (__m512)r;
}
E5N __m512 e5_permutex2var_ps(__m512 a, __m512i idx, __m512 b) {
    const e5_f32 x = (e5_f32)a, y = (e5_f32)b;
    const e5_i32 k = (e5_i32)idx;
    e5_f32 r;
    for (int i = 0; i < 16; i++) r[i] = (k[i] & 16) ? y[k[i] & 15] : x[k[i] & 15];
    return (__m512)r;
}
E5N __m512i e5_maskz_permutexvar_epi16(__mmask32 m, __m512i idx, __m512i a) {
    const e5_u16 x = (e5_u16)a, k = (e5_u16)idx;
    e5_u16 r;
    for (int i = 0; i < 32; i++) r[i] = ((m >> i) & 1) ? x[k[i] & 31] : 0;
    return (__m512i)r;
}
/* within each 128-bit lane */
E5N __m512i e5_unpack_epi32(__m512i a, __m512i b, int hi) {
    const e5_i32 x = (e5_i32)a, y = (e5_i32)b;
    e5_i32 r;
    for (int l = 0; l < 16; l += 4) {
        r[l + 0] = x[l + 2 * hi];
        r[l + 1] = y[l + 2 * hi];
        r[l + 2] = x[l + 2 * hi + 1];
        r[l + 3] = y[l + 2 * hi + 1];
    }
    return (__m512i)r;
}
E5 __m512i e5_unpacklo_epi32(__m512i a, __m512i b) { return e5_unpack_epi32(a, b, 0); }
E5 __m512i e5_unpackhi_epi32(__m512i a, __m512i b) { return e5_unpack_epi32(a, b, 1); }
E5N __m512i e5_unpack_epi64(__m512i a, __m512i b, int hi) {
    const e5_i64 x = (e5_i64)a, y = (e5_i64)b;
    e5_i64 r;
    for (int l = 0; l < 8; l += 2) {
        r[l] = x[l + hi];
        r[l + 1] = y[l + hi];
    }
    return (__m512i)r;
}
E5 __m512i e5_unpacklo_epi64(__m512i a, __m512i b) { return e5_unpack_epi64(a, b, 0); }
E5 __m512i e5_unpackhi_epi64(__m512i a, __m512i b) { return e5_unpack_epi64(a, b, 1); }

/* ---- integers ---- */
E5 __m512i e5_and_si512(__m512i a, __m512i b) { return (__m512i)((e5_i32)a & (e5_i32)b); }
E5 __m512i e5_add_epi32(__m512i a, __m512i b) { return (__m512i)((e5_u32)a + (e5_u32)b); }
E5 __m512i e5_min_epi32(__m512i a, __m512i b) {
    e5_i32 x = (e5_i32)a;
    const e5_i32 y = (e5_i32)b;
    for (int i = 0; i < 16; i++) x[i] = x[i] < y[i] ? x[i] : y[i];
    return (__m512i)x;
}
E5 __m512i e5_max_epi32(__m512i a, __m512i b) {
    e5_i32 x = (e5_i32)a;
    const e5_i32 y = (e5_i32)b;
    for (int i = 0; i < 16; i++) x[i] = x[i] > y[i] ? x[i] : y[i];
    return (__m512i)x;
}
E5 __m512i e5_slli_epi32(__m512i a, unsigned n) {
    return n > 31 ? e5_setzero_si512() : (__m512i)((e5_u32)a << (int)n);
}
E5 __m512i e5_slli_epi16(__m512i a, unsigned n) {
    return n > 15 ? e5_setzero_si512() : (__m512i)((e5_u16)a << (int)n);
}
E5 __m512i e5_srli_epi16(__m512i a, unsigned n) {
    return n > 15 ? e5_setzero_si512() : (__m512i)((e5_u16)a >> (int)n);
}
E5 __m512i e5_srai_epi16(__m512i a, unsigned n) { return (__m512i)((e5_i16)a >> (int)(n > 15 ? 15 : n)); }
/* VPDPBUSD: unsigned bytes of a times signed bytes of b, four per lane, added without saturation
 * (byte j of every lane at once, as 32-bit lanes: a zero-extended, b sign-extended) */
E5 __m512i e5_dpbusd_epi32(__m512i src, __m512i a, __m512i b) {
    const e5_u32 x = (e5_u32)a, y = (e5_u32)b;
    e5_u32 r = (e5_u32)src;
    for (int j = 0; j < 4; j++)
        r += (e5_u32)((e5_i32)((x >> (8 * j)) & 0xffu) * ((e5_i32)(y << (24 - 8 * j)) >> 24));
    return (__m512i)r;
}

/* ---- conversions ---- */
E5N __m512i e5_cvtepu16_epi32(__m256i a) {
    uint16_t h[16];
    memcpy(h, &a, 32);
    e5_i32 r;
    for (int i = 0; i < 16; i++) r[i] = h[i];
    return (__m512i)r;
}
/* fp16 -> fp32 is exact: F16C does it, 8 lanes at a time */
E5 __m512 e5_cvtph_ps(__m256i a) {
    __m128i h[2];
    memcpy(h, &a, 32);
    __m256 f[2] = {_mm256_cvtph_ps(h[0]), _mm256_cvtph_ps(h[1])};
    __m512 r;
    memcpy(&r, f, 64);
    return r;
}
E5N __m512 e5_cvtepi32_ps(__m512i a) {
    const e5_i32 x = (e5_i32)a;
    e5_f32 r;
    for (int i = 0; i < 16; i++) r[i] = (float)x[i];
    return (__m512)r;
}
/* nearest even; NaN and out-of-range give INT32_MIN ("integer indefinite") */
E5N __m512i e5_cvtps_epi32(__m512 a) {
    const e5_f32 x = (e5_f32)a;
    e5_i32 r;
    for (int i = 0; i < 16; i++) {
        const float v = nearbyintf(x[i]);
        r[i] = (v >= -2147483648.0f && v < 2147483648.0f) ? (int32_t)v : INT32_MIN;
    }
    return (__m512i)r;
}
/* VPMOVDB: the low byte of each lane */
E5N __m128i e5_cvtepi32_epi8(__m512i a) {
    const e5_i32 x = (e5_i32)a;
    int8_t b[16];
    for (int i = 0; i < 16; i++) b[i] = (int8_t)(uint8_t)(x[i] & 0xff);
    __m128i r;
    memcpy(&r, b, 16);
    return r;
}
E5 uint16_t e5_bf16_rne(float f) {
    const uint32_t u = e5_f_bits(e5_daz(f));
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
/* bf16 of b in elements 0..15, of a in 16..31 */
E5N __m512bh e5_cvtne2ps_pbh(__m512 a, __m512 b) {
    const e5_f32 x = (e5_f32)a, y = (e5_f32)b;
    e5_u16 r;
    for (int i = 0; i < 16; i++) {
        r[i] = e5_bf16_rne(y[i]);
        r[16 + i] = e5_bf16_rne(x[i]);
    }
    return (__m512bh)r;
}
E5N __m256bh e5_cvtneps_pbh(__m512 a) {
    const e5_f32 x = (e5_f32)a;
    uint16_t h[16];
    for (int i = 0; i < 16; i++) h[i] = e5_bf16_rne(x[i]);
    __m256bh r;
    memcpy(&r, h, 32);
    return r;
}
/* VDPBF16PS: two fused multiply-adds per lane, the odd pair first, each rounded to nearest even,
 * with denormal inputs as zero and denormal results flushed (Intel's pseudocode: "FP32 FMA with
 * daz in, ftz out and RNE rounding") */
E5 e5_f32 e5_daz_v(e5_f32 v) { return (e5_f32)((e5_i32)v & ~((((e5_i32)v & 0x7f800000) == 0) & 0x7fffffff)); }
E5 __m512 e5_dpbf16_ps(__m512 src, __m512bh a, __m512bh b) {
    const e5_u32 x = (e5_u32)a, y = (e5_u32)b;
    const e5_f32 xo = e5_daz_v((e5_f32)(x & 0xffff0000u)), yo = e5_daz_v((e5_f32)(y & 0xffff0000u));
    const e5_f32 xe = e5_daz_v((e5_f32)(x << 16)), ye = e5_daz_v((e5_f32)(y << 16));
    e5_f32 acc = e5_daz_v((e5_f32)e5_fmadd_ps((__m512)xo, (__m512)yo, (__m512)e5_daz_v((e5_f32)src)));
    acc = e5_daz_v((e5_f32)e5_fmadd_ps((__m512)xe, (__m512)ye, (__m512)acc));
    return (__m512)acc;
}

/* the kernels' spellings -> the functions above */
#undef _mm512_setzero_ps
#define _mm512_setzero_ps e5_setzero_ps
#undef _mm512_setzero_si512
#define _mm512_setzero_si512 e5_setzero_si512
#undef _mm512_set1_ps
#define _mm512_set1_ps e5_set1_ps
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 e5_set1_epi32
#undef _mm512_set1_epi8
#define _mm512_set1_epi8 e5_set1_epi8
#undef _mm512_set_epi32
#define _mm512_set_epi32 e5_set_epi32
#undef _mm512_set_epi16
#define _mm512_set_epi16 e5_set_epi16
#undef _mm512_loadu_ps
#define _mm512_loadu_ps e5_loadu_ps
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 e5_loadu_si512
#undef _mm512_storeu_ps
#define _mm512_storeu_ps e5_storeu_ps
#undef _mm512_storeu_si512
#define _mm512_storeu_si512 e5_storeu_si512
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps e5_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps e5_mask_storeu_ps
#undef _mm512_maskz_loadu_epi16
#define _mm512_maskz_loadu_epi16 e5_maskz_loadu_epi16
#undef _mm512_mask_storeu_epi16
#define _mm512_mask_storeu_epi16 e5_mask_storeu_epi16
#undef _mm512_maskz_loadu_epi8
#define _mm512_maskz_loadu_epi8 e5_maskz_loadu_epi8
#undef _mm256_maskz_loadu_epi16
#define _mm256_maskz_loadu_epi16 e5_256_maskz_loadu_epi16
#undef _mm_maskz_loadu_epi8
#define _mm_maskz_loadu_epi8 e5_128_maskz_loadu_epi8
#undef _mm512_add_ps
#define _mm512_add_ps e5_add_ps
#undef _mm512_sub_ps
#define _mm512_sub_ps e5_sub_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps e5_mul_ps
#undef _mm512_div_ps
#define _mm512_div_ps e5_div_ps
#undef _mm512_min_ps
#define _mm512_min_ps e5_min_ps
#undef _mm512_max_ps
#define _mm512_max_ps e5_max_ps
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps e5_fmadd_ps
#undef _mm512_fnmadd_ps
#define _mm512_fnmadd_ps e5_fnmadd_ps
#undef _mm512_abs_ps
#define _mm512_abs_ps e5_abs_ps
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps e5_roundscale_ps
#undef _mm512_scalef_ps
#define _mm512_scalef_ps e5_scalef_ps
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask e5_cmp_ps_mask
#undef _mm512_maskz_mov_ps
#define _mm512_maskz_mov_ps e5_maskz_mov_ps
#undef _mm512_mask_mul_ps
#define _mm512_mask_mul_ps e5_mask_mul_ps
#undef _mm512_testn_epi8_mask
#define _mm512_testn_epi8_mask e5_testn_epi8_mask
#undef _mm256_cmpeq_epi16_mask
#define _mm256_cmpeq_epi16_mask e5_cmpeq_epi16_mask256
#undef _mm512_reduce_add_ps
#define _mm512_reduce_add_ps e5_reduce_add_ps
#undef _mm512_reduce_max_ps
#define _mm512_reduce_max_ps e5_reduce_max_ps
#undef _mm512_reduce_add_epi32
#define _mm512_reduce_add_epi32 e5_reduce_add_epi32
#undef _mm512_castsi512_ps
#define _mm512_castsi512_ps e5_castsi512_ps
#undef _mm512_castps512_ps256
#define _mm512_castps512_ps256 e5_castps512_ps256
#undef _mm512_castsi256_si512
#define _mm512_castsi256_si512 e5_castsi256_si512
#undef _mm512_extractf32x8_ps
#define _mm512_extractf32x8_ps e5_extractf32x8_ps
#undef _mm512_insertf32x8
#define _mm512_insertf32x8 e5_insertf32x8
#undef _mm512_shuffle_i32x4
#define _mm512_shuffle_i32x4 e5_shuffle_i32x4
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4 e5_shuffle_f32x4
#undef _mm512_shuffle_ps
#define _mm512_shuffle_ps e5_shuffle_ps
#undef _mm512_permutex2var_ps
#define _mm512_permutex2var_ps e5_permutex2var_ps
#undef _mm512_maskz_permutexvar_epi16
#define _mm512_maskz_permutexvar_epi16 e5_maskz_permutexvar_epi16
#undef _mm512_unpacklo_epi32
#define _mm512_unpacklo_epi32 e5_unpacklo_epi32
#undef _mm512_unpackhi_epi32
#define _mm512_unpackhi_epi32 e5_unpackhi_epi32
#undef _mm512_unpacklo_epi64
#define _mm512_unpacklo_epi64 e5_unpacklo_epi64
#undef _mm512_unpackhi_epi64
#define _mm512_unpackhi_epi64 e5_unpackhi_epi64
#undef _mm512_and_si512
#define _mm512_and_si512 e5_and_si512
#undef _mm512_add_epi32
#define _mm512_add_epi32 e5_add_epi32
#undef _mm512_min_epi32
#define _mm512_min_epi32 e5_min_epi32
#undef _mm512_max_epi32
#define _mm512_max_epi32 e5_max_epi32
#undef _mm512_slli_epi32
#define _mm512_slli_epi32 e5_slli_epi32
#undef _mm512_slli_epi16
#define _mm512_slli_epi16 e5_slli_epi16
#undef _mm512_srli_epi16
#define _mm512_srli_epi16 e5_srli_epi16
#undef _mm512_srai_epi16
#define _mm512_srai_epi16 e5_srai_epi16
#undef _mm512_dpbusd_epi32
#define _mm512_dpbusd_epi32 e5_dpbusd_epi32
#undef _mm512_cvtepu16_epi32
#define _mm512_cvtepu16_epi32 e5_cvtepu16_epi32
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps e5_cvtph_ps
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps e5_cvtepi32_ps
#undef _mm512_cvtps_epi32
#define _mm512_cvtps_epi32 e5_cvtps_epi32
#undef _mm512_cvtepi32_epi8
#define _mm512_cvtepi32_epi8 e5_cvtepi32_epi8
#undef _mm512_cvtne2ps_pbh
#define _mm512_cvtne2ps_pbh e5_cvtne2ps_pbh
#undef _mm512_cvtneps_pbh
#define _mm512_cvtneps_pbh e5_cvtneps_pbh
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps e5_dpbf16_ps

#endif
