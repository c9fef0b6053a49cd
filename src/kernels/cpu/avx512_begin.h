/*
 * Opens a region compiled for the avx512 tier (close it with kernels/cpu/avx512_end.h): every
 * function up to there may use AVX-512 F/BW/DQ/VL/BF16/VNNI, while the rest of the binary stays
 * baseline x86-64, so such code must only run after kernels/cpu/dispatch.c checked the CPU.
 * No include guard: each pair of includes is one region.
 *
 * With HY_AVX512_EMU (a test build, cmake -DHYLA_AVX512_EMU=ON) the region is compiled for
 * AVX2+FMA+F16C instead and the AVX-512 intrinsics come from kernels/cpu/avx512_emu.h, so the
 * tier's code runs, slowly, on machines without AVX-512.
 */
#if defined(HY_AVX512_EMU)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/cpu/avx512_emu.h"
#elif defined(HY_AVX512_NO_BF16) && defined(__clang__)
/* a region for CPUs without AVX512_BF16: the compiler refuses every bf16 instruction in it */
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c"))), apply_to = function)
#elif defined(HY_AVX512_NO_BF16)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")
#endif

#include <immintrin.h>
