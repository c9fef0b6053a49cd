/*
 * Block sizes of the bf16-activation GEMM (matmul_gemm.inc), shared with
 * hy_matmul_scratch_bytes (matmul_ref.c), which sizes every thread's scratch for them.
 * Internal to kernels/cpu.
 */
#ifndef HY_KERNELS_CPU_MATMUL_BLK_H
#define HY_KERNELS_CPU_MATMUL_BLK_H

#include "kernels/matmul.h"

#include <stddef.h>

#define MG_MC 128 /* rows of one packed weight panel (multiple of 32) */
#define MG_KC 256 /* columns of one block (multiple of 32) */
#define MG_NB 512 /* tokens whose bf16 activations are kept at once */

/* Scratch bytes of the bf16 GEMM for K columns: parked accumulators [MG_NB][MG_MC] fp32,
 * the packed weight panel [MG_MC][MG_KC] bf16, and the tokens as bf16 [ceil(K/KC)][MG_NB][MG_KC]. */
static inline size_t hy_mg_scratch_bytes(int K) {
    const size_t nkb = (size_t)((K > 0 ? K : 1) + MG_KC - 1) / MG_KC;
    return (size_t)MG_NB * MG_MC * 4 + (size_t)MG_MC * MG_KC * 2 + nkb * MG_NB * MG_KC * 2;
}

/* The AMX GEMM (matmul_amx.c) takes rows in blocks of MG_AMX_MC (2 threads, T = 512, 27B and
 * 0.8B shapes: 1.07-1.15x blocks of MG_MC, except 0.95x on 3584 x 1024) with the same token and
 * column blocks: a record of what the converted tokens hold, parked accumulators
 * [MG_NB][MG_AMX_MC] fp32, a converted FP8G / Q8 / Q4 block [MG_AMX_MC][MG_KC] bf16, the tokens as
 * bf16 as above, three times (the exact sums' three parts of each activation). */
#define MG_AMX_MC 512
static inline size_t hy_mg_amx_scratch_bytes(int K) {
    const size_t nkb = (size_t)((K > 0 ? K : 1) + MG_KC - 1) / MG_KC;
    return (size_t)MG_NB * MG_AMX_MC * 4 + (size_t)MG_AMX_MC * MG_KC * 2 + 3 * nkb * MG_NB * MG_KC * 2;
}
/* Row-group tiles (BF16G / FP8G: matmul_grp.inc, matmul_amx.c) read ng consecutive groups of
 * gs bytes as ng streams. A prefetch p bytes into a group's stream (p >= gs: past its end) goes,
 * past the end, as far into the group ng further on, which the next tile reads, not into the
 * next group, which this tile is reading: the offset from the group's start. Straight ahead, the
 * start of every group but the last of each tile came in cold. */
static inline size_t hy_grp_pf_off(size_t p, size_t gs, int ng) {
    return p < gs ? p : p + (size_t)(ng - 1) * gs;
}

/* The scratch header (HY_MATMUL_SCRATCH_HDR bytes) in two parts: the SIMD instances' record of
 * what they keep in the scratch (matmul_simd.inc), then the AMX instance's (matmul_amx.c), which
 * runs the Intel instance for what it does not take itself and so shares its scratch. */
#define MM_HDR_SIMD_BYTES 64
#define MM_HDR_AMX_BYTES 64

_Static_assert(MM_HDR_SIMD_BYTES + MM_HDR_AMX_BYTES <= HY_MATMUL_SCRATCH_HDR, "matmul scratch header parts");

#endif
