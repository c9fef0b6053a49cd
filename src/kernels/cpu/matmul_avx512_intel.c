/*
 * The AVX-512 matmul kernels tuned for Intel cores: matmul_avx512.c compiled again with
 * MM_AVX512_INTEL (its header says what differs and what was measured). Exports
 * hy_matmul_avx512_intel(); kernels/cpu/dispatch.c chooses between the two instances.
 */
#define MM_AVX512_INTEL 1
#include "kernels/cpu/matmul_avx512.c"
