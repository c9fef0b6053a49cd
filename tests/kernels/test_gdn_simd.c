/* kernels/gdn SIMD variants against the scalar reference, for every ISA tier this machine runs
 * (tiers it cannot run are reported and skipped). Randomised shapes incl. dv/dk that are not a
 * multiple of the vector width, T not a multiple of the chunk, odd chunk sizes, nonzero initial
 * states, extreme decays; the split prepare/scan API in "all prepares first" order.
 * Tolerance: max |x - ref| / max(1, |ref|) <= 1e-5 over outputs and states (as test_gdn.c);
 * the worst errors are printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "kernels/cpu/dispatch.h"
#include "kernels/gdn.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5

typedef struct rng { uint64_t s; } rng;
static double rng_u(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}
static float rng_sym(rng *r) { return (float)(2.0 * rng_u(r) - 1.0); }

static float *xalloc(size_t n) {
    float *p = calloc(n ? n : 1, sizeof(float));
    assert_non_null(p);
    return p;
}

static double rel_err(const float *a, const float *ref, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)ref[i]);
        if (isnan(e)) return INFINITY;
        double s = fabs((double)ref[i]);
        e /= s > 1.0 ? s : 1.0;
        if (e > m) m = e;
    }
    return m;
}

/* The tiers to test besides ref: every one this CPU supports and this build has. */
static int n_tiers;
static const hy_gdn_ops *tiers[HY_ISA_COUNT];

static int setup(void **st) {
    (void)st;
    hy_cpu_features f;
    hy_cpu_detect(&f);
    char desc[256];
    hy_cpu_describe(&f, desc, sizeof desc);
    printf("cpu: %s\n", desc);
    for (int i = HY_ISA_REF + 1; i < HY_ISA_COUNT; i++) {
        const hy_gdn_ops *o = hy_gdn_ops_get((hy_isa)i);
        if (!o || !hy_isa_supported(&f, (hy_isa)i)) {
            printf("tier %s: not runnable here, skipped\n", hy_isa_name((hy_isa)i));
            continue;
        }
        tiers[n_tiers++] = o;
    }
    return 0;
}

typedef struct gdn_in {
    hy_gdn_dims d;
    int T;
    float *q, *k, *v, *g, *beta, *s0;
} gdn_in;

static size_t n_out(const gdn_in *in) { return (size_t)in->T * in->d.Hv * in->d.dv; }
static size_t n_state(const hy_gdn_dims *d) { return (size_t)d->Hv * d->dk * d->dv; }

/* extreme: mix in g in {-1e4, -80, 0} and beta in {0, 1} */
static void gdn_in_make(gdn_in *in, hy_gdn_dims d, int T, uint64_t seed, int nonzero_state, int extreme) {
    rng r = {seed};
    in->d = d;
    in->T = T;
    const size_t nk = (size_t)T * d.Hk * d.dk, nv = (size_t)T * d.Hv * d.dv, ng = (size_t)T * d.Hv;
    in->q = xalloc(nk); in->k = xalloc(nk); in->v = xalloc(nv);
    in->g = xalloc(ng); in->beta = xalloc(ng); in->s0 = xalloc(n_state(&d));
    for (size_t i = 0; i < nk; i++) { in->q[i] = rng_sym(&r); in->k[i] = rng_sym(&r); }
    for (size_t i = 0; i < nv; i++) in->v[i] = rng_sym(&r);
    for (size_t i = 0; i < ng; i++) {
        in->g[i] = -expf((float)(5.0 * rng_u(&r) - 4.0));
        in->beta[i] = (float)rng_u(&r);
        if (extreme) {
            double u = rng_u(&r);
            if (u < 0.2) in->g[i] = -1e4f;
            else if (u < 0.5) in->g[i] = 0.0f;
            else if (u < 0.55) in->g[i] = -80.0f;
            u = rng_u(&r);
            if (u < 0.3) in->beta[i] = 0.0f;
            else if (u < 0.6) in->beta[i] = 1.0f;
        }
    }
    if (nonzero_state)
        for (size_t i = 0; i < n_state(&d); i++) in->s0[i] = rng_sym(&r);
    hy_l2norm_scale(in->q, T * d.Hk, d.dk, 1.0f / sqrtf((float)d.dk));
    hy_l2norm_scale(in->k, T * d.Hk, d.dk, 1.0f);
}

