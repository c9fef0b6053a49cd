/*
 * The avx2 tier's second attention instance (attn_avx2_wide.c): the template attn_simd.inc with
 * tiles of 4 query rows, which attn_avx2.c's table runs for calls of several tokens (prefill)
 * and for one token over a bf16 / fp8 cache with 3-4 or more than 6 query heads per KV head.
 * Same contract and per-row results as kernels/attn.h's gqa; only after the CPU check.
 */
#ifndef HY_KERNELS_CPU_ATTN_AVX2_WIDE_H
#define HY_KERNELS_CPU_ATTN_AVX2_WIDE_H

#include "kernels/attn.h"

void hy_attn_avx2_gqa_wide(const hy_attn_args *a, float *work);
/* the same with tiles of 6 query rows (attn_avx2_wide6.c) */
void hy_attn_avx2_gqa_wide6(const hy_attn_args *a, float *work);

#endif
