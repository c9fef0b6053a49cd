/* Attention kernel throughput (kernels/attn.h) for every ISA tier this machine runs, on the
 * attention shape of Qwen3.5-0.8B (8 query heads, 2 KV heads, head_dim 256; Qwen3.6-27B has the
 * same head_dim and 6 query heads per KV head) and of the tiny fixtures (head_dim 32):
 *   prefill: one KV head's 4 query heads over a block of 64 new tokens at the end of an
 *            n-token context (the forward pass's unit of work), GFLOP/s of scores + values;
 *   decode:  one token, 4 query heads (27B: 6) over an n-token cache: GB/s of K and V read (the
 *            cache of 32K positions is 64 MiB per KV head, i.e. streamed from DRAM).
 * K and V as the engine's cache holds them (memory/kv_cache.h): one head's keys in transposed
 * blocks, its values in rows, 64-byte aligned (the cache is page-aligned; before, this bench
 * used malloc's 16-byte alignment, which split every vector load across two cache lines and
 * showed the fp32 kernels at ~2/3 of their speed in the engine).
 * Where AMX is usable (hy_cpu_amx_select), the fast prefill's variant (hy_attn_ops_amx: bf16
 * products on tiles) gets a column of its own for the prefill shapes.
 * One thread; times are thread-CPU times (the machine is shared), best of reps; ratios vs ref.
 * Usage: bench_attn [reps]. Prints a table; no asserts. */
#include "base/alloc.h"
#include "base/fp.h"
#include "kernels/attn.h"
#include "kernels/matmul.h"
#include "kernels/cpu/dispatch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) * 0x1p-53 * 2.0 - 1.0);
}

typedef struct shape {
    const char *name;
    int dh, ng, nt, n_ctx; /* n_ctx: keys visible to the last token */
    int kv;                /* HY_ATTN_KV_*: the cache's element type */
} shape;