static void gdn_in_free(gdn_in *in) {
    free(in->q); free(in->k); free(in->v); free(in->g); free(in->beta); free(in->s0);
}

/* chunked == 0: recurrent; else chunked with chunk size C. Runs ops over all heads in two
 * head ranges (exercises h0 > 0). */
static void run(const hy_gdn_ops *o, const gdn_in *in, int chunked, int C, float *state, float *out) {
    const hy_gdn_dims *d = &in->d;
    memcpy(state, in->s0, n_state(d) * sizeof(float));
    const int hm = d->Hv / 2;
    if (!chunked) {
        o->recurrent(d, in->T, hm, d->Hv, in->q, in->k, in->v, in->g, in->beta, state, out);
        o->recurrent(d, in->T, 0, hm, in->q, in->k, in->v, in->g, in->beta, state, out);
        return;
    }
    float *scr = xalloc(hy_gdn_chunked_scratch_floats(d, C));
    o->chunked(d, in->T, C, hm, d->Hv, in->q, in->k, in->v, in->g, in->beta, state, out, scr);
    o->chunked(d, in->T, C, 0, hm, in->q, in->k, in->v, in->g, in->beta, state, out, scr);
    free(scr);
}

/* worst rel error of tier o vs ref on one input (outputs and final state) */
static double cmp_tier(const hy_gdn_ops *o, const gdn_in *in, int chunked, int C) {
    const hy_gdn_dims *d = &in->d;
    float *o1 = xalloc(n_out(in)), *o2 = xalloc(n_out(in));
    float *s1 = xalloc(n_state(d)), *s2 = xalloc(n_state(d));
    run(hy_gdn_ops_ref(), in, chunked, C, s1, o1);
    run(o, in, chunked, C, s2, o2);
    double eo = rel_err(o2, o1, n_out(in)), es = rel_err(s2, s1, n_state(d));
    free(o1); free(o2); free(s1); free(s2);
    return eo > es ? eo : es;
}

static const hy_gdn_dims k_dims[] = {
    {2, 6, 32, 32}, {1, 3, 128, 128}, {2, 4, 16, 24}, {3, 6, 8, 80}, {1, 2, 37, 19}, {2, 2, 128, 40},
};
#define N_DIMS (sizeof k_dims / sizeof k_dims[0])

static void test_recurrent(void **st) {
    (void)st;
    const int Ts[] = {1, 2, 3, 17, 65, 130};
    for (int ti = 0; ti < n_tiers; ti++) {
        double worst = 0;
        for (size_t di = 0; di < N_DIMS; di++)
            for (size_t t = 0; t < sizeof Ts / sizeof Ts[0]; t++)
                for (int mode = 0; mode < 3; mode++) { /* zero state, random state, extreme gates */
                    gdn_in in;
                    gdn_in_make(&in, k_dims[di], Ts[t], 7000 + di * 131 + t * 7 + (uint64_t)mode, mode > 0, mode == 2);
                    double e = cmp_tier(tiers[ti], &in, 0, 0);
                    if (e > TOL)
                        printf("FAIL %s recurrent Hk=%d Hv=%d dk=%d dv=%d T=%d mode=%d: %.3g\n", tiers[ti]->name,
                               in.d.Hk, in.d.Hv, in.d.dk, in.d.dv, in.T, mode, e);
                    assert_true(e <= TOL);
                    if (e > worst) worst = e;
                    gdn_in_free(&in);
                }
        printf("%s recurrent vs ref: %zu shapes x T in {1..130} x {zero, random, extreme}: max rel err %.3g\n",
               tiers[ti]->name, N_DIMS, worst);
    }
}

