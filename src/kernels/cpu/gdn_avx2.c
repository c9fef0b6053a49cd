/*
 * AVX2+FMA instance of the Gated DeltaNet kernels (template: gdn_simd.inc). Compiled for the
 * avx2 tier only by target pragmas; the table must only be used after kernels/cpu/dispatch.c
 * checked the CPU. 8 fp32 lanes, 16 registers: product tiles of 4 rows x 2 vectors,
 * recurrent blocks of 4 vectors (32 state columns) with 2 interleaved partial sums.
 */
#include "kernels/gdn.h"

#if defined(__x86_64__)

#include "kernels/cpu/avx2_begin.h"

#define GEMM_MR 4
#define GEMM_NV 2
#define REC_NB 4
#define REC_IU 2
#define FS_NV 8
#define GDN_ISA_NAME "avx2"

#include "kernels/cpu/vec_avx2.inc"

#include "kernels/cpu/gdn_simd.inc"

#include "kernels/cpu/avx2_end.h"

const hy_gdn_ops *hy_gdn_ops_avx2(void) { return &k_gdn_simd; }

#else
const hy_gdn_ops *hy_gdn_ops_avx2(void) { return NULL; }
#endif
