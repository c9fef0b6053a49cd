/* kernels/cpu/avx512_emu.h: the emulation of the AVX-512 intrinsics, through which machines
 * without AVX-512 run the avx512 tier's tests (make test-avx512emu), checked intrinsic by
 * intrinsic so that a pass there means the tier's code, not the emulation, is right:
 *  - against AVX2 (two 256-bit instructions) wherever AVX-512's operation is lane-local or
 *    128-bit-lane-local with an AVX2 twin: arithmetic (NaN, ±0, denormals, overflow), FMA,
 *    rounding, comparison predicates, in-lane shuffles and unpacks, shifts, conversions;
 *  - against Intel's pseudocode written as scalar C for the rest: cross-lane permutes and
 *    shuffles, VPDPBUSD, VDPBF16PS (fused, odd pair first, denormals as zero), VCVTNE(2)PS2BF16
 *    (ties to even, quiet NaN), VPMOVDB, VSCALEFPS, GCC's reduction trees, masked loads;
 *  - on a CPU with AVX-512 F/BW/DQ/VL/BF16/VNNI, also against the instructions themselves;
 *  - masked loads that end at an unmapped page fault on no lane outside their mask.
 * Inputs: 3,000 random draws per intrinsic with specials mixed in; outputs must agree bit for
 * bit (NaN against any NaN). GCC only (the emulation uses its vector extensions); skipped
 * elsewhere and on CPUs without AVX2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/cpu.h"


#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
/* before any target region: each intrinsic then carries its own target, not a region's */
#include <immintrin.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(__clang__)

typedef void (*op_fn)(void *r, const void *a, const void *b, const void *c);

/* Inputs: KF floats with specials, KI random bits, KS scalef (floats; exponents), KB dpbf16
 * (floats; bf16 pairs), KP permutexvar_epi16 (indices; data; mask). */
enum { KF, KI, KS, KB, KP };
/* Outputs compared as fp32 lanes (NaN matches NaN) or as bytes. */
enum { OF, OB };

/* One op per intrinsic and immediate the kernels use, written once with the intrinsics'
 * names: instantiated for the hardware before avx512_emu.h renames them, and after it for the
 * emulation. X(name, input kind, output kind, output bytes, body). */
#define LOADS                                                                                                 \
    __m512 FA, FB, FC;                                                                                       \
    __m512i IA, IB, IC;                                                                                      \
    memcpy(&FA, a_, 64);                                                                                     \
    memcpy(&FB, b_, 64);                                                                                     \
    memcpy(&FC, c_, 64);                                                                                     \
    memcpy(&IA, a_, 64);                                                                                     \
    memcpy(&IB, b_, 64);                                                                                     \
    memcpy(&IC, c_, 64);                                                                                     \
    uint64_t M64;                                                                                            \
    memcpy(&M64, c_, 8);                                                                                     \
    (void)FA, (void)FB, (void)FC, (void)IA, (void)IB, (void)IC, (void)M64;
#define PUT(v)                                                                                                \
    do {                                                                                                     \
        const __typeof__(v) v_ = (v);                                                                        \
        memcpy(r_, &v_, sizeof v_);                                                                          \
    } while (0)
#define LO256(v) _mm512_castsi512_si256(v)