static void test_chunked(void **st) {
    (void)st;
    const int Ts[] = {1, 2, 3, 5, 17, 63, 64, 65, 100, 127, 128, 129, 200, 257};
    for (int ti = 0; ti < n_tiers; ti++) {
        double worst = 0;
        for (size_t di = 0; di < N_DIMS; di++)
            for (size_t t = 0; t < sizeof Ts / sizeof Ts[0]; t++)
                for (int mode = 0; mode < 3; mode++) {
                    if (k_dims[di].dk == 128 && Ts[t] > 130 && mode != 1) continue; /* keep it quick */
                    gdn_in in;
                    gdn_in_make(&in, k_dims[di], Ts[t], 9000 + di * 131 + t * 7 + (uint64_t)mode, mode > 0, mode == 2);
                    double e = cmp_tier(tiers[ti], &in, 1, 64);
                    if (e > TOL)
                        printf("FAIL %s chunked64 Hk=%d Hv=%d dk=%d dv=%d T=%d mode=%d: %.3g\n", tiers[ti]->name,
                               in.d.Hk, in.d.Hv, in.d.dk, in.d.dv, in.T, mode, e);
                    assert_true(e <= TOL);
                    if (e > worst) worst = e;
                    gdn_in_free(&in);
                }
        printf("%s chunked(C=64) vs ref: %zu shapes x T in {1..257} x {zero, random, extreme}: max rel err %.3g\n",
               tiers[ti]->name, N_DIMS, worst);
    }
}

static void test_chunk_sizes(void **st) {
    (void)st;
    const int Cs[] = {1, 3, 7, 16, 17, 32, 128};
    gdn_in in;
    gdn_in_make(&in, (hy_gdn_dims){2, 4, 16, 24}, 150, 77, 1, 0);
    for (int ti = 0; ti < n_tiers; ti++) {
        double worst = 0;
        for (size_t i = 0; i < sizeof Cs / sizeof Cs[0]; i++) {
            double e = cmp_tier(tiers[ti], &in, 1, Cs[i]);
            assert_true(e <= TOL);
            if (e > worst) worst = e;
        }
        printf("%s chunked, C in {1,3,7,16,17,32,128}, T=150, dv=24: max rel err %.3g\n", tiers[ti]->name, worst);
    }
    gdn_in_free(&in);
}

/* The split API used the parallel way: every (h, c) prepared first into its own record, then
 * scanned head by head. Must be bit-identical to the same tier's one-call chunked form, for
 * the reference too. */
static void test_prepare_scan_split(void **st) {
    (void)st;
    gdn_in in;
    gdn_in_make(&in, (hy_gdn_dims){2, 6, 32, 40}, 150, 4321, 1, 0);
    const hy_gdn_dims *d = &in.d;
    const int C = 32, nc = (in.T + C - 1) / C;
    const size_t pf = hy_gdn_chunk_prep_floats(d, C);
    for (int ti = -1; ti < n_tiers; ti++) {
        const hy_gdn_ops *o = ti < 0 ? hy_gdn_ops_ref() : tiers[ti];
        float *oa = xalloc(n_out(&in)), *ob = xalloc(n_out(&in));
        float *sa = xalloc(n_state(d)), *sb = xalloc(n_state(d));
        float *scr = xalloc(hy_gdn_chunked_scratch_floats(d, C));
        float *preps = xalloc(pf * (size_t)d->Hv * (size_t)nc);
        float *work = xalloc(hy_gdn_chunk_work_floats(d, C));
        memcpy(sa, in.s0, n_state(d) * sizeof(float));
        memcpy(sb, in.s0, n_state(d) * sizeof(float));
        o->chunked(d, in.T, C, 0, d->Hv, in.q, in.k, in.v, in.g, in.beta, sa, oa, scr);
        /* prepare in a scrambled order: chunks last-first, heads interleaved */
        for (int c = nc - 1; c >= 0; c--)
            for (int h = 0; h < d->Hv; h++)
                o->chunk_prepare(d, in.T, C, h, c, in.q, in.k, in.v, in.g, in.beta,
                                 preps + pf * ((size_t)h * nc + c), work);
        for (int h = d->Hv - 1; h >= 0; h--)
            for (int c = 0; c < nc; c++)
                o->chunk_scan(d, in.T, C, h, c, in.q, in.k, preps + pf * ((size_t)h * nc + c), sb, ob, work);
        assert_memory_equal(oa, ob, n_out(&in) * sizeof(float));
        assert_memory_equal(sa, sb, n_state(d) * sizeof(float));
        printf("%s: prepare-all-then-scan == chunked, bit-identical\n", o->name);
        free(oa); free(ob); free(sa); free(sb); free(scr); free(preps); free(work);
    }
    gdn_in_free(&in);
}

