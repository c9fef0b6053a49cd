/* kernels/attn: the SIMD grouped-query attention of every ISA tier this machine runs against
 * the scalar oracle (hy_ref_attn_head per row), tiers it cannot run are reported and skipped.
 * Cases: head_dim 32, 256 and ones that are not a multiple of the vector width (40, 72, 8);
 * groups of 1, 4, 6 query heads; decode (nt = 1) and prefill blocks (causal mask inside the
 * block) with n_past 0, odd, at and around the 64-key block size; q rows 2·dh apart as the
 * forward pass has them, V rows Hkv·dh apart (any stride works; the cache's is dh); large
 * scores that move the running max many times.
 * Tolerance: max |x - ref| <= 1e-5 (outputs are convex combinations of values in [-1, 1]);
 * the worst error is printed. Also: a row's result is bit-identical whether it is computed in
 * one call with its neighbours or alone (what makes the forward pass thread-count invariant).
 * The keys go in as the kernels take them (transposed blocks of HY_ATTN_KB, kernels/attn.h),
 * the last block's columns past the keys NaN: they must be masked, never weighted.
 * The fast prefill's AMX variant (hy_attn_ops_amx, where this machine has AMX or the build
 * emulates the tiles: make test-amxemu) on the same cases against the oracle run on q, k and v
 * rounded to bf16 (TOL_AMX below), with the same per-token bit-identity.
 * bf16 and fp8 KV caches (hy_attn_args.kv_fmt): every variant, the scalar one and AMX included,
 * must give the same bits over bf16 / fp8 keys and values as over fp32 ones holding the same
 * values (the widening is exact), on the same cases and random shapes (odd head dims: the masked
 * tails; fp8: every code but NaN, subnormal ones included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/fp.h"
#include "kernels/attn.h"
#include "kernels/cpu/dispatch.h"
#include "test_util.h"

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

static int n_tiers;
static const hy_attn_ops *tiers[HY_ISA_COUNT];
static const hy_attn_ops *amx; /* the fast prefill's AMX variant where this machine runs it */

static int setup(void **st) {
    (void)st;
    hy_cpu_features f;
    hy_cpu_detect(&f);
    /* the hardware's tiles, or the emulated ones of a HYLA_AMX_EMU build (make test-amxemu) */
    if (hy_attn_ops_amx() && (f.amx_bf16 || f.amx_emu) && !f.avx512_emu && hy_isa_supported(&f, HY_ISA_AVX512) &&
        hy_cpu_amx_permit(&f))
        amx = hy_attn_ops_amx();
    else printf("amx attention: not runnable here, skipped\n");
    for (int i = HY_ISA_REF + 1; i < HY_ISA_COUNT; i++) {
        const hy_attn_ops *o = hy_attn_ops_get((hy_isa)i);
        if (!o || !hy_isa_supported(&f, (hy_isa)i)) {
            printf("tier %s: not runnable here, skipped\n", hy_isa_name((hy_isa)i));
            continue;
        }
        tiers[n_tiers++] = o;
    }
    return 0;
}

typedef struct acase {
    int dh, ng, hkv, nt, n_past;
    float qscale; /* magnitude of q (large: peaky softmax, many max updates) */
} acase;

