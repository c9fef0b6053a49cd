/* GDN delta-rule throughput for every ISA tier this machine runs, real per-layer dims of
 * Qwen3.6-27B (Hk=16, Hv=48, dk=dv=128):
 *   prefill T=512: recurrent and chunked (C=64) forms, tokens/s per layer;
 *   decode T=1: recurrent, tokens/s per layer, once with one layer's state (3 MiB, cache-warm)
 *   and once cycling over 24 layers' states (72 MiB, i.e. streamed from DRAM as in a real
 *   48-layer decode).
 * One thread unless argv[1] gives a thread count (heads split across threads). Tiers are run
 * alternately in each repetition; times are thread-CPU times (the machine is shared), best of reps,
 * with ratios vs ref.
 * Usage: bench_gdn [threads] [reps]. Prints a table; no asserts. */
#include "base/alloc.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/gdn.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Thread-CPU time: on a shared machine this is what the work costs while it holds a core
 * (wall time would mostly measure the other tenants). */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) * 0x1p-53 * 2.0 - 1.0);
}

enum { K_REC, K_CHUNK, K_DECODE };

typedef struct job {
    const hy_gdn_ops *o;
    const hy_gdn_dims *d;
    int kind, T, h0, h1, n_tok, n_states;
    const float *q, *k, *v, *g, *beta;
    float *state, *out, *scr;
    double cpu; /* thread-CPU seconds of this job */
} job;

static void *job_run(void *arg) {
    job *j = arg;
    const hy_gdn_dims *d = j->d;
    const double c0 = cpu_s();
    if (j->kind == K_REC) {
        j->o->recurrent(d, j->T, j->h0, j->h1, j->q, j->k, j->v, j->g, j->beta, j->state, j->out);
    } else if (j->kind == K_CHUNK) {
        j->o->chunked(d, j->T, 64, j->h0, j->h1, j->q, j->k, j->v, j->g, j->beta, j->state, j->out, j->scr);
    } else {
        const size_t ok = (size_t)d->Hk * d->dk, ov = (size_t)d->Hv * d->dv, og = (size_t)d->Hv;
        const size_t ns = (size_t)d->Hv * d->dk * d->dv;
        for (int t = 0; t < j->n_tok; t++) {
            const int tt = t % j->T;
            j->o->recurrent(d, 1, j->h0, j->h1, j->q + tt * ok, j->k + tt * ok, j->v + tt * ov, j->g + tt * og,
                            j->beta + tt * og, j->state + (size_t)(t % j->n_states) * ns, j->out + tt * ov);
        }
    }
    j->cpu = cpu_s() - c0;
    return NULL;
}

/* Runs kind on nth threads (heads split evenly); returns the longest thread-CPU time. */
static double timed(job base, int nth, float **scr) {
    pthread_t th[64];
    job jobs[64];
    for (int i = 0; i < nth; i++) {
        jobs[i] = base;
        jobs[i].h0 = base.d->Hv * i / nth;
        jobs[i].h1 = base.d->Hv * (i + 1) / nth;
        jobs[i].scr = scr[i];
        if (i > 0) pthread_create(&th[i], NULL, job_run, &jobs[i]);
    }
    job_run(&jobs[0]);
    double c = jobs[0].cpu;
    for (int i = 1; i < nth; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].cpu > c) c = jobs[i].cpu;
    }
    return c;
}