/* prefill chunked + decode recurrent on one tier vs the same on ref */
static void test_continuation(void **st) {
    (void)st;
    const hy_gdn_dims d = {1, 3, 128, 128};
    const int T1 = 70, T2 = 5, T = T1 + T2;
    gdn_in in;
    gdn_in_make(&in, d, T, 99, 1, 0);
    const size_t ok = (size_t)d.Hk * d.dk, ov = (size_t)d.Hv * d.dv, og = (size_t)d.Hv;
    for (int ti = 0; ti < n_tiers; ti++) {
        float *outs[2], *states[2];
        for (int w = 0; w < 2; w++) {
            const hy_gdn_ops *o = w ? tiers[ti] : hy_gdn_ops_ref();
            float *scr = xalloc(hy_gdn_chunked_scratch_floats(&d, 64));
            outs[w] = xalloc(n_out(&in));
            states[w] = xalloc(n_state(&d));
            memcpy(states[w], in.s0, n_state(&d) * sizeof(float));
            o->chunked(&d, T1, 64, 0, d.Hv, in.q, in.k, in.v, in.g, in.beta, states[w], outs[w], scr);
            for (int t = T1; t < T; t++)
                o->recurrent(&d, 1, 0, d.Hv, in.q + t * ok, in.k + t * ok, in.v + t * ov, in.g + t * og,
                             in.beta + t * og, states[w], outs[w] + t * ov);
            free(scr);
        }
        double eo = rel_err(outs[1], outs[0], n_out(&in)), es = rel_err(states[1], states[0], n_state(&d));
        printf("%s continuation chunked(70) + 5x recurrent(1) vs ref: out %.3g state %.3g\n", tiers[ti]->name,
               eo, es);
        assert_true(eo <= TOL && es <= TOL);
        for (int w = 0; w < 2; w++) { free(outs[w]); free(states[w]); }
    }
    gdn_in_free(&in);
}

