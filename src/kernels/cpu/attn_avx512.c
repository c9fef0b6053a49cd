/*
 * AVX-512 instance of the grouped-query attention kernel (template: attn_simd.inc). Compiled
 * for the avx512 tier only by target pragmas, so the rest of the binary stays baseline x86-64;
 * the table must only be used after kernels/cpu/dispatch.c checked the CPU. 16 fp32 lanes,
 * 32 registers: score tiles of 4 rows x 4 keys (16 accumulators), P·V tiles of 4 rows x
 * 4 vectors (64 dims).
 */
#include "kernels/attn.h"

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
#endif

#include <immintrin.h>

typedef __m512 vf;
typedef __mmask16 vm;
#define VL 16
#define ATTN_MR 4
#define ATTN_NV 4
#define ATTN_ISA_NAME "avx512"

static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_set1(float x) { return _mm512_set1_ps(x); }
static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vm vm_first(int n) { return (vm)(n >= 16 ? 0xffffu : ((1u << n) - 1u)); }
static inline vf vf_loadm(const float *p, vm m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void vf_storem(float *p, vm m, vf v) { _mm512_mask_storeu_ps(p, m, v); }
static inline vf vf_fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vf_round(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf vf_pow2n(vf y, vf n) { return _mm512_scalef_ps(y, n); }
static inline vf vf_zero_if_lt(vf x, vf lim, vf y) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lim, _CMP_NLT_UQ), y);
}
static inline float vf_hsum(vf a) { return _mm512_reduce_add_ps(a); }
static inline float vf_hmax(vf a) { return _mm512_reduce_max_ps(a); }
/* out[i] = horizontal sum of the i-th argument: halves added down to 256 bits, then
 * pairwise hadds transpose the four partial sums into one 128-bit vector. */
static inline void vf_hsum4(vf a, vf b, vf c, vf d, float out[4]) {
    const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    const __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), _mm512_extractf32x8_ps(b, 1));
    const __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), _mm512_extractf32x8_ps(c, 1));
    const __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), _mm512_extractf32x8_ps(d, 1));
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}

#include "kernels/cpu/attn_simd.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const hy_attn_ops *hy_attn_ops_avx512(void) { return &k_attn_simd; }

#else
const hy_attn_ops *hy_attn_ops_avx512(void) { return NULL; }
#endif