#define OPS(X)                                                                                                \
    X(add_ps, KF, OF, 64, PUT(_mm512_add_ps(FA, FB)))                                                         \
    X(sub_ps, KF, OF, 64, PUT(_mm512_sub_ps(FA, FB)))                                                         \
    X(mul_ps, KF, OF, 64, PUT(_mm512_mul_ps(FA, FB)))                                                         \
    X(div_ps, KF, OF, 64, PUT(_mm512_div_ps(FA, FB)))                                                         \
    X(min_ps, KF, OB, 64, PUT(_mm512_min_ps(FA, FB)))                                                         \
    X(max_ps, KF, OB, 64, PUT(_mm512_max_ps(FA, FB)))                                                         \
    X(fmadd_ps, KF, OF, 64, PUT(_mm512_fmadd_ps(FA, FB, FC)))                                                 \
    X(fnmadd_ps, KF, OF, 64, PUT(_mm512_fnmadd_ps(FA, FB, FC)))                                               \
    X(abs_ps, KF, OB, 64, PUT(_mm512_abs_ps(FA)))                                                             \
    X(roundscale_ps, KF, OF, 64, PUT(_mm512_roundscale_ps(FA, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))) \
    X(scalef_ps, KS, OF, 64, PUT(_mm512_scalef_ps(FA, FB)))                                                   \
    X(cmp_eq_oq, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_EQ_OQ)))                                      \
    X(cmp_lt_os, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_LT_OS)))                                      \
    X(cmp_le_oq, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_LE_OQ)))                                      \
    X(cmp_unord_q, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_UNORD_Q)))                                  \
    X(cmp_neq_uq, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_NEQ_UQ)))                                    \
    X(cmp_nlt_uq, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_NLT_UQ)))                                    \
    X(cmp_gt_oq, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_GT_OQ)))                                      \
    X(cmp_ord_q, KF, OB, 2, PUT(_mm512_cmp_ps_mask(FA, FB, _CMP_ORD_Q)))                                      \
    X(maskz_mov_ps, KF, OB, 64, PUT(_mm512_maskz_mov_ps((__mmask16)M64, FA)))                                 \
    X(testn_epi8_mask, KI, OB, 8, PUT(_mm512_testn_epi8_mask(IA, IB)))                                        \
    X(mask_mul_ps, KF, OF, 64, PUT(_mm512_mask_mul_ps(FC, (__mmask16)M64, FA, FB)))                           \
    /* half the lanes equal: a against a with b's low bit of each lane flipped in */                            \
    X(cmpeq_epi16_mask_256, KI, OB, 2,                                                                        \
      PUT(_mm256_cmpeq_epi16_mask(LO256(IA), _mm256_xor_si256(LO256(IA), _mm256_and_si256(LO256(IB), _mm256_set1_epi16(1)))))) \
    X(reduce_add_ps, KF, OF, 4, PUT(_mm512_reduce_add_ps(FA)))                                                \
    X(reduce_max_ps, KF, OF, 4, PUT(_mm512_reduce_max_ps(FA)))                                                \
    X(reduce_add_epi32, KI, OB, 4, int32_t t_[16]; memcpy(t_, a_, 64); for (int i_ = 0; i_ < 16; i_++) t_[i_] >>= 5; \
      memcpy(&IA, t_, 64); PUT(_mm512_reduce_add_epi32(IA)))                                                  \
    X(castps512_ps256, KF, OB, 32, PUT(_mm512_castps512_ps256(FA)))                                           \
    X(extractf32x8_0, KF, OB, 32, PUT(_mm512_extractf32x8_ps(FA, 0)))                                         \
    X(extractf32x8_1, KF, OB, 32, PUT(_mm512_extractf32x8_ps(FA, 1)))                                         \
    X(insertf32x8_0, KF, OB, 64, PUT(_mm512_insertf32x8(FA, _mm512_castps512_ps256(FB), 0)))                  \
    X(insertf32x8_1, KF, OB, 64, PUT(_mm512_insertf32x8(FA, _mm512_castps512_ps256(FB), 1)))                  \
    /* the upper half is undefined on hardware: only the lower one is compared */                             \
    X(castsi256_si512, KI, OB, 32, PUT(_mm512_castsi256_si512(LO256(IA))))                                    \
    X(shuffle_i32x4_88, KI, OB, 64, PUT(_mm512_shuffle_i32x4(IA, IB, 0x88)))                                  \
    X(shuffle_i32x4_dd, KI, OB, 64, PUT(_mm512_shuffle_i32x4(IA, IB, 0xdd)))                                  \
    X(shuffle_f32x4_44, KF, OB, 64, PUT(_mm512_shuffle_f32x4(FA, FB, 0x44)))                                  \
    X(shuffle_f32x4_ee, KF, OB, 64, PUT(_mm512_shuffle_f32x4(FA, FB, 0xee)))                                  \
    X(shuffle_f32x4_88, KF, OB, 64, PUT(_mm512_shuffle_f32x4(FA, FB, 0x88)))                                  \
    X(shuffle_f32x4_dd, KF, OB, 64, PUT(_mm512_shuffle_f32x4(FA, FB, 0xdd)))                                  \
    X(shuffle_ps_88, KF, OB, 64, PUT(_mm512_shuffle_ps(FA, FB, 0x88)))                                        \
    X(shuffle_ps_dd, KF, OB, 64, PUT(_mm512_shuffle_ps(FA, FB, 0xdd)))                                        \
    X(shuffle_ps_1b, KF, OB, 64, PUT(_mm512_shuffle_ps(FA, FB, 0x1b)))                                        \
    X(permutex2var_ps, KF, OB, 64, PUT(_mm512_permutex2var_ps(FA, IC, FB)))                                   \
    X(maskz_permutexvar_epi16, KP, OB, 64, PUT(_mm512_maskz_permutexvar_epi16((__mmask32)M64, IA, IB)))       \
    X(unpacklo_epi32, KI, OB, 64, PUT(_mm512_unpacklo_epi32(IA, IB)))                                         \
    X(unpackhi_epi32, KI, OB, 64, PUT(_mm512_unpackhi_epi32(IA, IB)))                                         \
    X(unpacklo_epi64, KI, OB, 64, PUT(_mm512_unpacklo_epi64(IA, IB)))                                         \
    X(unpackhi_epi64, KI, OB, 64, PUT(_mm512_unpackhi_epi64(IA, IB)))                                         \
    X(and_si512, KI, OB, 64, PUT(_mm512_and_si512(IA, IB)))                                                   \
    X(add_epi32, KI, OB, 64, PUT(_mm512_add_epi32(IA, IB)))                                                   \
    X(min_epi32, KI, OB, 64, PUT(_mm512_min_epi32(IA, IB)))                                                   \
    X(max_epi32, KI, OB, 64, PUT(_mm512_max_epi32(IA, IB)))                                                   \
    X(slli_epi32_16, KI, OB, 64, PUT(_mm512_slli_epi32(IA, 16)))                                              \
    X(slli_epi16_7, KI, OB, 64, PUT(_mm512_slli_epi16(IA, 7)))                                                \
    X(slli_epi16_8, KI, OB, 64, PUT(_mm512_slli_epi16(IA, 8)))                                                \
    X(srli_epi16_4, KI, OB, 64, PUT(_mm512_srli_epi16(IA, 4)))                                                \
    X(srai_epi16_4, KI, OB, 64, PUT(_mm512_srai_epi16(IA, 4)))                                                \
    X(dpbusd_epi32, KI, OB, 64, PUT(_mm512_dpbusd_epi32(IA, IB, IC)))                                         \
    X(cvtepu16_epi32, KI, OB, 64, PUT(_mm512_cvtepu16_epi32(LO256(IA))))                                      \
    X(cvtph_ps, KI, OF, 64, PUT(_mm512_cvtph_ps(LO256(IA))))                                                  \
    X(cvtepi32_ps, KI, OB, 64, PUT(_mm512_cvtepi32_ps(IA)))                                                   \
    X(cvtps_epi32, KF, OB, 64, PUT(_mm512_cvtps_epi32(FA)))                                                   \
    X(cvtepi32_epi8, KI, OB, 16, PUT(_mm512_cvtepi32_epi8(IA)))                                               \
    X(cvtne2ps_pbh, KF, OB, 64, PUT((__m512i)_mm512_cvtne2ps_pbh(FA, FB)))                                    \
    X(cvtneps_pbh, KF, OB, 32, PUT((__m256i)_mm512_cvtneps_pbh(FA)))                                          \
    X(dpbf16_ps, KB, OF, 64, PUT(_mm512_dpbf16_ps(FA, (__m512bh)IB, (__m512bh)IC)))                           \
    X(maskz_loadu_ps, KI, OB, 64, PUT(_mm512_maskz_loadu_ps((__mmask16)M64, a_)))                             \
    X(maskz_loadu_epi16, KI, OB, 64, PUT(_mm512_maskz_loadu_epi16((__mmask32)M64, a_)))                       \
    X(maskz_loadu_epi8, KI, OB, 64, PUT(_mm512_maskz_loadu_epi8(M64, a_)))                                    \
    X(maskz_loadu_epi16_256, KI, OB, 32, PUT(_mm256_maskz_loadu_epi16((__mmask16)M64, a_)))                   \
    X(maskz_loadu_epi8_128, KI, OB, 16, PUT(_mm_maskz_loadu_epi8((__mmask16)M64, a_)))                        \
    X(mask_storeu_ps, KI, OB, 64, memcpy(r_, b_, 64); _mm512_mask_storeu_ps(r_, (__mmask16)M64, IA))          \
    X(mask_storeu_epi16, KI, OB, 64, memcpy(r_, b_, 64); _mm512_mask_storeu_epi16(r_, (__mmask32)M64, IA))    \
    X(set_epi32, KI, OB, 64, PUT(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)))     \
    X(set_epi16, KI, OB, 64,                                                                                  \
      PUT(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12,    \
                           11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)))                                            \
    X(set1_epi8, KI, OB, 64, PUT(_mm512_set1_epi8((char)M64)))

