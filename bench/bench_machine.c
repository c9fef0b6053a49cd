/* What this machine can do, measured on the spot, so kernel numbers can be read as a fraction
 * of the roofline: memory read bandwidth (large buffer, streaming loads), fp32 FMA peak
 * (AVX2 and AVX-512), bf16 dot peak (vdpbf16ps) and int8 dot peak (vpdpbusd), each with 1 and
 * 2 threads (or argv[1] threads max). Every figure is best and median of several repetitions,
 * timed on thread-CPU time (robust on a shared machine) and, for comparison, on wall time.
 * Ops are counted as multiply + add = 2 (a bf16 pair dot = 4 flops per lane, an int8 quad dot =
 * 8 ops per lane). Only instructions the CPU supports (base/cpu.h) are run.
 * Usage: bench_machine [max_threads] [buffer_MiB]. Prints a table; no asserts. */
#include "base/alloc.h"
#include "base/cpu.h"
#include "base/peak.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roof_kernels.inc"

/* ---- threads ------------------------------------------------------------------------------ */

enum { W_READ_AVX512, W_READ_AVX2, W_READ_SCALAR, W_FMA_AVX2, W_FMA_AVX512, W_BF16, W_INT8 };

typedef struct shared {
    pthread_barrier_t start;
    int what;
    const float *buf;
    size_t n;    /* floats in buf */
    long iters;  /* compute loops */
    int nth;
    int pass;    /* runs so far (the read alternates its load width) */
} shared;

typedef struct worker {
    shared *sh;
    int ith;
    double t0, t1, c0, c1; /* wall and thread-CPU times */
    float sink;
} worker;

static void *worker_run(void *arg) {
    worker *w = arg;
    shared *sh = w->sh;
    const size_t per = (sh->n / (size_t)sh->nth) & ~(size_t)63;
    const float *p = sh->buf + per * (size_t)w->ith;
    pthread_barrier_wait(&sh->start);
    w->t0 = now_s();
    w->c0 = cpu_s();
    switch (sh->what) {
    case W_READ_AVX512: /* 256- and 512-bit loads in turn, as base/membw.c (Zen 4 reads more with 256-bit) */
        w->sink = sh->pass % 2 ? read_avx512(p, per) : read_avx2(p, per);
        break;
    case W_READ_AVX2: w->sink = read_avx2(p, per); break;
    case W_READ_SCALAR: w->sink = read_scalar(p, per); break;
    case W_FMA_AVX2: w->sink = hy_peak_loop(HY_PEAK_FP32_YMM, sh->iters); break;
    case W_FMA_AVX512: w->sink = hy_peak_loop(HY_PEAK_FP32_ZMM, sh->iters); break;
    case W_BF16: w->sink = hy_peak_loop(HY_PEAK_BF16_ZMM, sh->iters); break;
    case W_INT8: w->sink = hy_peak_loop(HY_PEAK_INT8_ZMM, sh->iters); break;
    }
    w->c1 = cpu_s();
    w->t1 = now_s();
    return NULL;
}

/* Wall seconds from the first thread's start to the last thread's end; *cpu gets the longest
 * thread-CPU time (what the work costs when the threads actually hold a core). */
