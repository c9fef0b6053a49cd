/*
 * AVX2+FMA instance of the Gated DeltaNet kernels (template: gdn_simd.inc). Compiled for the
 * avx2 tier only by target pragmas; the table must only be used after kernels/cpu/dispatch.c
 * checked the CPU. 8 fp32 lanes, 16 registers: product tiles of 4 rows x 2 vectors,
 * recurrent blocks of 4 vectors (32 state columns) with 2 interleaved partial sums.
 */
#include "kernels/gdn.h"

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include <immintrin.h>

typedef __m256 vf;
typedef __m256i vm;
#define VL 8
#define GEMM_MR 4
#define GEMM_NV 2
#define REC_NB 4
#define REC_IU 2
#define FS_NV 8
#define GDN_ISA_NAME "avx2"

static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_set1(float x) { return _mm256_set1_ps(x); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vm vm_first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vf vf_loadm(const float *p, vm m) { return _mm256_maskload_ps(p, m); }
static inline void vf_storem(float *p, vm m, vf v) { _mm256_maskstore_ps(p, m, v); }
static inline vf vf_fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf vf_round(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* y·2^n for integral n in [-126, 127] (vf_exp's clamp keeps n there) */
static inline vf vf_pow2n(vf y, vf n) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}
static inline vf vf_zero_if_lt(vf x, vf lim, vf y) {
    return _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lim, _CMP_LT_OQ));
}
static inline float vf_hsum(vf a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#include "kernels/cpu/gdn_simd.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const hy_gdn_ops *hy_gdn_ops_avx2(void) { return &k_gdn_simd; }

#else
const hy_gdn_ops *hy_gdn_ops_avx2(void) { return NULL; }
#endif