#define DEF_FN(pfx, nm, kind, ok, nb, ...)                                                                    \
    static void pfx##nm(void *r_, const void *a_, const void *b_, const void *c_) {                           \
        LOADS __VA_ARGS__;                                                                                    \
    }

/* ---- the hardware, where the CPU has it ---- */
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")
#define HW_FN(nm, kind, ok, nb, ...) DEF_FN(hw_, nm, kind, ok, nb, __VA_ARGS__)
/* mask_storeu_ps is given integer lanes (bits are bits) */
#define _mm512_mask_storeu_ps(p, m, v) (_mm512_mask_storeu_ps)(p, m, (__m512)(v))
OPS(HW_FN)
#undef _mm512_mask_storeu_ps
#pragma GCC pop_options

/* ---- the emulation, and its AVX2 / pseudocode references ---- */
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/cpu/avx512_emu.h"
#undef _mm512_castsi512_si256
#define _mm512_castsi512_si256(v) e5_castsi512_si256(v)
static inline __m256i e5_castsi512_si256(__m512i v) {
    __m256i r;
    memcpy(&r, &v, 32);
    return r;
}
#define EMU_FN(nm, kind, ok, nb, ...) DEF_FN(emu_, nm, kind, ok, nb, __VA_ARGS__)
static inline void e5_mask_storeu_ps_any(void *p, __mmask16 m, __m512i v) { e5_mask_storeu_ps(p, m, (__m512)v); }
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps e5_mask_storeu_ps_any
OPS(EMU_FN)
#undef _mm512_mask_storeu_ps