/* nearest-even bf16 of x, as a float */
static float bf16r(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* The keys of one head (key j at k + j·ld, dh floats) as the kernels take them: blocks of
 * HY_ATTN_KB keys, each transposed; the last block's columns past nkv are NaN. */
static float *to_blocks(const float *k, size_t ld, int nkv, int dh) {
    const int nblk = (nkv + HY_ATTN_KB - 1) / HY_ATTN_KB;
    float *kt = xalloc((size_t)nblk * dh * HY_ATTN_KB);
    for (size_t i = 0; i < (size_t)nblk * dh * HY_ATTN_KB; i++) kt[i] = NAN;
    for (int j = 0; j < nkv; j++)
        for (int d = 0; d < dh; d++)
            kt[((size_t)(j / HY_ATTN_KB) * dh + (size_t)d) * HY_ATTN_KB + j % HY_ATTN_KB] = k[(size_t)j * ld + d];
    return kt;
}

/* Runs one case on the n kernels of ops against the oracle (on q, k and v rounded to bf16 where
 * bf16) with tolerance tol; returns the worst error. */
static double run_case_on(const acase *c, uint64_t seed, const hy_attn_ops *const *ops, int n, bool bf16, double tol) {
    rng r = {seed};
    const int dh = c->dh, ng = c->ng, hkv = c->hkv, nt = c->nt, nkv = c->n_past + c->nt;
    const size_t ld = (size_t)hkv * dh;          /* K/V rows of all KV heads interleaved */
    const size_t ldq_h = 2 * (size_t)dh;         /* per head [query | gate] as q_proj emits it */
    const size_t ldq_t = (size_t)hkv * ng * ldq_h;
    const size_t ldo_h = (size_t)dh, ldo_t = (size_t)hkv * ng * dh;
    float *k = xalloc((size_t)nkv * ld), *v = xalloc((size_t)nkv * ld);
    float *q = xalloc((size_t)nt * ldq_t);
    for (size_t i = 0; i < (size_t)nkv * ld; i++) k[i] = rng_sym(&r), v[i] = rng_sym(&r);
    for (size_t i = 0; i < (size_t)nt * ldq_t; i++) q[i] = c->qscale * rng_sym(&r);
    float *ref = xalloc((size_t)nt * ldo_t), *got = xalloc((size_t)nt * ldo_t), *one = xalloc((size_t)nt * ldo_t);
    const size_t wf = hy_attn_work_floats(nt * ng), wa = hy_attn_amx_work_floats(nt * ng, dh);
    float *work = xalloc(bf16 && wa > wf ? wa : wf);
    float *kr = k, *vr = v, *qr = q; /* the oracle's inputs */
    if (bf16) {
        kr = xalloc((size_t)nkv * ld), vr = xalloc((size_t)nkv * ld), qr = xalloc((size_t)nt * ldq_t);
        for (size_t i = 0; i < (size_t)nkv * ld; i++) kr[i] = bf16r(k[i]), vr[i] = bf16r(v[i]);
        for (size_t i = 0; i < (size_t)nt * ldq_t; i++) qr[i] = bf16r(q[i]);
    }
    const float scale = 1.0f / sqrtf((float)dh);
    const int g = hkv - 1; /* the last KV head: offsets must be honoured */
    float *kb = to_blocks(k + (size_t)g * dh, ld, nkv, dh);
    float *kbr = bf16 ? to_blocks(kr + (size_t)g * dh, ld, nkv, dh) : kb;
    hy_attn_args a = {.q = q + (size_t)g * ng * ldq_h, .ldq_t = ldq_t, .ldq_h = ldq_h,
                      .out = NULL, .ldo_t = ldo_t, .ldo_h = ldo_h,
                      .k = kb, .v = v + (size_t)g * dh, .ld = ld,
                      .nt = nt, .ng = ng, .n_past = c->n_past, .dh = dh, .scale = scale};
    a.out = ref + (size_t)g * ng * dh;
    a.q = qr + (size_t)g * ng * ldq_h, a.k = kbr, a.v = vr + (size_t)g * dh;
    hy_attn_ops_ref()->gqa(&a, work);
    a.k = kb, a.v = v + (size_t)g * dh;
    double worst = 0.0;
    for (int ti = 0; ti < n; ti++) {
        memset(got, 0x7f, (size_t)nt * ldo_t * sizeof(float)); /* garbage: every row must be written */
        a.out = got + (size_t)g * ng * dh;
        a.nt = nt, a.n_past = c->n_past, a.q = q + (size_t)g * ng * ldq_h;
        ops[ti]->gqa(&a, work);
        double e = 0.0;
        for (int t = 0; t < nt; t++)
            for (int i = 0; i < ng; i++)
                for (int d = 0; d < dh; d++) {
                    size_t o = (size_t)t * ldo_t + ((size_t)g * ng + i) * dh + d;
                    double x = fabs((double)got[o] - (double)ref[o]);
                    if (isnan(x)) x = INFINITY;
                    if (x > e) e = x;
                }
        /* each token alone (n_past + t) must give the same bits as the block call */
        memset(one, 0, (size_t)nt * ldo_t * sizeof(float));
        for (int t = 0; t < nt; t++) {
            a.q = q + (size_t)t * ldq_t + (size_t)g * ng * ldq_h;
            a.out = one + (size_t)t * ldo_t + (size_t)g * ng * dh;
            a.nt = 1, a.n_past = c->n_past + t;
            ops[ti]->gqa(&a, work);
        }
        int same = 1;
        for (int t = 0; t < nt && same; t++)
            same = !memcmp(one + (size_t)t * ldo_t + (size_t)g * ng * dh, got + (size_t)t * ldo_t + (size_t)g * ng * dh,
                           (size_t)ng * dh * sizeof(float));
        if (!same) printf("  %s: block call and per-token calls differ\n", ops[ti]->name);
        assert_true(same);
        if (e > worst) worst = e;
        if (e > tol)
            printf("  %s: dh %d ng %d nt %d n_past %d: max|d| %.3g > %.0e\n", ops[ti]->name, dh, ng, nt,
                   c->n_past, e, tol);
        assert_true(e <= tol);
    }
    if (bf16) free(kr), free(vr), free(qr), free(kbr);
    free(k), free(v), free(q), free(kb), free(ref), free(got), free(one), free(work);
    return worst;
}

static uint16_t bf16_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)(u >> 16);
}

