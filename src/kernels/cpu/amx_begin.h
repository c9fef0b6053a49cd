/*
 * Opens a region compiled for the AMX kernels (close it with kernels/cpu/amx_end.h): AVX-512
 * F/BW/DQ/VL/BF16 and AMX-TILE/BF16, so such code must only run where kernels/cpu/dispatch.c
 * selected AMX (hy_cpu_amx_select). No include guard: each pair of includes is one region.
 *
 * With HY_AMX_EMU (a test build, cmake -DHYLA_AMX_EMU=ON) the region is compiled for AVX-512
 * F/BW/DQ/VL only and the tile instructions and the bf16 conversion come from
 * kernels/cpu/amx_tile_emu.h, so those kernels run, slowly, on AVX-512 machines without AMX.
 */
#if defined(HY_AMX_EMU)
#if defined(__clang__)
#error "the AMX emulation (HY_AMX_EMU) is written for GCC"
#endif
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
#include "kernels/cpu/amx_tile_emu.h"
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16,amx-int8"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16,amx-int8")
#endif

#include <immintrin.h>