int main(int argc, char **argv) {
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() | 0x8000u); /* FTZ, as the engine's threads run (base/threadpool.h) */
#endif
    const int reps = argc > 1 ? atoi(argv[1]) : 3;
    hy_cpu_features f;
    hy_cpu_detect(&f);
    const hy_attn_ops *tiers[HY_ISA_COUNT];
    int nt = 0;
    for (int i = 0; i < HY_ISA_COUNT; i++)
        if (hy_isa_supported(&f, (hy_isa)i) && hy_attn_ops_get((hy_isa)i)) tiers[nt++] = hy_attn_ops_get((hy_isa)i);
    bool amx = false;
    hy_err e = {0};
    if (hy_cpu_amx_select(&f, getenv("HYLA_AMX"), true, &amx, &e) != 0) amx = false;
    const hy_attn_ops *amx_ops = amx ? hy_attn_ops_amx() : NULL;
    static const shape shapes[] = {
        {"prefill dh256 g4 64 tok @ 512", 256, 4, 64, 512, HY_ATTN_KV_F32},
        {"prefill dh256 g4 64 tok @ 4096", 256, 4, 64, 4096, HY_ATTN_KV_F32},
        {"prefill dh256 g4 64 tok @ 32768", 256, 4, 64, 32768, HY_ATTN_KV_F32},
        {"prefill dh256 g6 64 tok @ 4096", 256, 6, 64, 4096, HY_ATTN_KV_F32},
        {"prefill dh32 g2 64 tok @ 4096", 32, 2, 64, 4096, HY_ATTN_KV_F32},
        {"decode dh256 g4 @ 4096", 256, 4, 1, 4096, HY_ATTN_KV_F32},
        {"decode dh256 g4 @ 32768", 256, 4, 1, 32768, HY_ATTN_KV_F32},
        {"decode dh256 g6 @ 32768", 256, 6, 1, 32768, HY_ATTN_KV_F32},
        {"decode dh32 g2 @ 32768", 32, 2, 1, 32768, HY_ATTN_KV_F32},
        {"decode dh256 g4 @ 32768, bf16 cache", 256, 4, 1, 32768, HY_ATTN_KV_BF16},
        {"decode dh256 g4 @ 32768, fp8 cache", 256, 4, 1, 32768, HY_ATTN_KV_FP8},
        {"decode dh256 g6 @ 32768, fp8 cache", 256, 6, 1, 32768, HY_ATTN_KV_FP8},
    };
    printf("  %-46s", "shape (one KV head)");
    for (int i = 0; i < nt; i++) printf(" %18s", tiers[i]->name);
    if (amx_ops) printf(" %18s", "amx bf16 (prefill)");
    printf("\n");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const shape *s = &shapes[si];
        /* n_ctx keys in whole blocks (the cache's capacity is too) */
        const size_t ld = (size_t)s->dh, n = ((size_t)s->n_ctx + HY_ATTN_KB - 1) / HY_ATTN_KB * HY_ATTN_KB;
        float *k = hy_calloc_aligned(n * ld, sizeof(float)), *v = hy_calloc_aligned(n * ld, sizeof(float));
        float *q = hy_calloc_aligned((size_t)s->nt * s->ng * s->dh, sizeof(float));
        float *o = hy_calloc_aligned((size_t)s->nt * s->ng * s->dh, sizeof(float));
        const size_t wf = hy_attn_work_floats(s->nt * s->ng) + hy_attn_kv_work_floats(s->dh), wa = hy_attn_amx_work_floats(s->nt * s->ng, s->dh);
        float *w = hy_calloc_aligned(wf > wa ? wf : wa, sizeof(float));
        if (!k || !v || !q || !o || !w) return 1;
        uint64_t seed = 1;
        for (size_t i = 0; i < n * ld; i++) k[i] = frand(&seed), v[i] = frand(&seed); /* k: any order is some keys */
        for (size_t i = 0; i < (size_t)s->nt * s->ng * s->dh; i++) q[i] = frand(&seed);
        /* a bf16 / fp8 cache: the same values rounded, in place (the buffers are big enough) */
        for (size_t i = 0; i < n * ld && s->kv != HY_ATTN_KV_F32; i++) {
            if (s->kv == HY_ATTN_KV_BF16)
                ((uint16_t *)k)[i] = hy_f32_to_bf16(k[i]), ((uint16_t *)v)[i] = hy_f32_to_bf16(v[i]);
            else ((uint8_t *)k)[i] = hy_fp8_e4m3_encode(k[i]), ((uint8_t *)v)[i] = hy_fp8_e4m3_encode(v[i]);
        }
        hy_attn_args a = {.q = q, .ldq_t = (size_t)s->ng * s->dh, .ldq_h = (size_t)s->dh, .out = o,
                          .ldo_t = (size_t)s->ng * s->dh, .ldo_h = (size_t)s->dh, .k = k, .v = v, .ld = ld, .kv_fmt = s->kv,
                          .nt = s->nt, .ng = s->ng, .n_past = s->n_ctx - s->nt, .dh = s->dh,
                          .scale = 1.0f / sqrtf((float)s->dh)};
        double keys = 0; /* visible (row, key) pairs */
        for (int t = 0; t < s->nt; t++) keys += (double)s->ng * (a.n_past + t + 1);
        const double flops = 4.0 * s->dh * keys, bytes = 2.0 * n * (size_t)s->dh * hy_attn_kv_es(s->kv);
        const int nk = nt + (amx_ops && s->nt > 1); /* kernels measured: the tiers, then AMX */
        double best[HY_ISA_COUNT + 1];
        for (int i = 0; i < nk; i++) best[i] = 1e30;
        for (int r = 0; r < reps; r++)
            for (int i = 0; i < nk; i++) { /* tiers alternate, so drift hits all alike */
                const hy_attn_ops *ops = i < nt ? tiers[i] : amx_ops;
                int inner = s->nt == 1 ? 4 : 1;
                double c0 = cpu_s();
                for (int it = 0; it < inner; it++) ops->gqa(&a, w);
                double dt = (cpu_s() - c0) / inner;
                if (dt < best[i]) best[i] = dt;
            }
        printf("  %-46s", s->name);
        for (int i = 0; i < nk; i++) {
            if (s->nt == 1) printf(" %7.1f GB/s (x%4.1f)", bytes / best[i] / 1e9, best[0] / best[i]);
            else printf(" %6.1f GF/s (x%4.1f)", flops / best[i] / 1e9, best[0] / best[i]);
        }
        printf("\n");
        hy_free(k), hy_free(v), hy_free(q), hy_free(o), hy_free(w);
    }
    printf("  (GF/s: 4·head_dim flops per visible (query row, key) pair; GB/s: K and V bytes of the cache per\n"
           "   decode call; xN = speed-up vs ref; one thread, thread-CPU time, best of %d)\n", reps);
    return 0;
}