/* Keys and values of a bf16 or fp8 cache (fmt: HY_ATTN_KV_BF16 / _FP8) against fp32 ones holding
 * the same values on every kernel of ops: bit-identical outputs. fp8 values are random codes
 * (NaN codes excluded) scaled by 2^-2 .. 2^-6 per case, subnormal codes included. Returns the
 * kernels run. */
static int run_case_kvq(const acase *c, uint64_t seed, const hy_attn_ops *const *ops, int n, int fmt, int nan_codes) {
    rng r = {seed};
    const int dh = c->dh, ng = c->ng, hkv = c->hkv, nt = c->nt, nkv = c->n_past + c->nt;
    const size_t ld = (size_t)hkv * dh, ldq_h = 2 * (size_t)dh, ldq_t = (size_t)hkv * ng * ldq_h;
    const size_t ldo_h = (size_t)dh, ldo_t = (size_t)hkv * ng * dh, es = fmt == HY_ATTN_KV_FP8 ? 1 : 2;
    float *k = xalloc((size_t)nkv * ld), *v = xalloc((size_t)nkv * ld), *q = xalloc((size_t)nt * ldq_t);
    uint8_t *kc = malloc((size_t)nkv * ld), *vc = malloc((size_t)nkv * ld); /* fp8 codes */
    assert_non_null(kc);
    assert_non_null(vc);
    for (size_t i = 0; i < (size_t)nkv * ld; i++) {
        if (fmt == HY_ATTN_KV_FP8) { /* any code but NaN (0x7f, 0xff) */
            do kc[i] = (uint8_t)(rng_u(&r) * 256); while ((kc[i] & 0x7f) == 0x7f);
            do vc[i] = (uint8_t)(rng_u(&r) * 256); while ((vc[i] & 0x7f) == 0x7f);
            k[i] = hy_fp8_e4m3_to_f32(kc[i]), v[i] = hy_fp8_e4m3_to_f32(vc[i]);
        } else k[i] = bf16r(rng_sym(&r)), v[i] = bf16r(rng_sym(&r));
    }
    /* nan_codes (fp8): one visible NaN code, 1: the value of key 5 at dim 7 (0xff: every row
     * weights it, so that dim of every output is NaN), 2: key 9's dim 3 (0x7f: its score is
     * NaN, whatever a kernel makes of that); a widening that read it as a number (±480) would
     * differ from the fp32 NaN */
    const size_t g0 = (size_t)(hkv - 1) * dh;
    if (nan_codes == 1) vc[5 * ld + g0 + 7] = 0xff, v[5 * ld + g0 + 7] = hy_fp8_e4m3_to_f32(0xff);
    if (nan_codes == 2) kc[9 * ld + g0 + 3] = 0x7f, k[9 * ld + g0 + 3] = hy_fp8_e4m3_to_f32(0x7f);
    for (size_t i = 0; i < (size_t)nt * ldq_t; i++) q[i] = c->qscale * rng_sym(&r) * (fmt == HY_ATTN_KV_FP8 ? 0x1p-6f : 1.0f);
    const int g = hkv - 1;
    float *kb = to_blocks(k + (size_t)g * dh, ld, nkv, dh);
    const size_t nkb = (size_t)((nkv + HY_ATTN_KB - 1) / HY_ATTN_KB) * dh * HY_ATTN_KB;
    unsigned char *kq = malloc(nkb * es), *vq = malloc((size_t)nkv * ld * es);
    assert_non_null(kq);
    assert_non_null(vq);
    for (size_t i = 0; i < nkb; i++) { /* the NaN columns stay NaN */
        if (es == 2) ((uint16_t *)kq)[i] = bf16_bits(kb[i]);
        else kq[i] = isnan(kb[i]) ? 0x7f : hy_f32_to_fp8_e4m3(kb[i]);
    }
    for (size_t i = 0; i < (size_t)nkv * ld; i++) {
        if (es == 2) ((uint16_t *)vq)[i] = bf16_bits(v[i]);
        else vq[i] = vc[i];
    }
    float *o32 = xalloc((size_t)nt * ldo_t), *oq = xalloc((size_t)nt * ldo_t);
    const size_t wf = hy_attn_work_floats(nt * ng) + hy_attn_kv_work_floats(dh), wa = hy_attn_amx_work_floats(nt * ng, dh);
    float *work = xalloc(wa > wf ? wa : wf);
    hy_attn_args a = {.q = q + (size_t)g * ng * ldq_h, .ldq_t = ldq_t, .ldq_h = ldq_h, .ldo_t = ldo_t, .ldo_h = ldo_h,
                      .ld = ld, .nt = nt, .ng = ng, .n_past = c->n_past, .dh = dh, .scale = 1.0f / sqrtf((float)dh)};
    for (int ti = 0; ti < n; ti++) {
        memset(o32, 0, (size_t)nt * ldo_t * sizeof(float));
        memset(oq, 0, (size_t)nt * ldo_t * sizeof(float));
        a.k = kb, a.v = v + (size_t)g * dh, a.kv_fmt = HY_ATTN_KV_F32, a.out = o32 + (size_t)g * ng * dh;
        ops[ti]->gqa(&a, work);
        a.k = kq, a.v = vq + (size_t)g * dh * es, a.kv_fmt = fmt, a.out = oq + (size_t)g * ng * dh;
        ops[ti]->gqa(&a, work);
        const int same = !memcmp(o32, oq, (size_t)nt * ldo_t * sizeof(float));
        if (nan_codes == 1) assert_true(isnan(oq[(size_t)g * ng * dh + 7]));
        if (!same)
            printf("  %s: %s KV differs from fp32 KV: dh %d ng %d nt %d n_past %d\n", ops[ti]->name,
                   fmt == HY_ATTN_KV_FP8 ? "fp8" : "bf16", dh, ng, nt, c->n_past);
        assert_true(same);
    }
    free(k), free(v), free(q), free(kc), free(vc), free(kb), free(kq), free(vq), free(o32), free(oq), free(work);
    return n;
}

