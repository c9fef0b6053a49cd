/*
 * The Intel-tuned AVX-512 matmul kernels for CPUs without AVX-512 BF16 (Skylake-SP, Cascade Lake,
 * Ice Lake, Tiger / Rocket Lake): matmul_avx512.c compiled again with MM_AVX512_INTEL and
 * MM_AVX512_NOBF16. The same sums in the same order as hy_matmul_avx512_intel() with fp32
 * activations, and the same layouts asked of the loader; bf16 activations (the opt-in fast
 * prefill) are rounded in integer code and multiplied by fp32 FMAs, the avx2 tier's way, and
 * the fast decode keeps the exact sums. Exports hy_matmul_avx512_nobf16(); kernels/cpu/
 * dispatch.c picks it where the CPU lacks AVX512_BF16.
 */
#define MM_AVX512_INTEL 1
#define MM_AVX512_NOBF16 1
#define HY_AVX512_NO_BF16 1 /* kernels/cpu/avx512_begin.h: a target without avx512bf16 */
#include "kernels/cpu/matmul_avx512.c"
