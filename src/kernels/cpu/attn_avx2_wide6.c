/*
 * AVX2+FMA instance of the attention template (attn_simd.inc) with tiles of 6 query rows: score
 * tiles of 6 rows x 2 key vectors (12 accumulators + 2 key vectors + a query broadcast), P·V
 * tiles of 6 rows x 2 vectors. For one-token calls (decode) over a bf16 / fp8 cache with 5-6
 * query heads per KV head (Qwen3.6-27B: 6): the rows are one tile, so each element is widened
 * once, in registers (attn_avx2.c's 2-row tiles widen the block into fp32 first, stage_block,
 * and read it 3 times). Per row the same operations in the same order as attn_avx2.c: bit-identical.
 */
#include "kernels/cpu/attn_avx2_wide.h"

#if defined(__x86_64__)

#include "kernels/cpu/avx2_begin.h"

#define ATTN_MR 6
#define ATTN_NKV 2
#define ATTN_NV 2
#define ATTN_ISA_NAME "avx2"
#define ATTN_NO_TABLE

#include "kernels/cpu/vec_avx2.inc"

#include "kernels/cpu/attn_simd.inc"

void hy_attn_avx2_gqa_wide6(const hy_attn_args *a, float *work) { simd_gqa(a, work); }

#include "kernels/cpu/avx2_end.h"

#endif