/* AVX2 twins: the same operation on each 256-bit half */
#define H2(nm, T, LD, ST, expr)                                                                               \
    static void ref_##nm(void *r_, const void *a_, const void *b_, const void *c_) {                          \
        for (int h = 0; h < 2; h++) {                                                                         \
            const T a = LD((const void *)((const char *)a_ + 32 * h)), b = LD((const void *)((const char *)b_ + 32 * h)); \
            const T c = LD((const void *)((const char *)c_ + 32 * h));                                        \
            (void)a, (void)b, (void)c;                                                                        \
            ST((void *)((char *)r_ + 32 * h), (expr));                                                        \
        }                                                                                                     \
    }
static inline __m256 ldf(const void *p) { return _mm256_loadu_ps((const float *)p); }
static inline void stf(void *p, __m256 v) { _mm256_storeu_ps((float *)p, v); }
static inline __m256i ldi(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline void sti(void *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }
H2(add_ps, __m256, ldf, stf, _mm256_add_ps(a, b))
H2(sub_ps, __m256, ldf, stf, _mm256_sub_ps(a, b))
H2(mul_ps, __m256, ldf, stf, _mm256_mul_ps(a, b))
H2(div_ps, __m256, ldf, stf, _mm256_div_ps(a, b))
H2(min_ps, __m256, ldf, stf, _mm256_min_ps(a, b))
H2(max_ps, __m256, ldf, stf, _mm256_max_ps(a, b))
H2(fmadd_ps, __m256, ldf, stf, _mm256_fmadd_ps(a, b, c))
H2(fnmadd_ps, __m256, ldf, stf, _mm256_fnmadd_ps(a, b, c))
H2(abs_ps, __m256, ldf, stf, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a))
H2(roundscale_ps, __m256, ldf, stf, _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
H2(shuffle_ps_88, __m256, ldf, stf, _mm256_shuffle_ps(a, b, 0x88))
H2(shuffle_ps_dd, __m256, ldf, stf, _mm256_shuffle_ps(a, b, 0xdd))
H2(shuffle_ps_1b, __m256, ldf, stf, _mm256_shuffle_ps(a, b, 0x1b))
H2(unpacklo_epi32, __m256i, ldi, sti, _mm256_unpacklo_epi32(a, b))
H2(unpackhi_epi32, __m256i, ldi, sti, _mm256_unpackhi_epi32(a, b))
H2(unpacklo_epi64, __m256i, ldi, sti, _mm256_unpacklo_epi64(a, b))
H2(unpackhi_epi64, __m256i, ldi, sti, _mm256_unpackhi_epi64(a, b))
H2(and_si512, __m256i, ldi, sti, _mm256_and_si256(a, b))
H2(add_epi32, __m256i, ldi, sti, _mm256_add_epi32(a, b))
H2(min_epi32, __m256i, ldi, sti, _mm256_min_epi32(a, b))
H2(max_epi32, __m256i, ldi, sti, _mm256_max_epi32(a, b))
H2(slli_epi32_16, __m256i, ldi, sti, _mm256_slli_epi32(a, 16))
H2(slli_epi16_7, __m256i, ldi, sti, _mm256_slli_epi16(a, 7))
H2(slli_epi16_8, __m256i, ldi, sti, _mm256_slli_epi16(a, 8))
H2(srli_epi16_4, __m256i, ldi, sti, _mm256_srli_epi16(a, 4))
H2(srai_epi16_4, __m256i, ldi, sti, _mm256_srai_epi16(a, 4))
H2(cvtepi32_ps, __m256i, ldi, sti, _mm256_castps_si256(_mm256_cvtepi32_ps(a)))
H2(cvtps_epi32, __m256, ldf, sti, _mm256_cvtps_epi32(a))

#define CMP(nm, P)                                                                                            \
    static void ref_##nm(void *r_, const void *a_, const void *b_, const void *c_) {                          \
        (void)c_;                                                                                             \
        const unsigned lo = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(ldf(a_), ldf(b_), P));                 \
        const unsigned hi = (unsigned)_mm256_movemask_ps(                                                     \
            _mm256_cmp_ps(ldf((const float *)a_ + 8), ldf((const float *)b_ + 8), P));                        \
        const uint16_t m = (uint16_t)(lo | hi << 8);                                                          \
        memcpy(r_, &m, 2);                                                                                    \
    }
CMP(cmp_eq_oq, _CMP_EQ_OQ)
CMP(cmp_lt_os, _CMP_LT_OS)
CMP(cmp_le_oq, _CMP_LE_OQ)
CMP(cmp_unord_q, _CMP_UNORD_Q)
CMP(cmp_neq_uq, _CMP_NEQ_UQ)
CMP(cmp_nlt_uq, _CMP_NLT_UQ)
CMP(cmp_gt_oq, _CMP_GT_OQ)
CMP(cmp_ord_q, _CMP_ORD_Q)

#define REF(nm) static void ref_##nm(void *r_, const void *a_, const void *b_, const void *c_)
#define UNUSED3 (void)a_, (void)b_, (void)c_
static uint64_t mask_of(const void *c_) {
    uint64_t m;
    memcpy(&m, c_, 8);
    return m;
}
static float fbits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t bitsf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float daz(float f) { return (bitsf(f) & 0x7f800000u) ? f : fbits(bitsf(f) & 0x80000000u); }

