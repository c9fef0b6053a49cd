/*
 * Opens a region compiled for the avx2 tier (close it with kernels/cpu/avx2_end.h): every
 * function up to there may use AVX2, FMA and F16C, while the rest of the binary stays baseline
 * x86-64, so such code must only run after kernels/cpu/dispatch.c checked the CPU. With
 * HY_AVX2_VNNI defined, AVX-VNNI too (the avx2 tier's instance for CPUs that have it). The avx512
 * tier's files use avx512_begin.h / avx512_end.h the same way. No include guard: each pair of
 * includes is one region.
 */
#if defined(__clang__) && defined(HY_AVX2_VNNI)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#if defined(HY_AVX2_VNNI)
#pragma GCC target("avx2,fma,f16c,avxvnni")
#else
#pragma GCC target("avx2,fma,f16c")
#endif
#endif

#include <immintrin.h>
