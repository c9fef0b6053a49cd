/* Memory read bandwidth on the caller's thread pool (see membw.h). The vector loops carry
 * target attributes and run only after hy_cpu_detect said the CPU and OS support them. */
#include "base/membw.h"

#include "base/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) static float read_avx2(const float *p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    }
    float out[8];
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    return out[0] + out[7];
}

__attribute__((target("avx512f"))) static float read_avx512(const float *p, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
#endif

static float read_lines(const float *p, size_t n) {
    float s = 0;
    for (size_t i = 0; i < n; i += 16) s += p[i]; /* one touch per cache line */
    return s;
}

typedef struct membw_job {
    const float *buf;
    size_t per; /* floats per thread (multiple of 64) */
    int kind;   /* 2 avx512, 1 avx2, 0 scalar */
    volatile float sink;
} membw_job;

static void membw_run(void *arg, int ith, int nth) {
    membw_job *j = arg;
    (void)nth;
    const float *p = j->buf + j->per * (size_t)ith;
    float s;
#if defined(__x86_64__)
    if (j->kind == 2) s = read_avx512(p, j->per);
    else if (j->kind == 1) s = read_avx2(p, j->per);
    else
#endif
        s = read_lines(p, j->per);
    if (s == 1234.5f) j->sink = s; /* keeps the loads alive; practically never true */
}

void hy_membw_measure(hy_threadpool *tp, const float *buf, size_t n_floats, int passes, hy_membw *out) {
    const int nth = hy_threadpool_size(tp);
    out->gbs_wall = out->gbs_cpu = 0.0;
    hy_cpu_features f;
    hy_cpu_detect(&f);
    membw_job j = {.buf = buf, .per = (n_floats / (size_t)nth) & ~(size_t)63};
    const double bytes = (double)j.per * (double)nth * sizeof(float);
    for (int p = 0; p < (passes > 0 ? passes : 1); p++) {
        /* ymm loads first, then zmm and ymm in turn: on Zen 4 a stream of 256-bit loads read
         * 3-10% more from DRAM than one of 512-bit loads (alternated in one process, most
         * minutes; equal on the fastest), so a limit measured with zmm loads alone sat below
         * what the GEMV kernels reached */
        j.kind = f.avx512f && p % 2 ? 2 : f.avx2 ? 1 : 0;
        double wall, cpu;
        hy_threadpool_run_timed(tp, membw_run, &j, &wall, &cpu);
        if (wall > 0 && bytes / wall / 1e9 > out->gbs_wall) out->gbs_wall = bytes / wall / 1e9;
        if (cpu > 0 && bytes / cpu / 1e9 > out->gbs_cpu) out->gbs_cpu = bytes / cpu / 1e9;
    }
}