REF(maskz_mov_ps) {
    UNUSED3;
    const uint64_t m = mask_of(c_);
    for (int i = 0; i < 16; i++) {
        float v = 0.0f;
        if ((m >> i) & 1) memcpy(&v, (const float *)a_ + i, 4);
        memcpy((float *)r_ + i, &v, 4);
    }
}
REF(testn_epi8_mask) {
    UNUSED3;
    const uint8_t *a = a_, *b = b_;
    uint64_t m = 0;
    for (int i = 0; i < 64; i++) m |= (uint64_t)((a[i] & b[i]) == 0) << i;
    memcpy(r_, &m, 8);
}
REF(mask_mul_ps) {
    UNUSED3;
    const uint64_t m = mask_of(c_);
    const float *a = a_, *b = b_, *c = c_;
    for (int i = 0; i < 16; i++) {
        const float v = (m >> i) & 1 ? a[i] * b[i] : c[i];
        memcpy((float *)r_ + i, &v, 4);
    }
}
REF(cmpeq_epi16_mask_256) {
    UNUSED3;
    const int16_t *a = a_, *b = b_;
    uint16_t m = 0;
    for (int i = 0; i < 16; i++) m = (uint16_t)(m | (a[i] == (a[i] ^ (b[i] & 1))) << i);
    memcpy(r_, &m, 2);
}
/* VSCALEFPS: a · 2^floor(b), with the specials of Intel's table */
REF(scalef_ps) {
    UNUSED3;
    const float *a = a_, *b = b_;
    float *r = r_;
    for (int i = 0; i < 16; i++) {
        const float x = a[i], y = b[i];
        if (isnan(x) || isnan(y)) r[i] = NAN;
        else if (isinf(y) && y > 0) r[i] = x == 0 ? NAN : copysignf(INFINITY, x);
        else if (isinf(y)) r[i] = isinf(x) ? NAN : copysignf(0.0f, x);
        else r[i] = (float)ldexp((double)x, (int)fmax(-2000.0, fmin(2000.0, floor((double)y))));
    }
}
/* GCC's trees: (hi + lo) of the 256-bit halves, then of 128-bit halves, then {2,3,0,1}, then
 * lanes 0 + 1 */
REF(reduce_add_ps) {
    UNUSED3;
    const float *a = a_;
    float t[8], u[4], v[4];
    for (int i = 0; i < 8; i++) t[i] = a[8 + i] + a[i];
    for (int i = 0; i < 4; i++) u[i] = t[4 + i] + t[i];
    for (int i = 0; i < 4; i++) v[i] = u[i] + u[i ^ 2];
    const float s = v[0] + v[1];
    memcpy(r_, &s, 4);
}
static float mx(float x, float y) { return x > y ? x : y; }
REF(reduce_max_ps) {
    UNUSED3;
    const float *a = a_;
    float t[8], u[4], v[4];
    for (int i = 0; i < 8; i++) t[i] = mx(a[8 + i], a[i]);
    for (int i = 0; i < 4; i++) u[i] = mx(t[4 + i], t[i]);
    for (int i = 0; i < 4; i++) v[i] = mx(u[i], u[i ^ 2]);
    const float s = mx(v[0], v[1]);
    memcpy(r_, &s, 4);
}
/* lanes shifted right by 5 first: GCC's header adds them as int, which UBSan (make asan) reports
 * when the sum overflows; 16 lanes of 27 bits cannot */
