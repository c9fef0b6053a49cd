/*
 * The avx2 tier's Intel instance for cores with AVX-VNNI (Alder Lake and later): matmul_avx2.c
 * compiled a third time with MM_AVX2_INTEL and MM_AVX2_VNNI, its Q8 / Q4 dot products one
 * vpdpbusd on ymm (u8 weights, their zero point 128 / 8 taken out by the activations' sums, as
 * in the avx512 tier) instead of vpmaddubsw + vpmaddwd. Integer sums: the same results as the
 * other instances. Exports hy_matmul_avx2_vnni(); kernels/cpu/dispatch.c picks it where the
 * CPU has AVX-VNNI and the Intel instance is chosen.
 */
#define MM_AVX2_INTEL 1
#define MM_AVX2_VNNI 1
#include "kernels/cpu/matmul_avx2.c"