/* ... both formats on the scalar oracle, every SIMD tier and AMX where it runs */
static int run_kvq_all(const acase *c, uint64_t seed) {
    const hy_attn_ops *all[HY_ISA_COUNT + 2];
    int n = 0;
    all[n++] = hy_attn_ops_ref();
    for (int i = 0; i < n_tiers; i++) all[n++] = tiers[i];
    if (amx) all[n++] = amx;
    run_case_kvq(c, seed, all, n, HY_ATTN_KV_BF16, 0);
    return run_case_kvq(c, seed, all, n, HY_ATTN_KV_FP8, 0);
}

/* Every SIMD tier against the fp32 oracle. */
static double run_case(const acase *c, uint64_t seed) { return run_case_on(c, seed, tiers, n_tiers, false, TOL); }

/* The AMX variant against the oracle on bf16-rounded q, k, v. What remains is the rounding of
 * the probabilities to bf16 (relative 2^-9 each): the weights applied to V, renormalised by the
 * rounded sum, move by at most 2·2^-9 of their total, so |d| <= 2^-8 · max|v| = 3.9e-3 here,
 * plus fp32 summation order. */
#define TOL_AMX 4.5e-3
static double run_case_amx(const acase *c, uint64_t seed) { return run_case_on(c, seed, &amx, 1, true, TOL_AMX); }

