/*
 * AVX-512 instance of the Gated DeltaNet kernels (template: gdn_simd.inc). Compiled for the
 * avx512 tier only by target pragmas, so the rest of the binary stays baseline x86-64; the
 * table must only be used after kernels/cpu/dispatch.c checked the CPU (hy_isa_supported).
 * 16 fp32 lanes, 32 registers: product tiles of 4 rows x 4 vectors, recurrent blocks of
 * 2 vectors (32 state columns) with 4 interleaved partial sums.
 */
#include "kernels/gdn.h"

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")
#endif

#include <immintrin.h>

typedef __m512 vf;
typedef __mmask16 vm;
#define VL 16
#define GEMM_MR 4
#define GEMM_NV 4
#define REC_NB 2
#define REC_IU 4
#define FS_NV 8
#define GDN_ISA_NAME "avx512"

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
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vf_round(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf vf_pow2n(vf y, vf n) { return _mm512_scalef_ps(y, n); }
static inline vf vf_zero_if_lt(vf x, vf lim, vf y) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lim, _CMP_NLT_UQ), y);
}
static inline float vf_hsum(vf a) { return _mm512_reduce_add_ps(a); }

#include "kernels/cpu/gdn_simd.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const hy_gdn_ops *hy_gdn_ops_avx512(void) { return &k_gdn_simd; }

#else
const hy_gdn_ops *hy_gdn_ops_avx512(void) { return NULL; }
#endif
