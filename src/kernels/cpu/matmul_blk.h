/*
 * Block sizes of the bf16-activation GEMM (matmul_gemm.inc), shared with
 * hy_matmul_scratch_bytes (matmul_ref.c), which sizes every thread's scratch for them.
 * Internal to kernels/cpu.
 */
#ifndef HY_KERNELS_CPU_MATMUL_BLK_H
#define HY_KERNELS_CPU_MATMUL_BLK_H

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

#endif