static void test_cases(void **st) {
    (void)st;
    if (!n_tiers) {
        printf("no SIMD tier runnable here; nothing to compare\n");
        return;
    }
    static const acase cases[] = {
        /* decode */
        {256, 4, 2, 1, 0, 1.0f},   {256, 4, 2, 1, 63, 1.0f},  {256, 4, 2, 1, 64, 1.0f},
        {256, 4, 2, 1, 1000, 1.0f}, {256, 6, 4, 1, 333, 1.0f}, {32, 2, 2, 1, 517, 1.0f},
        {32, 1, 1, 1, 129, 1.0f},   {40, 3, 2, 1, 77, 1.0f},   {72, 4, 1, 1, 200, 1.0f},
        {8, 5, 1, 1, 90, 1.0f},
        /* prefill blocks: causal mask inside the block */
        {256, 4, 2, 16, 0, 1.0f},   {256, 4, 2, 64, 0, 1.0f},  {256, 6, 4, 17, 47, 1.0f},
        {256, 4, 2, 130, 3, 1.0f},  {32, 2, 2, 64, 64, 1.0f},  {32, 2, 2, 31, 101, 1.0f},
        {40, 3, 2, 9, 60, 1.0f},    {72, 1, 3, 70, 0, 1.0f},   {8, 4, 2, 33, 7, 1.0f},
        /* peaky softmax: the running max moves a lot */
        {256, 4, 2, 40, 200, 30.0f}, {32, 2, 2, 100, 150, 60.0f}, {40, 6, 1, 3, 300, 80.0f},
    };
    double worst = 0.0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double e = run_case(&cases[i], 1000 + i);
        if (e > worst) worst = e;
    }
    printf("attention SIMD vs scalar: %zu cases, %d tier(s), worst max|d| = %.3g (tol %.0e)\n",
           sizeof cases / sizeof cases[0], n_tiers, worst, TOL);
    int nk = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) nk = run_kvq_all(&cases[i], 3000 + i);
    printf("bf16 and fp8 KV against fp32 KV of the same values: %zu cases x %d kernel(s), bit-identical\n",
           sizeof cases / sizeof cases[0], nk);
    { /* NaN codes read as NaN: decode (3 and 6 query heads: avx2's 4- and 6-row instances), and
       * a prefill block of several row tiles (staged) */
        const hy_attn_ops *all[HY_ISA_COUNT + 2];
        int n = 0;
        all[n++] = hy_attn_ops_ref();
        for (int i = 0; i < n_tiers; i++) all[n++] = tiers[i];
        if (amx) all[n++] = amx;
        static const acase nc[] = {{40, 3, 2, 1, 77, 1.0f}, {64, 6, 1, 1, 90, 1.0f}, {256, 4, 2, 16, 20, 1.0f}};
        for (size_t i = 0; i < sizeof nc / sizeof nc[0]; i++)
            for (int m = 1; m <= 2; m++) run_case_kvq(&nc[i], 5000 + (uint64_t)i, all, n, HY_ATTN_KV_FP8, m);
        printf("fp8 NaN codes in V and in K: bit-identical to fp32 NaN on %d kernel(s)\n", n);
    }
    if (!amx) return;
    worst = 0.0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double e = run_case_amx(&cases[i], 1000 + i);
        if (e > worst) worst = e;
    }
    printf("attention AMX vs scalar on bf16 inputs: %zu cases, worst max|d| = %.3g (tol %.1e)\n",
           sizeof cases / sizeof cases[0], worst, TOL_AMX);
}

/* Random shapes. */
static void test_random(void **st) {
    (void)st;
    if (!n_tiers) return;
    rng r = {77};
    double worst = 0.0, worst_amx = 0.0;
    for (int it = 0; it < 60; it++) {
        acase c;
        c.dh = 1 + (int)(rng_u(&r) * 130);
        c.ng = 1 + (int)(rng_u(&r) * 8);
        c.hkv = 1 + (int)(rng_u(&r) * 3);
        c.nt = 1 + (int)(rng_u(&r) * 40);
        c.n_past = (int)(rng_u(&r) * 300);
        c.qscale = rng_u(&r) < 0.2 ? 20.0f : 1.0f;
        double e = run_case(&c, 5000 + (uint64_t)it);
        if (e > worst) worst = e;
        if (!HY_TEST_SANITIZED || it % 4 == 0) run_kvq_all(&c, 7000 + (uint64_t)it); /* sanitizers: a quarter */
        if (amx) {
            e = run_case_amx(&c, 5000 + (uint64_t)it);
            if (e > worst_amx) worst_amx = e;
        }
    }
    printf("attention SIMD vs scalar: 60 random shapes, worst max|d| = %.3g (tol %.0e); bf16 / fp8 KV bit-identical\n",
           worst, TOL);
    if (amx) printf("attention AMX vs scalar on bf16 inputs: 60 random shapes, worst max|d| = %.3g (tol %.1e)\n", worst_amx, TOL_AMX);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