/* Straight §5.7 in double: the common truth for ref and the SIMD tiers. */
static void naive_double(const gdn_in *in, double *state, double *out) {
    const hy_gdn_dims *d = &in->d;
    const int rep = d->Hv / d->Hk;
    double *m = calloc((size_t)d->dv, sizeof(double));
    assert_non_null(m);
    for (size_t i = 0; i < n_state(d); i++) state[i] = in->s0[i];
    for (int t = 0; t < in->T; t++)
        for (int h = 0; h < d->Hv; h++) {
            const int kh = h / rep;
            const float *q = in->q + ((size_t)t * d->Hk + kh) * d->dk, *k = in->k + ((size_t)t * d->Hk + kh) * d->dk;
            const float *v = in->v + ((size_t)t * d->Hv + h) * d->dv;
            double *S = state + (size_t)h * d->dk * d->dv;
            const double a = exp((double)in->g[(size_t)t * d->Hv + h]), b = in->beta[(size_t)t * d->Hv + h];
            for (int i = 0; i < d->dk * d->dv; i++) S[i] *= a;
            for (int j = 0; j < d->dv; j++) {
                double s = 0;
                for (int i = 0; i < d->dk; i++) s += S[i * d->dv + j] * k[i];
                m[j] = b * (v[j] - s);
            }
            for (int i = 0; i < d->dk; i++)
                for (int j = 0; j < d->dv; j++) S[i * d->dv + j] += k[i] * m[j];
            for (int j = 0; j < d->dv; j++) {
                double s = 0;
                for (int i = 0; i < d->dk; i++) s += S[i * d->dv + j] * q[i];
                out[((size_t)t * d->Hv + h) * d->dv + j] = s;
            }
        }
    free(m);
}

static double rel_err_d(const float *a, const double *ref, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - ref[i]);
        if (isnan(e)) return INFINITY;
        e /= fabs(ref[i]) > 1.0 ? fabs(ref[i]) : 1.0;
        if (e > m) m = e;
    }
    return m;
}

static void test_vs_double(void **st) {
    (void)st;
    gdn_in in;
    gdn_in_make(&in, (hy_gdn_dims){1, 3, 128, 128}, 130, 31337, 1, 0);
    double *rs = calloc(n_state(&in.d), sizeof(double)), *ro = calloc(n_out(&in), sizeof(double));
    assert_non_null(rs); assert_non_null(ro);
    naive_double(&in, rs, ro);
    float *s = xalloc(n_state(&in.d)), *o = xalloc(n_out(&in));
    for (int ti = -1; ti < n_tiers; ti++) {
        const hy_gdn_ops *op = ti < 0 ? hy_gdn_ops_ref() : tiers[ti];
        double e[2][2];
        for (int chunked = 0; chunked < 2; chunked++) {
            run(op, &in, chunked, 64, s, o);
            e[chunked][0] = rel_err_d(o, ro, n_out(&in));
            e[chunked][1] = rel_err_d(s, rs, n_state(&in.d));
            assert_true(e[chunked][0] <= TOL && e[chunked][1] <= TOL);
        }
        printf("%-6s vs naive double (dk=dv=128, T=130, random state): recurrent out %.3g state %.3g, "
               "chunked out %.3g state %.3g\n", op->name, e[0][0], e[0][1], e[1][0], e[1][1]);
    }
    free(s); free(o); free(rs); free(ro);
    gdn_in_free(&in);
}

static void test_conv(void **st) {
    (void)st;
    const int Cs[] = {10, 37, 64, 200};
    const int Ks[] = {4, 2, 1};
    for (int ti = 0; ti < n_tiers; ti++) {
        double worst = 0;
        for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ci++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
                const int T = 23, C = Cs[ci], K = Ks[ki], P = K - 1;
                rng r = {100 + ci * 10 + ki};
                float *x = xalloc((size_t)T * C), *w = xalloc((size_t)C * K);
                float *s0 = xalloc((size_t)(P ? P : 1) * C);
                for (int i = 0; i < T * C; i++) x[i] = 4.0f * rng_sym(&r);
                for (int i = 0; i < C * K; i++) w[i] = rng_sym(&r);
                for (int i = 0; i < P * C; i++) s0[i] = rng_sym(&r);
                float *ya = xalloc((size_t)T * C), *yb = xalloc((size_t)T * C);
                float *sa = xalloc((size_t)(P ? P : 1) * C), *sb = xalloc((size_t)(P ? P : 1) * C);
                memcpy(sa, s0, (size_t)P * C * sizeof(float));
                memcpy(sb, s0, (size_t)P * C * sizeof(float));
                hy_gdn_conv_silu(T, C, K, 0, C, x, w, sa, ya);
                /* pieces (incl. shorter than K-1) and two channel ranges with ragged edges */
                const int pieces[] = {1, 2, 7, 13};
                int t0 = 0;
                for (int p = 0; p < 4; p++) {
                    const int c1 = C / 3;
                    tiers[ti]->conv_silu(pieces[p], C, K, 0, c1, x + (size_t)t0 * C, w, sb, yb + (size_t)t0 * C);
                    tiers[ti]->conv_silu(pieces[p], C, K, c1, C, x + (size_t)t0 * C, w, sb, yb + (size_t)t0 * C);
                    t0 += pieces[p];
                }
                assert_int_equal(t0, T);
                double e = rel_err(yb, ya, (size_t)T * C);
                assert_true(e <= TOL);
                assert_memory_equal(sa, sb, (size_t)P * C * sizeof(float));
                if (e > worst) worst = e;
                free(x); free(w); free(s0); free(ya); free(yb); free(sa); free(sb);
            }
        printf("%s conv1d+SiLU vs ref (C in {10,37,64,200}, K in {4,2,1}, pieces, channel ranges): "
               "max rel err %.3g, states identical\n", tiers[ti]->name, worst);
    }
}

