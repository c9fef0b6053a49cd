/*
 * AVX2+FMA instance of the grouped-query attention kernel (template: attn_simd.inc). Compiled
 * for the avx2 tier only by target pragmas; the table must only be used after
 * kernels/cpu/dispatch.c checked the CPU. 8 fp32 lanes, 16 registers: score tiles of 2 rows x
 * 4 key vectors (8 accumulators + 4 key vectors), P·V tiles of 2 rows x 4 vectors (32 dims), for
 * one token (decode); calls of several tokens go to the 4-row instance (attn_avx2_wide.c), one
 * token over a bf16 / fp8 cache to the 4- or 6-row one (attn_avx2_wide6.c) that fits its rows.
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

/* One token over a bf16 / fp8 cache: the instance whose one tile holds all ng rows, so each
 * element is widened once in registers; 2-row tiles first widen the block into fp32
 * (stage_block) and read it once per tile. Zen 3, one core, dh 256 at 32K positions, the
 * instances alternated in one process: fp8 g4 3.5 GB/s against 2.2-2.7 (2-row), g6 2.9 against
 * 1.8-2.1; bf16 g4 6.4 against 4.1, g6 5.5-5.8 against 3.2-3.9. More rows (staged either way):
 * 4-row tiles, g8 fp8 2.7 against 1.9, bf16 4.1 against 3.5. An fp32 cache keeps the 2-row
 * tiles (the 4-row ones read it at 0.91-0.98x). */
static void gqa_avx2(const hy_attn_args *a, float *work) {
    const bool narrow = a->kv_fmt != HY_ATTN_KV_F32 && a->nt == 1;
    if (narrow && (a->ng == 5 || a->ng == 6)) hy_attn_avx2_gqa_wide6(a, work);
    else if (a->nt > 1 || (narrow && a->ng >= 3)) hy_attn_avx2_gqa_wide(a, work);
    else simd_gqa(a, work);
}

#include "kernels/cpu/avx2_end.h"

static const hy_attn_ops k_attn_avx2 = {.name = ATTN_ISA_NAME, .gqa = gqa_avx2};
const hy_attn_ops *hy_attn_ops_avx2(void) { return &k_attn_avx2; }

#else
const hy_attn_ops *hy_attn_ops_avx2(void) { return NULL; }
#endif
