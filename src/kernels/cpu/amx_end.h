/* Closes the region kernels/cpu/amx_begin.h opened. No include guard. */
#if defined(__clang__) && !defined(HY_AMX_EMU)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