static void test_l2norm(void **st) {
    (void)st;
    const int dims[] = {1, 7, 16, 37, 128};
    for (int ti = 0; ti < n_tiers; ti++) {
        double worst = 0;
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
            const int n = 5, dim = dims[i];
            rng r = {55 + i};
            float *a = xalloc((size_t)n * dim), *b = xalloc((size_t)n * dim);
            for (int j = 0; j < n * dim; j++) a[j] = b[j] = 3.0f * rng_sym(&r);
            for (int j = 0; j < dim; j++) a[j] = b[j] = 0.0f; /* a zero row stays 0 */
            hy_l2norm_scale(a, n, dim, 0.25f);
            tiers[ti]->l2norm_scale(b, n, dim, 0.25f);
            double e = rel_err(b, a, (size_t)n * dim);
            assert_true(e <= TOL);
            for (int j = 0; j < dim; j++) assert_true(b[j] == 0.0f);
            if (e > worst) worst = e;
            free(a); free(b);
        }
        printf("%s l2norm vs ref: max rel err %.3g\n", tiers[ti]->name, worst);
    }
}

/* SwiGLU's silu(g)·u: close to the reference, and bit-identical however the row is split. */
static void test_silu_mul(void **st) {
    (void)st;
    enum { N = 203 };
    rng r = {77};
    float g0[N], u[N], ref[N], a[N], b[N];
    for (int i = 0; i < N; i++) {
        g0[i] = 12.0f * rng_sym(&r);
        u[i] = 2.0f * rng_sym(&r);
    }
    g0[5] = -100.0f; /* exp(-x) past the clamp */
    g0[6] = 100.0f;
    g0[7] = 0.0f;
    memcpy(ref, g0, sizeof ref);
    hy_silu_mul(N, ref, u);
    for (int ti = 0; ti < n_tiers; ti++) {
        memcpy(a, g0, sizeof a);
        memcpy(b, g0, sizeof b);
        tiers[ti]->silu_mul(N, a, u);
        const int cuts[] = {0, 3, 40, 41, 117, N};
        for (int c = 0; c + 1 < 6; c++) tiers[ti]->silu_mul(cuts[c + 1] - cuts[c], b + cuts[c], u + cuts[c]);
        assert_memory_equal(a, b, sizeof a);
        double e = rel_err(a, ref, N);
        assert_true(e <= TOL);
        printf("%s silu_mul vs ref: max rel err %.3g, split rows identical\n", tiers[ti]->name, e);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vs_double),
        cmocka_unit_test(test_recurrent),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_chunk_sizes),
        cmocka_unit_test(test_prepare_scan_split),
        cmocka_unit_test(test_continuation),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_l2norm),
        cmocka_unit_test(test_silu_mul),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
