/*
 * AVX2+FMA instance of the grouped-query attention kernel (template: attn_simd.inc). Compiled
 * for the avx2 tier only by target pragmas; the table must only be used after
 * kernels/cpu/dispatch.c checked the CPU. 8 fp32 lanes, 16 registers: score tiles of 2 rows x
 * 4 key vectors (8 accumulators + 4 key vectors), P·V tiles of 2 rows x 4 vectors (32 dims), for
 * one token (decode); calls of several tokens go to the 4-row instance (attn_avx2_wide.c).
 */
#include "kernels/attn.h"
#include "kernels/cpu/attn_avx2_wide.h"

#if defined(__x86_64__)

#include "kernels/cpu/avx2_begin.h"

#define ATTN_MR 2
#define ATTN_NKV 4
#define ATTN_NV 4
#define ATTN_ISA_NAME "avx2"
#define ATTN_NO_TABLE

#include "kernels/cpu/vec_avx2.inc"

#include "kernels/cpu/attn_simd.inc"

static void gqa_avx2(const hy_attn_args *a, float *work) {
    if (a->nt > 1) hy_attn_avx2_gqa_wide(a, work);
    else simd_gqa(a, work);
}

#include "kernels/cpu/avx2_end.h"

static const hy_attn_ops k_attn_avx2 = {.name = ATTN_ISA_NAME, .gqa = gqa_avx2};
const hy_attn_ops *hy_attn_ops_avx2(void) { return &k_attn_avx2; }

#else
const hy_attn_ops *hy_attn_ops_avx2(void) { return NULL; }
#endif
