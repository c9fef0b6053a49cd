/* Closes the region kernels/cpu/avx512_begin.h opened. No include guard. */
#if defined(__clang__) && !defined(HY_AVX512_EMU)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
