/*
 * The avx2 matmul kernels tuned for Intel cores without AVX-512 (Haswell to Alder / Raptor Lake
 * and later clients): matmul_avx2.c compiled again with MM_AVX2_INTEL (its header says what
 * differs and what was measured). Exports hy_matmul_avx2_intel(); kernels/cpu/dispatch.c
 * chooses between the two instances.
 */
#define MM_AVX2_INTEL 1
#include "kernels/cpu/matmul_avx2.c"
