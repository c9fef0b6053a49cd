/*
 * AVX2+FMA instance of the attention template (attn_simd.inc) with tiles of 4 query rows: score
 * tiles of 4 rows x 3 key vectors (12 accumulators + 3 key vectors + a query broadcast: the 16
 * registers), P·V tiles of 4 rows x 3 vectors. A block's K and V come from L2; here each load
 * serves 4 rows instead of attn_avx2.c's 2, which the calls of several tokens (prefill: 16
 * tokens x 4 query heads a call in the 0.8B) gain from. Measured with keys as rows (before the
 * transposed key blocks, kernels/attn.h), Zen 3, one core, the two instances alternated 40
 * times in one process, engine-shaped calls (16 tokens x 4 heads, dh 256, rows of 2 KV heads)
 * at 512 / 1024 / 2048 / 4096 / 8192 positions: 1.59 / 1.58 / 1.34 / 1.29 / 1.30x; 64 tokens
 * at 4096: 1.50x. One token (decode: 4 rows, one tile a block instead of two) over an fp32
 * cache read 0.91-0.98x at 32K positions, so that keeps the 2-row instance; one token over a
 * bf16 / fp8 cache with 3-4 (or more than 6) query heads comes here (attn_avx2.c). Per row the
 * same operations in the same order as attn_avx2.c (a row's result never depends on its tile
 * mates): bit-identical.
 */
#include "kernels/cpu/attn_avx2_wide.h"

#if defined(__x86_64__)

#include "kernels/cpu/avx2_begin.h"

#define ATTN_MR 4
#define ATTN_NKV 3
#define ATTN_NV 3
#define ATTN_ISA_NAME "avx2"
#define ATTN_NO_TABLE

#include "kernels/cpu/vec_avx2.inc"

#include "kernels/cpu/attn_simd.inc"

void hy_attn_avx2_gqa_wide(const hy_attn_args *a, float *work) { simd_gqa(a, work); }

#include "kernels/cpu/avx2_end.h"

#endif
