/* GDN delta-rule throughput, recurrent vs chunked, real per-layer dims of Qwen3.6-27B
 * (Hk=16, Hv=48, dk=dv=128), T=512, one thread. Prints tokens/s (per layer); no asserts. */
#include "kernels/gdn.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) * 0x1p-53 * 2.0 - 1.0);
}

int main(void) {
    const hy_gdn_dims d = {16, 48, 128, 128};
    const int T = 512, C = 64, reps = 2;
    const size_t nk = (size_t)T * d.Hk * d.dk, nv = (size_t)T * d.Hv * d.dv, ng = (size_t)T * d.Hv;
    const size_t ns = (size_t)d.Hv * d.dk * d.dv;
    float *q = malloc(nk * 4), *k = malloc(nk * 4), *v = malloc(nv * 4), *g = malloc(ng * 4);
    float *beta = malloc(ng * 4), *s = calloc(ns, 4), *o = malloc(nv * 4);
    float *scr = malloc(hy_gdn_chunked_scratch_floats(&d, C) * 4);
    if (!q || !k || !v || !g || !beta || !s || !o || !scr) { fprintf(stderr, "oom\n"); return 1; }
    uint64_t seed = 1;
    for (size_t i = 0; i < nk; i++) { q[i] = frand(&seed); k[i] = frand(&seed); }
    for (size_t i = 0; i < nv; i++) v[i] = frand(&seed);
    for (size_t i = 0; i < ng; i++) { g[i] = -expf(2.5f * frand(&seed) - 1.5f); beta[i] = 0.5f + 0.5f * frand(&seed); }
    hy_l2norm_scale(q, T * d.Hk, d.dk, 1.0f / sqrtf((float)d.dk));
    hy_l2norm_scale(k, T * d.Hk, d.dk, 1.0f);

    double best_r = 1e30, best_c = 1e30;
    for (int r = 0; r < reps; r++) {
        memset(s, 0, ns * 4);
        double t0 = now_s();
        hy_gdn_recurrent(&d, T, 0, d.Hv, q, k, v, g, beta, s, o);
        double t1 = now_s();
        memset(s, 0, ns * 4);
        hy_gdn_chunked(&d, T, C, 0, d.Hv, q, k, v, g, beta, s, o, scr);
        double t2 = now_s();
        if (t1 - t0 < best_r) best_r = t1 - t0;
        if (t2 - t1 < best_c) best_c = t2 - t1;
    }
    printf("gdn delta rule, Hk=%d Hv=%d dk=%d dv=%d, T=%d, 1 thread, scalar ref (best of %d)\n",
           d.Hk, d.Hv, d.dk, d.dv, T, reps);
    printf("  %-10s %10s %14s\n", "form", "ms", "tokens/s/layer");
    printf("  %-10s %10.1f %14.0f\n", "recurrent", best_r * 1e3, T / best_r);
    printf("  %-10s %10.1f %14.0f\n", "chunked64", best_c * 1e3, T / best_c);
    free(q); free(k); free(v); free(g); free(beta); free(s); free(o); free(scr);
    return 0;
}
