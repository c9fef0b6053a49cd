/*
 * Thread pool: workers sleep on a condition variable between jobs and spin
 * briefly (then yield) on atomics inside a job. A job is published by bumping
 * `gen`; each worker remembers the last generation it ran. Completion and
 * barriers are counted with atomics (sequentially consistent, so plain writes
 * made before a barrier are visible after it).
 */
#include "base/threadpool.h"


#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HY_SPIN_BEFORE_YIELD 2048
#define HY_SPIN_BEFORE_SLEEP 4096

struct hy_threadpool;

typedef struct hy_worker {
    struct hy_threadpool *tp;
    int ith;
    pthread_t thread;
} hy_worker;

struct hy_threadpool {
    int n;
    hy_worker *workers; /* [n-1] */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_sleeping;        /* guarded by mu */
    atomic_int gen;        /* job generation; bumped under mu */
    atomic_int stop;

    hy_job_fn fn;          /* written before gen is bumped */
    void *ctx;
    atomic_int n_done;     /* workers that finished the current job */

    atomic_int bar_count;
    atomic_int bar_phase;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void spin_wait_step(int *spins) {
    if (*spins < HY_SPIN_BEFORE_YIELD) {
        cpu_relax();
        (*spins)++;
    } else {
        sched_yield();
    }
}

/* Flush-to-zero (threadpool.h: why, and why not DAZ), returning the previous state. */
#if defined(__x86_64__) || defined(__SSE__)
#include <xmmintrin.h>
static unsigned ftz_on(void) {
    const unsigned prev = _mm_getcsr();
    _mm_setcsr(prev | 0x8000u); /* FTZ (bit 15) */
    return prev;
}
static void ftz_restore(unsigned prev) { _mm_setcsr(prev); }
#else
static unsigned ftz_on(void) { return 0; }
static void ftz_restore(unsigned prev) { (void)prev; }
#endif

static void *worker_main(void *arg) {
    hy_worker *w = arg;
    hy_threadpool *tp = w->tp;
    int seen = 0;
    ftz_on(); /* a worker only ever runs jobs */
    for (;;) {
        int spins = 0;
        int g;
        while ((g = atomic_load(&tp->gen)) == seen && !atomic_load(&tp->stop)) {
            if (spins < HY_SPIN_BEFORE_SLEEP) {
                cpu_relax();
                spins++;
                continue;
            }
            pthread_mutex_lock(&tp->mu);
            tp->n_sleeping++;
            while (atomic_load(&tp->gen) == seen && !atomic_load(&tp->stop)) pthread_cond_wait(&tp->cv, &tp->mu);
            tp->n_sleeping--;
            pthread_mutex_unlock(&tp->mu);
        }
        if (atomic_load(&tp->stop)) break;
        seen = g;
        tp->fn(tp->ctx, w->ith, tp->n);
        atomic_fetch_add(&tp->n_done, 1);
    }
    return NULL;
}

int hy_threadpool_create(hy_threadpool **out, int n_threads, hy_err *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return hy_err_set(err, HY_E_INVALID, "thread pool: n_threads %d out of range [1, 1024]", n_threads);
    hy_threadpool *tp = calloc(1, sizeof *tp);
    if (!tp) return hy_err_set(err, HY_E_NOMEM, "thread pool: out of memory");
    tp->n = n_threads;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv, NULL);
    atomic_init(&tp->gen, 0);
    atomic_init(&tp->stop, 0);
    atomic_init(&tp->n_done, 0);
    atomic_init(&tp->bar_count, 0);
    atomic_init(&tp->bar_phase, 0);
    if (n_threads > 1) {
        tp->workers = calloc((size_t)n_threads - 1, sizeof *tp->workers);
        if (!tp->workers) {
            hy_threadpool_free(tp);
            return hy_err_set(err, HY_E_NOMEM, "thread pool: out of memory");
        }
        for (int i = 0; i < n_threads - 1; i++) {
            tp->workers[i].tp = tp;
            tp->workers[i].ith = i + 1;
            if (pthread_create(&tp->workers[i].thread, NULL, worker_main, &tp->workers[i]) != 0) {
                tp->n = i + 1; /* only join what started */
                hy_threadpool_free(tp);
                return hy_err_set(err, HY_E_INTERNAL, "thread pool: pthread_create failed for worker %d", i + 1);
            }
        }
    }
    *out = tp;
    return HY_OK;
}

