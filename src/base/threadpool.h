/*
 * Persistent compute thread pool (pthreads + C11 atomics), ggml style: a job is
 * one function fn(ctx, ith, nth) run by all nth threads at once (the caller is
 * thread 0), with hy_threadpool_barrier() between phases inside the job.
 *
 * Threading rules: one thread (the engine thread) owns a pool and is the only
 * one that calls hy_threadpool_run; jobs never nest. hy_threadpool_barrier may
 * only be called from inside a job, by every thread of that job the same number
 * of times. Idle workers block on a condition variable (an idle server burns no
 * CPU); inside a job, waits spin briefly and then yield, because a job's phases
 * are short and the machine may be shared.
 *
 * Why this shape: splitting work by output rows with a fixed per-element
 * algorithm makes results independent of the thread count (bit for bit), and a
 * single job per forward step keeps the number of wake-ups at one per step.
 *
 * Denormals: every thread runs jobs with x86's FTZ set (denormal results become
 * zero; the caller's own MXCSR is restored when the job ends). An Intel core takes
 * a microcode assist of ~100 cycles per operation that makes a denormal, and the
 * Gated DeltaNet's decays make plenty: the 0.8B random model's prefill spent ~5x
 * longer in its delta rule with them (pp512 230 -> 278 tok/s with fp32
 * activations, 416 -> 700 with bf16; 27B slice:4 363 -> 421 with bf16). Results
 * that change are below 2^-126 (1.2e-38); every thread flushes the same way, so
 * they stay independent of the thread count. Not DAZ (denormal inputs read as
 * zero): FTZ alone was as fast, and the FP8 kernels hold e4m3 codes as value·2^-120,
 * so DAZ would zero the e4m3 subnormals (tests/kernels/test_matmul_simd.c
 * test_fp8_codes_in_pool). oneDNN and TensorFlow flush in their compute threads too.
 */
#ifndef HY_BASE_THREADPOOL_H
#define HY_BASE_THREADPOOL_H

#include "base/error.h"

#include <stddef.h>

typedef struct hy_threadpool hy_threadpool;
typedef void (*hy_job_fn)(void *ctx, int ith, int nth);

/* n_threads >= 1 (the caller counts as one; n_threads-1 workers are started). */
int hy_threadpool_create(hy_threadpool **out, int n_threads, hy_err *err);
void hy_threadpool_free(hy_threadpool *tp);
int hy_threadpool_size(const hy_threadpool *tp);

/* Runs fn(ctx, ith, nth) on every thread; returns when all have returned. */
void hy_threadpool_run(hy_threadpool *tp, hy_job_fn fn, void *ctx);

/* Runs fn like hy_threadpool_run with every thread starting it together (after a barrier), for
 * measurements: *wall gets the elapsed seconds from the first thread's start to the last one's
 * end, *cpu the longest thread-CPU seconds a thread spent in fn. */
void hy_threadpool_run_timed(hy_threadpool *tp, hy_job_fn fn, void *ctx, double *wall, double *cpu);

/* Inside a job: waits until all nth threads reached the barrier. Everything
 * written before the barrier is visible to every thread after it. */
void hy_threadpool_barrier(hy_threadpool *tp);
/* A byte range to prefetch. */
typedef struct hy_pf_range {
    const void *p;
    size_t n;
} hy_pf_range;
/* The same barrier; while this thread waits for the others it prefetches the ranges r[0..nr)
 * in order, a few cache lines per spin, until released: they are what it reads first after
 * the barrier, so the time a decode step's threads spend waiting for each other streams
 * weights. The last thread to arrive prefetches nothing. */
void hy_threadpool_barrier_prefetch(hy_threadpool *tp, const hy_pf_range *r, int nr);

/* The [*i0, *i1) share of n items for thread ith of nth (contiguous, balanced). */
static inline void hy_split_range(int n, int ith, int nth, int *i0, int *i1) {
    int q = n / nth, r = n % nth;
    *i0 = ith * q + (ith < r ? ith : r);
    *i1 = *i0 + q + (ith < r ? 1 : 0);
}

#endif