static double run_once(shared *sh, volatile float *sink, double *cpu) {
    pthread_t th[64];
    worker w[64];
    pthread_barrier_init(&sh->start, NULL, (unsigned)sh->nth);
    for (int i = 0; i < sh->nth; i++) {
        w[i] = (worker){.sh = sh, .ith = i};
        if (i > 0) pthread_create(&th[i], NULL, worker_run, &w[i]);
    }
    worker_run(&w[0]);
    for (int i = 1; i < sh->nth; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&sh->start);
    double t0 = w[0].t0, t1 = w[0].t1, c = 0;
    for (int i = 0; i < sh->nth; i++) {
        if (w[i].t0 < t0) t0 = w[i].t0;
        if (w[i].t1 > t1) t1 = w[i].t1;
        if (w[i].c1 - w[i].c0 > c) c = w[i].c1 - w[i].c0;
        *sink += w[i].sink;
    }
    *cpu = c;
    sh->pass++;
    return t1 - t0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define REPS 9

/* Prints one row: rate = work / time, best and median over REPS on thread-CPU time, and the
 * best on wall time (equal on an idle machine; on a shared one the CPU-time figures are the
 * machine's capability, the wall figure what this run got). */
static void measure(const char *name, const char *unit, shared *sh, double work, volatile float *sink) {
    double rate[REPS], wall_best = 0, cpu;
    run_once(sh, sink, &cpu); /* warm-up: page faults, clocks */
    for (int r = 0; r < REPS; r++) {
        const double wall = run_once(sh, sink, &cpu);
        rate[r] = work / cpu;
        if (work / wall > wall_best) wall_best = work / wall;
    }
    qsort(rate, REPS, sizeof rate[0], cmp_double);
    printf("  %-34s %2d thr %10.1f %10.1f %10.1f  %s\n", name, sh->nth, rate[REPS - 1], rate[REPS / 2], wall_best,
           unit);
}

int main(int argc, char **argv) {
    const int max_th = argc > 1 ? atoi(argv[1]) : 2;
    const size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 1024;
    if (max_th < 1 || max_th > 64 || mib < 64) {
        fprintf(stderr, "usage: bench_machine [max_threads 1..64] [buffer_MiB >= 64]\n");
        return 2;
    }
    hy_cpu_features f;
    hy_cpu_detect(&f);
    char desc[256];
    hy_cpu_describe(&f, desc, sizeof desc);
    printf("machine: %s\n", desc);
    printf("  %-34s %6s %10s %10s %10s\n", "measurement", "", "best", "median", "best wall");

    const size_t n = mib * (1u << 20) / sizeof(float);
    float *buf = hy_alloc_pages(n * sizeof(float)); /* huge pages: 4 KiB ones read 10-50% slower here */
    if (!buf) { fprintf(stderr, "cannot allocate %zu MiB\n", mib); return 1; }
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023) * 1e-3f; /* touch every page */
    volatile float sink = 0;
    shared sh = {.buf = buf, .n = n};
    const long iters = 10 * 1000 * 1000;

    int ths[2] = {1, max_th};
    const int nrows = max_th > 1 ? 2 : 1;
    for (int ti = 0; ti < nrows; ti++) {
        sh.nth = ths[ti];
        sh.what = f.avx512f ? W_READ_AVX512 : f.avx2 ? W_READ_AVX2 : W_READ_SCALAR;
        char name[64];
        snprintf(name, sizeof name, "memory read (%zu MiB, %s)", mib,
                 f.avx512f ? "ymm/zmm loads" : f.avx2 ? "ymm loads" : "1 load/line");
        const double bytes = (double)((n / (size_t)sh.nth) & ~(size_t)63) * sh.nth * sizeof(float);
        measure(name, "GB/s", &sh, bytes / 1e9, &sink);
    }
    for (int ti = 0; ti < nrows; ti++) {
        sh.nth = ths[ti];
        sh.iters = iters;
        static const struct { int what; hy_peak_kernel k; const char *name, *unit; } peaks[] = {
            {W_FMA_AVX2, HY_PEAK_FP32_YMM, "fp32 FMA, AVX2 (ymm)", "GFLOP/s"},
            {W_FMA_AVX512, HY_PEAK_FP32_ZMM, "fp32 FMA, AVX-512 (zmm)", "GFLOP/s"},
            {W_BF16, HY_PEAK_BF16_ZMM, "bf16 dot, vdpbf16ps (zmm)", "GFLOP/s"},
            {W_INT8, HY_PEAK_INT8_ZMM, "int8 dot, vpdpbusd (zmm)", "Gop/s"},
        };
        for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++) {
            if (!hy_peak_kernel_ok(&f, peaks[i].k)) continue;
            sh.what = peaks[i].what;
            measure(peaks[i].name, peaks[i].unit, &sh, 1e-9 * hy_peak_loop_ops(peaks[i].k, iters) * sh.nth, &sink);
        }
    }
    printf("  (best/median over %d repetitions on thread-CPU time; 'best wall' on elapsed time, lower when the\n"
           "   machine is shared)\n", REPS);
    hy_free_pages(buf, n * sizeof(float));
    return sink == 12345.678f; /* keeps sink alive; practically always 0 */
}
