/* Compute peaks on the caller's thread pool (see peak.h). The vector loops carry target
 * attributes and run only after hy_cpu_detect said the CPU and OS support them. */
#include "base/peak.h"

/* Twelve independent accumulators written out (arrays would be kept in memory at -O2). */
#define PEAK_CHAINS 12
#define X12(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11)

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static float fp32_ymm(long iters) {
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
#define D(i) __m256 a##i = _mm256_set1_ps((float)i);
    X12(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define S(i) a##i = _mm256_fmadd_ps(a##i, x, y);
        X12(S)
#undef S
    }
    __m256 s = _mm256_setzero_ps();
#define R(i) s = _mm256_add_ps(s, a##i);
    X12(R)
#undef R
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0];
}

__attribute__((target("avx512f"))) static float fp32_zmm(long iters) {
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
#define D(i) __m512 a##i = _mm512_set1_ps((float)i);
    X12(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define S(i) a##i = _mm512_fmadd_ps(a##i, x, y);
        X12(S)
#undef S
    }
    __m512 s = _mm512_setzero_ps();
#define R(i) s = _mm512_add_ps(s, a##i);
    X12(R)
#undef R
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static float bf16_zmm(long iters) {
    const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3400);
#define D(i) __m512 a##i = _mm512_set1_ps((float)i);
    X12(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define S(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
        X12(S)
#undef S
    }
    __m512 s = _mm512_setzero_ps();
#define R(i) s = _mm512_add_ps(s, a##i);
    X12(R)
#undef R
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512vnni"))) static float int8_zmm(long iters) {
    const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
#define D(i) __m512i a##i = _mm512_set1_epi32(i);
    X12(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define S(i) a##i = _mm512_dpbusd_epi32(a##i, x, y);
        X12(S)
#undef S
    }
    __m512i s = _mm512_setzero_si512();
#define R(i) s = _mm512_add_epi32(s, a##i);
    X12(R)
#undef R
    return (float)_mm512_reduce_add_epi32(s);
}
/* AMX: four C tiles from two A and two B tiles that stay in registers (one TDPBF16PS per 16
 * cycles per core is the documented throughput; this keeps four independent accumulators). */
typedef struct peak_amx_cfg {
    unsigned char palette, start_row, reserved[14];
    unsigned short colsb[16];
    unsigned char rows[16];
} peak_amx_cfg;

__attribute__((target("amx-tile,amx-bf16"))) static float amx_bf16(long iters) {
    peak_amx_cfg c = {.palette = 1};
    for (int i = 0; i < 8; i++) c.colsb[i] = 64, c.rows[i] = 16;
    _tile_loadconfig(&c);
    unsigned short ab[512];
    for (int i = 0; i < 512; i++) ab[i] = 0x3c00; /* 2^-7 */
    float out[256];
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ab, 64);
    _tile_loadd(5, ab, 64);
    _tile_loadd(6, ab, 64);
    _tile_loadd(7, ab, 64);
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    return out[0];
}
#endif

bool hy_peak_kernel_ok(const hy_cpu_features *f, hy_peak_kernel k) {
#if defined(__x86_64__)
    switch (k) {
    case HY_PEAK_FP32_YMM: return f->avx2 && f->fma;
    case HY_PEAK_FP32_ZMM: return f->avx512f;
    case HY_PEAK_BF16_ZMM: return f->avx512f && f->avx512_bf16;
    case HY_PEAK_INT8_ZMM: return f->avx512f && f->avx512_vnni;
    case HY_PEAK_AMX_BF16: return hy_cpu_amx_permit(f);
    }
#endif
    (void)f;
    (void)k;
    return false;
}

float hy_peak_loop(hy_peak_kernel k, long iters) {
#if defined(__x86_64__)
    switch (k) {
    case HY_PEAK_FP32_YMM: return fp32_ymm(iters);
    case HY_PEAK_FP32_ZMM: return fp32_zmm(iters);
    case HY_PEAK_BF16_ZMM: return bf16_zmm(iters);
    case HY_PEAK_INT8_ZMM: return int8_zmm(iters);
    case HY_PEAK_AMX_BF16: return amx_bf16(iters);
    }
#endif
    (void)k;
    (void)iters;
    return 0.0f;
}

double hy_peak_loop_ops(hy_peak_kernel k, long iters) {
    if (k == HY_PEAK_AMX_BF16) return (double)iters * 4 * 16 * 16 * 32 * 2; /* four 16x16x32 tile products */
    const double per_lane = k == HY_PEAK_INT8_ZMM ? 8 : k == HY_PEAK_BF16_ZMM ? 4 : 2;
    const double lanes = k == HY_PEAK_FP32_YMM ? 8 : 16;
    return (double)iters * PEAK_CHAINS * lanes * per_lane;
}

typedef struct peak_job {
    hy_peak_kernel k;
    long iters;
    volatile float sink;
} peak_job;

static void peak_run(void *arg, int ith, int nth) {
    peak_job *j = arg;
    (void)ith;
    (void)nth;
    if (hy_peak_loop(j->k, j->iters) == 1234.5f) j->sink = 1; /* keeps the work alive; practically never true */
}

/* Best-of-passes GFLOP/s of kernel k on every thread: wall and slowest-thread CPU time. */
static void measure_kernel(hy_threadpool *tp, hy_peak_kernel k, long iters, int passes, double *gwall, double *gcpu) {
    *gwall = *gcpu = 0;
    peak_job j = {.k = k, .iters = iters};
    const double gflop = hy_peak_loop_ops(k, iters) * hy_threadpool_size(tp) / 1e9;
    for (int p = 0; p < (passes > 0 ? passes : 1); p++) {
        double wall, cpu;
        hy_threadpool_run_timed(tp, peak_run, &j, &wall, &cpu);
        if (wall > 0 && gflop / wall > *gwall) *gwall = gflop / wall;
        if (cpu > 0 && gflop / cpu > *gcpu) *gcpu = gflop / cpu;
    }
}

void hy_peak_measure(hy_threadpool *tp, long iters, int passes, bool amx, hy_peak *out) {
    *out = (hy_peak){0, 0, 0, 0, 0, 0};
    hy_cpu_features f;
    hy_cpu_detect(&f);
    const hy_peak_kernel k32 = hy_peak_kernel_ok(&f, HY_PEAK_FP32_ZMM) ? HY_PEAK_FP32_ZMM : HY_PEAK_FP32_YMM;
    if (hy_peak_kernel_ok(&f, k32)) measure_kernel(tp, k32, iters, passes, &out->fp32_wall, &out->fp32_cpu);
    if (hy_peak_kernel_ok(&f, HY_PEAK_BF16_ZMM))
        measure_kernel(tp, HY_PEAK_BF16_ZMM, iters, passes, &out->bf16_wall, &out->bf16_cpu);
    /* an iteration is 16x a bf16 one's work: the same time at 1/16 of the iterations */
    if (amx && hy_peak_kernel_ok(&f, HY_PEAK_AMX_BF16))
        measure_kernel(tp, HY_PEAK_AMX_BF16, iters / 16 > 0 ? iters / 16 : 1, passes, &out->amx_wall, &out->amx_cpu);
}