void hy_threadpool_free(hy_threadpool *tp) {
    if (!tp) return;
    if (tp->workers) {
        pthread_mutex_lock(&tp->mu);
        atomic_store(&tp->stop, 1);
        pthread_cond_broadcast(&tp->cv);
        pthread_mutex_unlock(&tp->mu);
        for (int i = 0; i < tp->n - 1; i++) pthread_join(tp->workers[i].thread, NULL);
        free(tp->workers);
    }
    pthread_cond_destroy(&tp->cv);
    pthread_mutex_destroy(&tp->mu);
    free(tp);
}

int hy_threadpool_size(const hy_threadpool *tp) { return tp->n; }

void hy_threadpool_run(hy_threadpool *tp, hy_job_fn fn, void *ctx) {
    const unsigned csr = ftz_on(); /* the caller's own state comes back afterwards */
    if (tp->n == 1) {
        fn(ctx, 0, 1);
        ftz_restore(csr);
        return;
    }
    tp->fn = fn;
    tp->ctx = ctx;
    atomic_store(&tp->n_done, 0);
    pthread_mutex_lock(&tp->mu);
    atomic_fetch_add(&tp->gen, 1);
    if (tp->n_sleeping > 0) pthread_cond_broadcast(&tp->cv);
    pthread_mutex_unlock(&tp->mu);

    fn(ctx, 0, tp->n);

    int spins = 0;
    while (atomic_load(&tp->n_done) != tp->n - 1) spin_wait_step(&spins);
    ftz_restore(csr);
}

/* One pool job timed per thread; t0 / t1 / cpu: tp->n entries each (one allocation). */
typedef struct timed_job {
    hy_threadpool *tp;
    hy_job_fn fn;
    void *ctx;
    double *t0, *t1, *cpu;
} timed_job;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void timed_run(void *arg, int ith, int nth) {
    timed_job *j = arg;
    hy_threadpool_barrier(j->tp); /* start together */
    const double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    j->t0[ith] = clock_s(CLOCK_MONOTONIC);
    j->fn(j->ctx, ith, nth);
    j->t1[ith] = clock_s(CLOCK_MONOTONIC);
    j->cpu[ith] = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
}

void hy_threadpool_run_timed(hy_threadpool *tp, hy_job_fn fn, void *ctx, double *wall, double *cpu) {
    const size_t n = (size_t)tp->n;
    double *times = malloc(3 * n * sizeof *times);
    *wall = *cpu = 0;
    if (!times) return; /* a measurement that could not run reports zero */
    timed_job job = {.tp = tp, .fn = fn, .ctx = ctx, .t0 = times, .t1 = times + n, .cpu = times + 2 * n};
    hy_threadpool_run(tp, timed_run, &job);
    double t0 = job.t0[0], t1 = job.t1[0];
    for (size_t i = 0; i < n; i++) {
        if (job.t0[i] < t0) t0 = job.t0[i];
        if (job.t1[i] > t1) t1 = job.t1[i];
        if (job.cpu[i] > *cpu) *cpu = job.cpu[i];
    }
    *wall = t1 - t0;
    free(times);
}

void hy_threadpool_barrier(hy_threadpool *tp) { hy_threadpool_barrier_prefetch(tp, NULL, 0); }

void hy_threadpool_barrier_prefetch(hy_threadpool *tp, const hy_pf_range *r, int nr) {
    int n = tp->n;
    if (n == 1) return;
    int phase = atomic_load(&tp->bar_phase);
    if (atomic_fetch_add(&tp->bar_count, 1) == n - 1) {
        atomic_store(&tp->bar_count, 0);
        atomic_fetch_add(&tp->bar_phase, 1);
        return;
    }
    int spins = 0, i = 0;
    const char *p = NULL;
    size_t left = 0; /* bytes of the current range not yet prefetched */
    while (atomic_load(&tp->bar_phase) == phase) {
        while (left == 0 && i < nr) {
            p = r[i].p;
            left = p ? r[i].n : 0;
            i++;
        }
        if (left == 0) {
            spin_wait_step(&spins);
            continue;
        }
        for (int j = 0; j < 4 && left > 0; j++) {
            __builtin_prefetch(p, 0, 2);
            const size_t step = left < 64 ? left : 64;
            p += step;
            left -= step;
        }
    }
}
