/*
 * AVX-512 instance of the Gated DeltaNet kernels (template: gdn_simd.inc). Compiled for the
 * avx512 tier only, inside the target region of kernels/cpu/avx512_begin.h, so the rest of the
 * binary stays baseline x86-64; the table must only be used after kernels/cpu/dispatch.c checked
 * the CPU (hy_isa_supported).
 * 16 fp32 lanes, 32 registers: product tiles of 4 rows x 4 vectors, recurrent blocks of
 * 2 vectors (32 state columns) with 4 interleaved partial sums, or of whole rows (8 vectors,
 * 128 columns) for one token.
 */
#include "kernels/gdn.h"

#if defined(__x86_64__)

#include "kernels/cpu/avx512_begin.h"

#define GEMM_MR 4
#define GEMM_NV 4
#define REC_NB 2
#define REC_IU 4
#define REC1_NB 8
#define FS_NV 8
#define GDN_ISA_NAME "avx512"

#include "kernels/cpu/vec_avx512.inc"

#include "kernels/cpu/gdn_simd.inc"

#include "kernels/cpu/avx512_end.h"

const hy_gdn_ops *hy_gdn_ops_avx512(void) { return &k_gdn_simd; }

#else
const hy_gdn_ops *hy_gdn_ops_avx512(void) { return NULL; }
#endif