REF(reduce_add_epi32) {
    UNUSED3;
    uint32_t s = 0;
    int32_t x[16];
    memcpy(x, a_, 64);
    for (int i = 0; i < 16; i++) s += (uint32_t)(x[i] >> 5);
    memcpy(r_, &s, 4);
}
REF(castps512_ps256) { UNUSED3, memcpy(r_, a_, 32); }
REF(extractf32x8_0) { UNUSED3, memcpy(r_, a_, 32); }
REF(extractf32x8_1) { UNUSED3, memcpy(r_, (const char *)a_ + 32, 32); }
REF(insertf32x8_0) { UNUSED3, memcpy(r_, b_, 32), memcpy((char *)r_ + 32, (const char *)a_ + 32, 32); }
REF(insertf32x8_1) { UNUSED3, memcpy(r_, a_, 32), memcpy((char *)r_ + 32, b_, 32); }
REF(castsi256_si512) { UNUSED3, memcpy(r_, a_, 32); }
/* VSHUFI32X4 / VSHUFF32X4: 128-bit blocks 0, 1 of the result from a, 2, 3 from b */
static void shuf128(void *r_, const void *a_, const void *b_, int imm) {
    for (int j = 0; j < 4; j++) memcpy((char *)r_ + 16 * j, (const char *)(j < 2 ? a_ : b_) + 16 * ((imm >> 2 * j) & 3), 16);
}
REF(shuffle_i32x4_88) { UNUSED3, shuf128(r_, a_, b_, 0x88); }
REF(shuffle_i32x4_dd) { UNUSED3, shuf128(r_, a_, b_, 0xdd); }
REF(shuffle_f32x4_44) { UNUSED3, shuf128(r_, a_, b_, 0x44); }
REF(shuffle_f32x4_ee) { UNUSED3, shuf128(r_, a_, b_, 0xee); }
REF(shuffle_f32x4_88) { UNUSED3, shuf128(r_, a_, b_, 0x88); }
REF(shuffle_f32x4_dd) { UNUSED3, shuf128(r_, a_, b_, 0xdd); }
/* VPERMT2PS (a, idx, b): index bits 3:0 pick the lane, bit 4 the source, the rest ignored */
REF(permutex2var_ps) {
    uint32_t x[16], y[16], k[16], r[16];
    memcpy(x, a_, 64), memcpy(y, b_, 64), memcpy(k, c_, 64);
    for (int i = 0; i < 16; i++) r[i] = (k[i] & 16) ? y[k[i] & 15] : x[k[i] & 15];
    memcpy(r_, r, 64);
}
REF(maskz_permutexvar_epi16) {
    uint16_t k[32], x[32], r[32];
    memcpy(k, a_, 64), memcpy(x, b_, 64);
    const uint64_t m = mask_of(c_);
    for (int i = 0; i < 32; i++) r[i] = ((m >> i) & 1) ? x[k[i] & 31] : 0;
    memcpy(r_, r, 64);
}
/* VPDPBUSD: unsigned bytes of b times signed bytes of c, summed per dword into a, wrapping */
REF(dpbusd_epi32) {
    uint32_t s[16];
    const uint8_t *u = b_;
    const int8_t *v = c_;
    memcpy(s, a_, 64);
    for (int i = 0; i < 16; i++) {
        int64_t t = 0;
        for (int j = 0; j < 4; j++) t += (int64_t)u[4 * i + j] * v[4 * i + j];
        s[i] += (uint32_t)t;
    }
    memcpy(r_, s, 64);
}
REF(cvtepu16_epi32) {
    UNUSED3;
    uint16_t h[16];
    uint32_t r[16];
    memcpy(h, a_, 32);
    for (int i = 0; i < 16; i++) r[i] = h[i];
    memcpy(r_, r, 64);
}
REF(cvtph_ps) {
    UNUSED3;
    uint16_t h[16];
    float r[16];
    memcpy(h, a_, 32);
    for (int i = 0; i < 16; i++) r[i] = _cvtsh_ss(h[i]);
    memcpy(r_, r, 64);
}
REF(cvtepi32_epi8) {
    UNUSED3;
    uint32_t x[16];
    uint8_t r[16];
    memcpy(x, a_, 64);
    for (int i = 0; i < 16; i++) r[i] = (uint8_t)x[i];
    memcpy(r_, r, 16);
}
/* Intel's convert_fp32_to_bfloat16: NaN -> quiet, else round to nearest even; denormal inputs
 * as zero */
static uint16_t bf16_of(float f) {
    const uint32_t u = bitsf(daz(f));
    if (isnan(f)) return (uint16_t)(u >> 16 | 0x40);
    return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}
REF(cvtne2ps_pbh) {
    UNUSED3;
    const float *a = a_, *b = b_;
    uint16_t r[32];
    for (int i = 0; i < 16; i++) r[i] = bf16_of(b[i]), r[16 + i] = bf16_of(a[i]);
    memcpy(r_, r, 64);
}
REF(cvtneps_pbh) {
    UNUSED3;
    const float *a = a_;
    uint16_t r[16];
    for (int i = 0; i < 16; i++) r[i] = bf16_of(a[i]);
    memcpy(r_, r, 32);
}
/* VDPBF16PS: dst = fma(b.odd, c.odd, dst), then fma(b.even, c.even, dst); denormal inputs as
 * zero, denormal results flushed */
