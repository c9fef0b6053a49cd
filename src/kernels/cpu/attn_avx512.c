/*
 * AVX-512 instance of the grouped-query attention kernel (template: attn_simd.inc). Compiled
 * for the avx512 tier only, inside the target region of kernels/cpu/avx512_begin.h, so the rest
 * of the binary stays baseline x86-64; the table must only be used after kernels/cpu/dispatch.c
 * checked the CPU. 16 fp32 lanes, 32 registers: score tiles of 6 rows x 4 key vectors (the
 * block's 64 keys: 24 accumulators), P·V tiles of 6 rows x 4 vectors (64 dims). 6 rows: the
 * query heads per KV head of the 27B (the 0.8B's 4 and a call's tokens fill them too); against
 * 4 rows, more loads per FMA.
 */
#include "kernels/attn.h"

#if defined(__x86_64__)

#include "kernels/cpu/avx512_begin.h"

#define ATTN_MR 6
#define ATTN_NKV 4
#define ATTN_NV 4
#define ATTN_ISA_NAME "avx512"

#include "kernels/cpu/vec_avx512.inc"

#include "kernels/cpu/attn_simd.inc"

#include "kernels/cpu/avx512_end.h"

const hy_attn_ops *hy_attn_ops_avx512(void) { return &k_attn_simd; }

#else
const hy_attn_ops *hy_attn_ops_avx512(void) { return NULL; }
#endif