int main(int argc, char **argv) {
    const int nth = argc > 1 ? atoi(argv[1]) : 1;
    const int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (nth < 1 || nth > 64 || reps < 1) { fprintf(stderr, "usage: bench_gdn [threads 1..64] [reps]\n"); return 2; }
    const hy_gdn_dims d = {16, 48, 128, 128};
    const int T = 512, C = 64, n_dec_states = 24, n_dec_tok = 48;
    const size_t nk = (size_t)T * d.Hk * d.dk, nv = (size_t)T * d.Hv * d.dv, ng = (size_t)T * d.Hv;
    const size_t ns = (size_t)d.Hv * d.dk * d.dv;
    float *q = malloc(nk * 4), *k = malloc(nk * 4), *v = malloc(nv * 4), *g = malloc(ng * 4);
    /* the states on huge pages, as a sequence's (memory/gdn_state.c) */
    float *beta = malloc(ng * 4), *s = hy_alloc_pages(ns * n_dec_states * 4), *o = malloc(nv * 4);
    float *scr[64];
    if (!q || !k || !v || !g || !beta || !s || !o) { fprintf(stderr, "oom\n"); return 1; }
    for (int i = 0; i < nth; i++) {
        scr[i] = malloc(hy_gdn_chunked_scratch_floats(&d, C) * 4);
        if (!scr[i]) { fprintf(stderr, "oom\n"); return 1; }
    }
    uint64_t seed = 1;
    for (size_t i = 0; i < nk; i++) { q[i] = frand(&seed); k[i] = frand(&seed); }
    for (size_t i = 0; i < nv; i++) v[i] = frand(&seed);
    for (size_t i = 0; i < ng; i++) { g[i] = -expf(2.5f * frand(&seed) - 1.5f); beta[i] = 0.5f + 0.5f * frand(&seed); }
    for (size_t i = 0; i < ns * n_dec_states; i++) s[i] = 0.01f * frand(&seed);
    hy_l2norm_scale(q, T * d.Hk, d.dk, 1.0f / sqrtf((float)d.dk));
    hy_l2norm_scale(k, T * d.Hk, d.dk, 1.0f);

    hy_cpu_features f;
    hy_cpu_detect(&f);
    char desc[256];
    hy_cpu_describe(&f, desc, sizeof desc);
    const hy_gdn_ops *tiers[HY_ISA_COUNT];
    int nt = 0;
    for (int i = 0; i < HY_ISA_COUNT; i++)
        if (hy_isa_supported(&f, (hy_isa)i) && hy_gdn_ops_get((hy_isa)i)) tiers[nt++] = hy_gdn_ops_get((hy_isa)i);

    /* best seconds per tier per measurement: prefill recurrent, prefill chunked, decode warm, decode cold */
    double best[HY_ISA_COUNT][4];
    for (int i = 0; i < nt; i++)
        for (int m = 0; m < 4; m++) best[i][m] = 1e30;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < nt; i++) {
            job b = {.o = tiers[i], .d = &d, .T = T, .q = q, .k = k, .v = v, .g = g, .beta = beta, .out = o};
            double t;
            b.state = s;
            b.kind = K_REC;
            if (tiers[i] != hy_gdn_ops_ref() || r == 0) { /* scalar recurrent is slow: once */
                t = timed(b, nth, scr);
                if (t < best[i][0]) best[i][0] = t;
            }
            b.kind = K_CHUNK;
            t = timed(b, nth, scr);
            if (t < best[i][1]) best[i][1] = t;
            b.kind = K_DECODE;
            b.n_tok = n_dec_tok;
            b.n_states = 1;
            t = timed(b, nth, scr);
            if (t < best[i][2]) best[i][2] = t;
            b.n_states = n_dec_states;
            t = timed(b, nth, scr);
            if (t < best[i][3]) best[i][3] = t;
        }
    }
    printf("gdn delta rule, Hk=%d Hv=%d dk=%d dv=%d, %d thread(s), best of %d (thread-CPU time), tokens/s per layer\n", d.Hk, d.Hv,
           d.dk, d.dv, nth, reps);
    printf("cpu: %s\n", desc);
    printf("  %-7s %16s %16s %18s %18s\n", "isa", "prefill rec T512", "prefill chunk64", "decode (1 state)",
           "decode (24 states)");
    for (int i = 0; i < nt; i++) {
        printf("  %-7s", tiers[i]->name);
        for (int m = 0; m < 4; m++) {
            const double tok = m < 2 ? T : n_dec_tok;
            char cell[64];
            snprintf(cell, sizeof cell, "%.0f (x%.1f)", tok / best[i][m], best[0][m] / best[i][m]);
            printf(" %*s", m < 2 ? 16 : 18, cell);
        }
        printf("\n");
    }
    printf("  (xN = speed-up vs ref; decode over 24 states streams %.0f MiB of fp32 state per token sweep)\n",
           (double)ns * 4 * n_dec_states / (1 << 20));
    free(q); free(k); free(v); free(g); free(beta); hy_free_pages(s, ns * n_dec_states * 4); free(o);
    for (int i = 0; i < nth; i++) free(scr[i]);
    return 0;
}
