/*
 * Compute peaks measured on the spot, with the caller's thread pool, so a prefill benchmark
 * can state what fraction of the machine's arithmetic it reached in the same process, next to
 * the work (on a shared machine the figure moves minute to minute, like the bandwidth:
 * base/membw.h).
 *
 * The loops are twelve independent chains of one instruction (fp32 FMA on ymm or zmm, the
 * bf16 pair dot vdpbf16ps, the int8 quad dot vpdpbusd): enough to cover latency x throughput
 * on current cores. Ops count multiply + add = 2 (a bf16 pair dot 4 per lane, an int8 quad
 * dot 8 per lane). AMX: four independent 16x16x32 bf16 tile products per iteration. bench/bench_machine.c reports the same loops with 1 and N threads.
 *
 * Threading: hy_peak_measure runs one job on the pool (the caller is thread 0); not reentrant
 * on one pool, like every pool job. The loops themselves use no shared state.
 */
#ifndef HY_BASE_PEAK_H
#define HY_BASE_PEAK_H

#include "base/cpu.h"
#include "base/threadpool.h"

#include <stdbool.h>

typedef enum hy_peak_kernel {
    HY_PEAK_FP32_YMM, /* AVX2 + FMA */
    HY_PEAK_FP32_ZMM, /* AVX-512F */
    HY_PEAK_BF16_ZMM, /* AVX-512 BF16 */
    HY_PEAK_INT8_ZMM, /* AVX-512 VNNI */
    HY_PEAK_AMX_BF16, /* AMX TDPBF16PS (asks the OS for the tile state: hy_cpu_amx_permit) */
} hy_peak_kernel;

/* Whether this CPU (and OS) can run kernel k. */
bool hy_peak_kernel_ok(const hy_cpu_features *f, hy_peak_kernel k);
/* Runs kernel k for iters iterations on the calling thread (only where hy_peak_kernel_ok);
 * returns a value derived from all its work, so nothing is optimised away. */
float hy_peak_loop(hy_peak_kernel k, long iters);
/* Ops one hy_peak_loop(k, iters) call performs. */
double hy_peak_loop_ops(hy_peak_kernel k, long iters);

typedef struct hy_peak {
    double fp32_wall, fp32_cpu; /* GFLOP/s of fp32 FMA (zmm where the CPU has AVX-512F, else ymm;
                                 * 0 without either): per elapsed second, and per second of the
                                 * slowest thread's CPU time */
    double bf16_wall, bf16_cpu; /* GFLOP/s of vdpbf16ps, 0 where the CPU lacks it */
    double amx_wall, amx_cpu;   /* GFLOP/s of AMX TDPBF16PS, 0 unless asked for and usable */
} hy_peak;

/* Best-of-`passes` peaks with every thread of tp; each pass runs iters iterations per thread
 * (1 << 20 takes about 2 ms on a 3 GHz core). amx: also the AMX peak (the kernels use it). */
void hy_peak_measure(hy_threadpool *tp, long iters, int passes, bool amx, hy_peak *out);

#endif