REF(dpbf16_ps) {
    float s[16];
    uint16_t x[32], y[32];
    memcpy(s, a_, 64), memcpy(x, b_, 64), memcpy(y, c_, 64);
    for (int i = 0; i < 16; i++) {
        float acc = daz(s[i]);
        for (int k = 1; k >= 0; k--)
            acc = daz(fmaf(daz(fbits((uint32_t)x[2 * i + k] << 16)), daz(fbits((uint32_t)y[2 * i + k] << 16)), acc));
        s[i] = acc;
    }
    memcpy(r_, s, 64);
}
static void maskz_ref(void *r_, const void *src, uint64_t m, int n, int esz) {
    memset(r_, 0, (size_t)(n * esz));
    for (int i = 0; i < n; i++)
        if ((m >> i) & 1) memcpy((char *)r_ + i * esz, (const char *)src + i * esz, (size_t)esz);
}
REF(maskz_loadu_ps) { UNUSED3, maskz_ref(r_, a_, mask_of(c_), 16, 4); }
REF(maskz_loadu_epi16) { UNUSED3, maskz_ref(r_, a_, mask_of(c_), 32, 2); }
REF(maskz_loadu_epi8) { UNUSED3, maskz_ref(r_, a_, mask_of(c_), 64, 1); }
REF(maskz_loadu_epi16_256) { UNUSED3, maskz_ref(r_, a_, mask_of(c_) & 0xffff, 16, 2); }
REF(maskz_loadu_epi8_128) { UNUSED3, maskz_ref(r_, a_, mask_of(c_) & 0xffff, 16, 1); }
static void mstore_ref(void *r_, const void *a_, const void *b_, uint64_t m, int n, int esz) {
    memcpy(r_, b_, 64);
    for (int i = 0; i < n; i++)
        if ((m >> i) & 1) memcpy((char *)r_ + i * esz, (const char *)a_ + i * esz, (size_t)esz);
}
REF(mask_storeu_ps) { UNUSED3, mstore_ref(r_, a_, b_, mask_of(c_), 16, 4); }
REF(mask_storeu_epi16) { UNUSED3, mstore_ref(r_, a_, b_, mask_of(c_), 32, 2); }
/* the masked loads alone (the ops above read all 64 bytes of every argument) */
static void emu_mload(int which, void *r, const void *src, uint64_t m) {
    switch (which) {
    case 0: { const __m512 v = _mm512_maskz_loadu_ps((__mmask16)m, src); memcpy(r, &v, 64); break; }
    case 1: { const __m512i v = _mm512_maskz_loadu_epi16((__mmask32)m, src); memcpy(r, &v, 64); break; }
    case 2: { const __m512i v = _mm512_maskz_loadu_epi8(m, src); memcpy(r, &v, 64); break; }
    case 3: { const __m256i v = _mm256_maskz_loadu_epi16((__mmask16)m, src); memcpy(r, &v, 32); break; }
    default: { const __m128i v = _mm_maskz_loadu_epi8((__mmask16)m, src); memcpy(r, &v, 16); break; }
    }
}
REF(set_epi32) {
    UNUSED3;
    for (int32_t i = 0; i < 16; i++) memcpy((char *)r_ + 4 * i, &i, 4);
}
REF(set_epi16) {
    UNUSED3;
    for (int16_t i = 0; i < 32; i++) memcpy((char *)r_ + 2 * i, &i, 2);
}
REF(set1_epi8) { UNUSED3, memset(r_, (int)(mask_of(c_) & 0xff), 64); }
#pragma GCC pop_options

typedef struct op {
    const char *name;
    int kind, out, nbytes;
    op_fn emu, ref, hw;
} op;
#define ENTRY(nm, kind, ok, nb, ...) {#nm, kind, ok, nb, emu_##nm, ref_##nm, hw_##nm},
static const op k_ops[] = {OPS(ENTRY)};

typedef struct rng { uint64_t s; } rng;
static uint64_t rng_next(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_float(rng *r) {
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                       0xffc00001u, 0x7f800001u, 0x00000001u, 0x807fffffu, 0x00400000u,
                                       0x7f7fffffu, 0xff7fffffu, 0x3f000000u, 0x3fc00000u, 0x40200000u,
                                       0xc0200000u, 0x3f808000u, 0x3f818000u, 0x4f000000u, 0xcf000000u,
                                       0x4f000001u, 0xcf000001u, 0x3f7fffffu, 0x33800000u};
    const uint64_t u = rng_next(r);
    switch (u % 10) {
    case 0: return fbits(special[(u >> 8) % (sizeof special / sizeof special[0])]);
    case 1: return (float)(int32_t)(u >> 32) * 0.5f;                   /* halves: rounding ties, int overflow */
    case 2: return fbits((uint32_t)(u >> 16));                          /* any bits */
    default: return ldexpf((float)((int64_t)(u >> 20) % 2000001 - 1000000) * 1e-6f, (int)((u >> 8) % 41) - 20);
    }
}
static uint16_t rng_bf16(rng *r) {
    const uint64_t u = rng_next(r);
    if (u % 16 == 0) return (uint16_t)(u >> 16);                         /* denormals, NaN, inf */
    return (uint16_t)(bitsf(ldexpf((float)((int64_t)(u >> 24) % 2001 - 1000) * 1e-3f, (int)((u >> 8) % 140) - 70)) >> 16);
}
/* a KF: floats; KI, KP: bits; KS: floats; KB: floats. b KF: floats; KI, KP: bits; KS: exponents
 * (mostly within +-80); KB: bf16. c KF: floats; KB: bf16; else bits whose first 8 bytes are
 * all ones a quarter of the time (full masks). */
static void gen(rng *r, int kind, int arg, void *buf) {
    uint8_t *b = buf;
    const bool bits = kind == KI || kind == KP || (kind == KS && arg == 2);
    if (bits) {
        for (int i = 0; i < 64; i += 8) {
            const uint64_t u = rng_next(r);
            memcpy(b + i, &u, 8);
        }
        if (arg == 2 && rng_next(r) % 4 == 0) memset(b, 0xff, 8);
    } else if (kind == KB && arg > 0) {
        for (int i = 0; i < 32; i++) {
            const uint16_t h = rng_bf16(r);
            memcpy(b + 2 * i, &h, 2);
        }
    } else {
        for (int i = 0; i < 16; i++) {
            float f = rng_float(r);
            if (kind == KS && arg == 1 && rng_next(r) % 8) f = (float)((int64_t)(rng_next(r) % 1601) - 800) * 0.1f;
            memcpy(b + 4 * i, &f, 4);
        }
    }
}

static int same(const op *o, const void *x, const void *y) {
    if (o->out == OB) return memcmp(x, y, (size_t)o->nbytes) == 0;
    for (int i = 0; i < o->nbytes / 4; i++) {
        float p, q;
        memcpy(&p, (const char *)x + 4 * i, 4);
        memcpy(&q, (const char *)y + 4 * i, 4);
        if (isnan(p) && isnan(q)) continue;
        if (bitsf(p) != bitsf(q)) return 0;
    }
    return 1;
}
static void dump(const char *what, const void *p, int n) {
    printf("  %s:", what);
    for (int i = 0; i < n; i += 4) {
        uint32_t u;
        memcpy(&u, (const char *)p + i, 4);
        printf(" %08x", u);
    }
    printf("\n");
}

static bool have_avx2(void) {
    hy_cpu_features f;
    hy_cpu_detect(&f);
    return f.avx2 && f.fma && f.f16c;
}
static bool have_avx512(void) {
    hy_cpu_features f;
    hy_cpu_detect(&f);
    return f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx512_bf16 && f.avx512_vnni;
}

static void test_ops(void **st) {
    (void)st;
    if (!have_avx2()) {
        printf("no AVX2 here: the emulation is not checked\n");
        return;
    }
    const bool hw = have_avx512();
    int bad_ref = 0, bad_hw = 0;
    for (size_t k = 0; k < sizeof k_ops / sizeof k_ops[0]; k++) {
        const op *o = &k_ops[k];
        rng r = {1000 + k};
        int nref = 0, nhw = 0;
        for (int it = 0; it < 3000; it++) {
            _Alignas(64) uint8_t a[64], b[64], c[64], re[64], rr[64], rh[64];
            gen(&r, o->kind, 0, a);
            gen(&r, o->kind, 1, b);
            gen(&r, o->kind, 2, c);
            memset(re, 0xa5, 64), memset(rr, 0xa5, 64), memset(rh, 0xa5, 64);
            o->emu(re, a, b, c);
            o->ref(rr, a, b, c);
            if (!same(o, re, rr) && nref++ == 0) {
                printf("%s: emulation differs from the reference\n", o->name);
                dump("a", a, 64), dump("b", b, 64), dump("c", c, 64);
                dump("emu", re, o->nbytes), dump("ref", rr, o->nbytes);
            }
            if (hw) {
                o->hw(rh, a, b, c);
                if (!same(o, re, rh) && nhw++ == 0) {
                    printf("%s: emulation differs from the CPU\n", o->name);
                    dump("a", a, 64), dump("b", b, 64), dump("c", c, 64);
                    dump("emu", re, o->nbytes), dump("cpu", rh, o->nbytes);
                }
            }
        }
        bad_ref += nref != 0;
        bad_hw += nhw != 0;
    }
    printf("%zu intrinsics x 3000 draws: %d differ from their AVX2 twin or pseudocode; %s\n",
           sizeof k_ops / sizeof k_ops[0], bad_ref,
           hw ? (bad_hw ? "some differ from this CPU's AVX-512" : "all equal this CPU's AVX-512")
              : "no AVX-512 here to compare with");
    assert_int_equal(bad_ref, 0);
    assert_int_equal(bad_hw, 0);
}

/* A masked load whose mask stops at an unmapped page must not touch it (the kernels load row
 * tails that way). */
static void test_masked_edge(void **st) {
    (void)st;
    if (!have_avx2()) return;
    const long pg = sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, (size_t)(2 * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
    for (int i = 0; i < pg; i++) m[i] = (uint8_t)(i * 7 + 1);
    uint8_t *end = m + pg;
    static const struct { int esz, lanes, nb; } cases[] = {{4, 16, 64}, {2, 32, 64}, {1, 64, 64}, {2, 16, 32}, {1, 16, 16}};
    _Alignas(64) uint8_t r[64], rr[64];
    int checked = 0;
    for (int n = 0; n <= 64; n++) {
        const uint64_t bits = n >= 64 ? ~0ull : (1ull << n) - 1;
        for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
            if (n > cases[k].lanes) continue;
            const uint8_t *src = end - n * cases[k].esz;
            emu_mload(k, r, src, bits);
            memset(rr, 0, sizeof rr);
            memcpy(rr, src, (size_t)(n * cases[k].esz));
            assert_memory_equal(r, rr, (size_t)cases[k].nb);
            checked++;
        }
    }
    munmap(m, (size_t)(2 * pg));
    printf("masked loads ending at an unmapped page: %d cases, no fault, equal to the pseudocode\n", checked);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_masked_edge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
static void test_skip(void **st) {
    (void)st;
    printf("the AVX-512 emulation is GCC and x86-64 only: skipped\n");
}
int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_skip)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
