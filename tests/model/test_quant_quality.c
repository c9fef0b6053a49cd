/*
 * Weight formats end to end.
 *
 * Quality: logits with fp8 / q8 / q4 weights (and with bf16 activations in prefill) against the
 * same model's stored bf16 weights with exact fp32 activations, all positions of every prompt.
 * Printed per model and configuration: mean and max KL(p_ref || p_quant) in nats, top-1
 * agreement, bytes per weight of the matmul classes. "(all)" quantizes everything quantizable
 * (HY_QUANT_ALL: lm_head and in_proj_a/b too; the tiny models' matrices are all small, so the
 * selective default leaves a large share as stored), "(selective)" is the default selection.
 *
 *  - tiny-*-bf16 golden fixtures (their prompts; well-conditioned random models whose fp32
 *    results are within ~5e-6 of fp64, but with flat output distributions: the reference's mean
 *    top-1 probability is 0.05-0.09, so top-1 flips on small margins). Measured: q8 top-1
 *    0.963-0.981 (KL 2-4e-4), fp8 0.90-0.92 (KL 2-4e-3), q4 0.72-0.76 (KL 0.02-0.04), bf16
 *    activations 0.994-0.996 (KL 1.4e-5). Asserted:
 *      bf16 act: top-1 >= 0.99, KL <= 1e-4; q8 >= 0.95, <= 1e-3; fp8 >= 0.85, <= 0.01;
 *      q4 >= 0.60, <= 0.1.
 *  - a well-conditioned random model (hyla random-model tiny, weights ~N(0, 0.02)) whose flat
 *    logits are scaled so the reference is confident (mean top-1 probability 0.5):
 *      bf16 act: top-1 >= 0.95, KL <= 2e-3; q8 >= 0.90, <= 0.015; fp8 >= 0.75, <= 0.15;
 *      q4 >= 0.45, <= 1.0.
 *    fp8 (3 mantissa bits) sits between q8 and q4 here: its error is relative to each weight's
 *    magnitude, ~3x q8's on Gaussian weights.
 *  - tiny-trained-bf16 (tools/reference/make_trained_tiny.py: the real layer pattern, hidden
 *    128, 8 layers, trained 600 steps on English text): confident like a real LM (reference's
 *    mean top-1 probability 0.47 on held-out text, the model's own top-1 accuracy 0.41-0.43).
 *    The goal (fp8 / q8 top-1 >= 99%) is judged HERE, over its 5 golden prompts plus
 *    15 x 192 tokens of held-out licence text ("quality_prompts"), 3575 positions. Measured:
 *                         mean KL   top-1                         mean KL   top-1
 *      bf16 act prefill   4.6e-6    0.9989
 *      q8 (selective)     1.0e-4    0.9905     q8 (all)           1.3e-4    0.9916   goal met
 *      fp8 (selective)    6.4e-4    0.9866     fp8 (all)          1.0e-3    0.9790   goal NOT met
 *      q4 (selective)     6.6e-3    0.9524     q4 (all)           9.1e-3    0.9407
 *    fp8 is not our quantizer's fault: torch's float8_e4m3fn with the same 128x128 amax/448
 *    block scales on the same weights (tools/reference/quant_sim.py, HF fp32 activations) gives
 *    the same numbers to 3 digits (KL 6.38e-4 / 1.04e-3, top-1 0.9866 / 0.9790). e4m3 keeps 3
 *    mantissa bits: ||dW|| / ||W|| over the selective matrices is 2.65% (q8: 0.53%); lm_head
 *    is most of the "(all)" loss (selective + lm_head alone: 0.9787). q8's error is mostly the
 *    int8 ACTIVATIONS of the W8A8 path: torch with q8 weights and fp32 activations gives KL
 *    2.7e-5 / 3.7e-5, top-1 0.9969 / 0.9947; with activations also int8 per 32, 1.1e-4 /
 *    1.2e-4 and 0.9910 / 0.9905 (as ours). Asserted (a little below the measured values):
 *      bf16 act: top-1 >= 0.995, KL <= 1e-5; q8 sel >= 0.985, <= 1.5e-4; q8 all >= 0.985,
 *      <= 2e-4; fp8 sel >= 0.98, <= 1e-3; fp8 all >= 0.97, <= 1.5e-3; q4 sel >= 0.94, <= 0.01;
 *      q4 all >= 0.925, <= 0.013.
 *    The bf16 KV cache (--kv-type bf16, fp32 weights otherwise as stored): KL 7.1e-7, top-1
 *    0.9992 (asserted as bf16 act); with q4 (selective) weights 0.9522 against 0.9527 (measured
 *    once, not run: each row costs the emulated-AMX CI build ~10 s).
 *    On the golden fixtures: KL 1.5-1.7e-8, top-1 1.0 (asserted as bf16 act).
 *    The fp8 (e4m3) KV cache: KL 2.3e-4, top-1 0.9927 (asserted >= 0.985, <= 4e-4), as q8
 *    weights; golden fixtures KL 3.9-4.6e-6, top-1 0.9961-0.9984 (asserted >= 0.99, <= 1e-4).
 *    (Under sanitizers: prompts <= 200 tokens and every third quality prompt, 1355 positions;
 *    same bounds, measured q8 sel 0.9882, fp8 all 0.9764.)
 * The random fixtures above cannot show the goal (their flat distributions flip on any noise).
 *
 * Official-layout FP8 checkpoint (hyla random-model --dtype fp8): loads, runs in place with
 * its block scales on every tier (tiers agree within 1e-4), agrees with the bf16 checkpoint of
 * the same seed (the fp8 weights are quantized from the same draws), and converts at load
 * (bf16, q8).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/cpu.h"
#include "model/forward.h"
#include "model/random_model.h"
#include "model/shapes.h"
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if HY_TEST_SANITIZED
#define MAX_T 200
#define Q_STRIDE 3 /* sanitizers: every third "quality_prompts" entry (memory checking, not statistics) */
#else
#define MAX_T 100000
#define Q_STRIDE 1
#endif

typedef struct cfg {
    const char *name;
    hy_ctx_opts o;
    double min_top1, max_mean_kl; /* fast_decode rows feed the prompts a token per step (decode) */
} cfg;

typedef struct acc {
    double kl_sum, kl_max;
    long n, top1;
} acc;

/* KL(p || q) of the softmaxes of two logit rows, in nats. */
static double kl(const float *a, const float *b, int n) {
    double ma = -INFINITY, mb = -INFINITY;
    for (int i = 0; i < n; i++) {
        ma = fmax(ma, a[i]);
        mb = fmax(mb, b[i]);
    }
    double sa = 0, sb = 0;
    for (int i = 0; i < n; i++) {
        sa += exp(a[i] - ma);
        sb += exp(b[i] - mb);
    }
    const double la = ma + log(sa), lb = mb + log(sb);
    double k = 0;
    for (int i = 0; i < n; i++) {
        const double lp = a[i] - la, lq = b[i] - lb;
        k += exp(lp) * (lp - lq);
    }
    return k > 0 ? k : 0;
}

static void add_rows(acc *A, const float *ref, const float *got, int rows, int V) {
    for (int r = 0; r < rows; r++) {
        const double k = kl(ref + (size_t)r * V, got + (size_t)r * V, V);
        A->kl_sum += k;
        if (k > A->kl_max) A->kl_max = k;
        A->top1 += hy_test_argmax(ref + (size_t)r * V, V) == hy_test_argmax(got + (size_t)r * V, V);
        A->n++;
    }
}

static float *run_steps(hy_ctx *ctx, hy_seq *seq, const int32_t *ids, int n, int V, bool one_by_one) {
    hy_err err;
    float *lg = malloc(sizeof(float) * (size_t)n * V);
    hy_seq_reset(seq);
    if (one_by_one)
        for (int i = 0; i < n; i++)
            assert_int_equal(hy_forward(ctx, seq, ids + i, 1, lg + (size_t)i * V, true, &err), 0);
    else assert_int_equal(hy_forward(ctx, seq, ids, n, lg, true, &err), 0);
    return lg;
}

static float *run(hy_ctx *ctx, hy_seq *seq, const int32_t *ids, int n, int V) {
    return run_steps(ctx, seq, ids, n, V, false);
}

typedef struct prompt_set {
    int n;
    int32_t *ids[32];
    int len[32];
} prompt_set;

static void prompts_free(prompt_set *p) {
    for (int i = 0; i < p->n; i++) free(p->ids[i]);
}

/* The fixture prompts of a golden model (and its extra quality prompts, if any). */
static prompt_set fixture_prompts(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "golden/%s/manifest.json", name);
    char *mpath = hy_test_data_path(rel);
    json_error_t jerr;
    json_t *man = json_load_file(mpath, 0, &jerr);
    assert_non_null(man);
    free(mpath);
    prompt_set ps = {0};
    /* "quality_prompts": extra held-out ids without stored logits (the trained fixture) */
    static const char *const keys[] = {"prompts", "quality_prompts"};
    for (int k = 0; k < 2; k++) {
        json_t *prompts = json_object_get(man, keys[k]);
        for (size_t pi = 0; pi < json_array_size(prompts) && ps.n < 32; pi += k ? Q_STRIDE : 1) {
            int n;
            int32_t *ids = hy_test_json_ids(json_object_get(json_array_get(prompts, pi), "ids"), &n);
            if (n > MAX_T || n < 1) {
                free(ids);
                continue;
            }
            ps.ids[ps.n] = ids;
            ps.len[ps.n++] = n;
        }
    }
    json_decref(man);
    return ps;
}

/* Runs every configuration over the prompts against the auto/fp32 reference; logits are
 * multiplied by `temp_mul` before the softmaxes (1 = as computed). */
static void quality_table(const char *label, const hy_model *m, const prompt_set *ps, double temp_mul, const cfg *cfgs,
                          int nc) {
    const int V = m->hp.vocab_size;
    hy_err err;
    hy_ctx *ref = NULL, *ctx[16];
    hy_ctx_opts ro = {.n_threads = 2};
    assert_int_equal(hy_ctx_create(&ref, m, &ro, &err), 0);
    for (int c = 0; c < nc; c++)
        if (hy_ctx_create(&ctx[c], m, &cfgs[c].o, &err)) fail_msg("%s: %s", cfgs[c].name, err.msg);
    hy_seq *seq = NULL, *cseq[16]; /* the reference's; each configuration's, of its KV type */
    assert_int_equal(hy_seq_create(&seq, m, 1024, &err), 0);
    for (int c = 0; c < nc; c++) assert_int_equal(hy_seq_create_kv(&cseq[c], m, 1024, hy_ctx_kv_type(ctx[c]), &err), 0);
    acc A[16];
    memset(A, 0, sizeof A);
    double pmax = 0;
    long npos = 0;
    for (int pi = 0; pi < ps->n; pi++) {
        const int n = ps->len[pi];
        float *base = run(ref, seq, ps->ids[pi], n, V);
        for (int i = 0; i < n * V; i++) base[i] *= (float)temp_mul;
        for (int r = 0; r < n; r++) { /* mean top-1 probability of the reference */
            const float *b = base + (size_t)r * V;
            double mx = b[hy_test_argmax(b, V)], s = 0;
            for (int i = 0; i < V; i++) s += exp(b[i] - mx);
            pmax += 1.0 / s;
            npos++;
        }
        for (int c = 0; c < nc; c++) {
            float *lg = run_steps(ctx[c], cseq[c], ps->ids[pi], n, V, cfgs[c].o.fast_decode);
            for (int i = 0; i < n * V; i++) lg[i] *= (float)temp_mul;
            add_rows(&A[c], base, lg, n, V);
            free(lg);
        }
        free(base);
    }
    for (int c = 0; c < nc; c++) {
        const hy_linears *L = hy_ctx_linears(ctx[c]);
        int64_t used = 0, numel = 0;
        for (int k = 0; k < HY_WCLASS_COUNT; k++)
            if (k != HY_WCLASS_EMBED && k != HY_WCLASS_SMALL) used += L->cls[k].bytes_used, numel += L->cls[k].numel;
        const double mean = A[c].kl_sum / (double)A[c].n, top1 = (double)A[c].top1 / (double)A[c].n;
        printf("| %-16s | %-17s | %5ld | %9.3g | %9.3g | %6.4f | %5.3f |\n", label, cfgs[c].name, A[c].n, mean,
               A[c].kl_max, top1, (double)used / (double)numel);
        assert_true(isfinite(mean));
        if (!getenv("QQ_NOASSERT")) {
            assert_true(top1 >= cfgs[c].min_top1);
            assert_true(mean <= cfgs[c].max_mean_kl);
        }
        hy_ctx_free(ctx[c]);
        hy_seq_free(cseq[c]);
    }
    printf("| %-16s | (reference: mean top-1 probability %.3f at logits x %g)\n", label, pmax / (double)npos, temp_mul);
    hy_seq_free(seq);
    hy_ctx_free(ref);
}

static void quality_model(const char *name, const cfg *cfgs, int nc) {
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", name);
    char *dir = hy_test_data_path(rel);
    hy_model *m = NULL;
    hy_err err;
    assert_int_equal(hy_model_load(&m, dir, &err), 0);
    free(dir);
    prompt_set ps = fixture_prompts(name);
    quality_table(name, m, &ps, 1.0, cfgs, nc);
    prompts_free(&ps);
    hy_model_free(m);
}

#define ALLQ(w) {.n_threads = 2, .weights = (w), .quant_flags = HY_QUANT_ALL}
#define SELQ(w) {.n_threads = 2, .weights = (w)}

static void test_quality_fixtures(void **st) {
    (void)st;
    const cfg cfgs[] = {
        {"fp32, ref tier", {.n_threads = 2, .isa = "ref"}, 0.99, 1e-8},
        {"bf16 act prefill", {.n_threads = 2, .fast_prefill = true}, 0.99, 1e-4},
        {"bf16 act decode", {.n_threads = 2, .fast_decode = true}, 0.99, 1e-4},
        {"bf16 (all)", ALLQ(HY_WEIGHTS_BF16), 0.99, 1e-4},
        {"fp8 (all)", ALLQ(HY_WEIGHTS_FP8), 0.85, 0.01},
        {"q8 (all)", ALLQ(HY_WEIGHTS_Q8), 0.95, 1e-3},
        {"q4 (all)", ALLQ(HY_WEIGHTS_Q4), 0.60, 0.1},
        {"fp8 (selective)", SELQ(HY_WEIGHTS_FP8), 0.85, 0.01},
        {"q8 (selective)", SELQ(HY_WEIGHTS_Q8), 0.95, 1e-3},
        {"q4 (selective)", SELQ(HY_WEIGHTS_Q4), 0.60, 0.1},
        {"fp8 (sel.) decode", {.n_threads = 2, .weights = HY_WEIGHTS_FP8, .fast_decode = true}, 0.85, 0.01},
        {"bf16 KV cache", {.n_threads = 2, .kv_type = HY_KV_BF16}, 0.99, 1e-4},
        {"fp8 KV cache", {.n_threads = 2, .kv_type = HY_KV_FP8}, 0.99, 1e-4},
    };
    printf("| model            | weights           | pos   | mean KL   | max KL    | top-1  | B/w   |\n");
    quality_model("tiny-text-bf16", cfgs, (int)(sizeof cfgs / sizeof cfgs[0]));
    quality_model("tiny-mm-bf16", cfgs, (int)(sizeof cfgs / sizeof cfgs[0]));
    if (getenv("QQ_F32")) quality_model("tiny-text", cfgs, (int)(sizeof cfgs / sizeof cfgs[0]));
}

/* The trained fixture (tools/reference/make_trained_tiny.py): confident like a real LM; this is
 * where the fp8 / q8 top-1 >= 99% goal is judged (numbers in the header). */
static void test_quality_trained(void **st) {
    (void)st;
    const cfg cfgs[] = { /* (no scalar "ref tier" row: test_golden covers the tiers; it is slow here) */
        {"bf16 act prefill", {.n_threads = 2, .fast_prefill = true}, 0.995, 1e-5},
        {"bf16 act decode", {.n_threads = 2, .fast_decode = true}, 0.995, 1e-5},
        {"bf16 (all)", ALLQ(HY_WEIGHTS_BF16), 0.99, 1e-4},
        {"fp8 (all)", ALLQ(HY_WEIGHTS_FP8), 0.97, 1.5e-3},
        {"q8 (all)", ALLQ(HY_WEIGHTS_Q8), 0.985, 2e-4},
        {"q4 (all)", ALLQ(HY_WEIGHTS_Q4), 0.925, 0.013},
        {"fp8 (selective)", SELQ(HY_WEIGHTS_FP8), 0.98, 1e-3},
        {"q8 (selective)", SELQ(HY_WEIGHTS_Q8), 0.985, 1.5e-4},
        {"q4 (selective)", SELQ(HY_WEIGHTS_Q4), 0.94, 0.01},
        {"fp8 (sel.) decode", {.n_threads = 2, .weights = HY_WEIGHTS_FP8, .fast_decode = true}, 0.98, 1e-3},
        {"bf16 KV cache", {.n_threads = 2, .kv_type = HY_KV_BF16}, 0.995, 1e-5},
        {"fp8 KV cache", {.n_threads = 2, .kv_type = HY_KV_FP8}, 0.985, 4e-4},
    };
    printf("| model            | weights           | pos   | mean KL   | max KL    | top-1  | B/w   |\n");
    quality_model("tiny-trained-bf16", cfgs, (int)(sizeof cfgs / sizeof cfgs[0]));
}

/* The multiplier of the logits that makes the reference's mean top-1 probability 0.5. */
static double calibrate_temp(const hy_model *m, const prompt_set *ps) {
    const int V = m->hp.vocab_size;
    hy_err err;
    hy_ctx *ref = NULL;
    hy_ctx_opts ro = {.n_threads = 2};
    assert_int_equal(hy_ctx_create(&ref, m, &ro, &err), 0);
    hy_seq *seq = NULL;
    assert_int_equal(hy_seq_create(&seq, m, 1024, &err), 0);
    float *lg[32];
    for (int pi = 0; pi < ps->n; pi++) lg[pi] = run(ref, seq, ps->ids[pi], ps->len[pi], V);
    double lo = 0.1, hi = 1e4;
    for (int it = 0; it < 60; it++) {
        const double mid = sqrt(lo * hi);
        double pm = 0;
        long np = 0;
        for (int pi = 0; pi < ps->n; pi++)
            for (int r = 0; r < ps->len[pi]; r++) {
                const float *b = lg[pi] + (size_t)r * V;
                const double mx = b[hy_test_argmax(b, V)];
                double sum = 0;
                for (int i = 0; i < V; i++) sum += exp((b[i] - mx) * mid);
                pm += 1.0 / sum;
                np++;
            }
        if (pm / (double)np < 0.5) lo = mid;
        else hi = mid;
    }
    for (int pi = 0; pi < ps->n; pi++) free(lg[pi]);
    hy_seq_free(seq);
    hy_ctx_free(ref);
    return sqrt(lo * hi);
}

static char g_dir[64];

static void make_tmpdir(void) {
    if (g_dir[0]) return;
    snprintf(g_dir, sizeof g_dir, "/tmp/hyla_q_XXXXXX");
    assert_non_null(mkdtemp(g_dir));
}

static void write_tiny(const char *sub, bool fp8) {
    static hy_model_shape s;
    hy_err e;
    make_tmpdir();
    assert_int_equal(hy_model_shape_get(&s, "tiny", &e), 0);
    char dir[200];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, sub);
    hy_random_model_opts o = {.out_dir = dir, .shape = &s, .fp8 = fp8, .seed = 7, .force = true};
    hy_random_model_stats stt;
    if (hy_random_model_write(&o, &stt, &e)) fail_msg("%s", e.msg);
}

/* A well-conditioned random model (hyla random-model tiny: weights ~N(0, 0.02)): its logits are
 * nearly flat, so KL is measured at a temperature that makes the reference confident (mean
 * top-1 probability 0.5, roughly a trained LM's); top-1 does not depend on the temperature and
 * flips only where the reference's own margin is small. */
static void test_quality_tame(void **st) {
    (void)st;
    write_tiny("tame", false);
    char d[200];
    snprintf(d, sizeof d, "%s/tame", g_dir);
    hy_model *m = NULL;
    hy_err err;
    assert_int_equal(hy_model_load(&m, d, &err), 0);
    prompt_set ps = {0};
    static const int lens[] = {1, 2, 63, 65, 129, 300, 700};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        if (lens[i] > MAX_T) continue;
        ps.ids[ps.n] = malloc(sizeof(int32_t) * (size_t)lens[i]);
        for (int k = 0; k < lens[i]; k++) ps.ids[ps.n][k] = (int32_t)((k * 2654435761u + i * 97u) % (unsigned)m->hp.vocab_size);
        ps.len[ps.n++] = lens[i];
    }
    const double tm = calibrate_temp(m, &ps);
    const cfg cfgs[] = {
        {"fp32, ref tier", {.n_threads = 2, .isa = "ref"}, 0.99, 1e-8},
        {"bf16 act prefill", {.n_threads = 2, .fast_prefill = true}, 0.95, 2e-3},
        {"fp8 (all)", ALLQ(HY_WEIGHTS_FP8), 0.75, 0.15},
        {"q8 (all)", ALLQ(HY_WEIGHTS_Q8), 0.90, 0.015},
        {"q4 (all)", ALLQ(HY_WEIGHTS_Q4), 0.45, 1.0},
        {"fp8 (selective)", SELQ(HY_WEIGHTS_FP8), 0.75, 0.15},
        {"q8 (selective)", SELQ(HY_WEIGHTS_Q8), 0.90, 0.015},
        {"q4 (selective)", SELQ(HY_WEIGHTS_Q4), 0.45, 1.0},
    };
    printf("| model            | weights           | pos   | mean KL   | max KL    | top-1  | B/w   |\n");
    quality_table("random tiny", m, &ps, tm, cfgs, (int)(sizeof cfgs / sizeof cfgs[0]));
    prompts_free(&ps);
    hy_model_free(m);
}

/* ---- official-layout FP8 checkpoint ------------------------------------------------------ */

static void test_fp8_checkpoint(void **st) {
    (void)st;
    write_tiny("fp8", true);
    write_tiny("bf16", false);
    char d8[200], d16[200];
    snprintf(d8, sizeof d8, "%s/fp8", g_dir);
    snprintf(d16, sizeof d16, "%s/bf16", g_dir);
    hy_model *m8 = NULL, *m16 = NULL;
    hy_err err;
    assert_int_equal(hy_model_load(&m8, d8, &err), 0);
    assert_int_equal(hy_model_load(&m16, d16, &err), 0);
    const int V = m8->hp.vocab_size, n = 80;
    int32_t ids[80];
    for (int i = 0; i < n; i++) ids[i] = (int32_t)((i * 37 + 11) % V);

    hy_seq *seq = NULL, *seq16 = NULL;
    assert_int_equal(hy_seq_create(&seq, m8, n, &err), 0);
    assert_int_equal(hy_seq_create(&seq16, m16, n, &err), 0);
    hy_ctx *c16 = NULL;
    hy_ctx_opts o = {.n_threads = 2};
    assert_int_equal(hy_ctx_create(&c16, m16, &o, &err), 0);
    float *base = run(c16, seq16, ids, n, V);

    /* in place, every tier this machine runs */
    hy_cpu_features f;
    hy_cpu_detect(&f);
    float *first = NULL;
    for (int i = 0; i < HY_ISA_COUNT; i++) {
        if (!hy_isa_supported(&f, (hy_isa)i)) continue;
        hy_ctx_opts oi = {.n_threads = 2, .isa = hy_isa_name((hy_isa)i)};
        hy_ctx *c8 = NULL;
        if (hy_ctx_create(&c8, m8, &oi, &err)) fail_msg("fp8 checkpoint: %s", err.msg);
        const hy_linears *L = hy_ctx_linears(c8);
        /* as stored: row groups where the tier reads those and the matrices were copied */
        const unsigned gf = L->res == HY_WRES_USED_COPY ? hy_linears_tier_flags(0, (hy_isa)i, hy_ctx_tune(c8)) : 0;
        const bool grp = gf & HY_LIN_BF16_GROUPS, grp8 = gf & HY_LIN_FP8_GROUPS;
        const unsigned bf = 1u << (grp ? HY_WFMT_BF16G : HY_WFMT_BF16);
        assert_true(L->cls[HY_WCLASS_MLP].fmts == 1u << (grp8 ? HY_WFMT_FP8G : HY_WFMT_FP8));
        assert_true(L->cls[HY_WCLASS_GDN_AB].fmts == bf);
        assert_true(L->cls[HY_WCLASS_LM_HEAD].fmts == bf);
        float *lg = run(c8, seq, ids, n, V);
        for (int k = 0; k < n * V; k++) assert_true(isfinite(lg[k]));
        acc A = {0};
        add_rows(&A, base, lg, n, V);
        double d = first ? hy_test_max_abs_diff(first, lg, (size_t)n * V) : 0;
        printf("fp8 checkpoint in place (%s): vs bf16 checkpoint mean KL %.3g, top-1 %.4f; vs first tier max|d| %.3g\n",
               hy_isa_name((hy_isa)i), A.kl_sum / A.n, (double)A.top1 / A.n, d);
        assert_true((double)A.top1 / A.n >= 0.8 && A.kl_sum / A.n <= 5e-4);
        assert_true(d <= 1e-4);
        if (!first) first = lg;
        else free(lg);
        hy_ctx_free(c8);
    }
    /* converted at load: bf16 (dequantized), q8 */
    for (int w = 0; w < 2; w++) {
        hy_ctx_opts ow = {.n_threads = 2, .weights = w ? HY_WEIGHTS_Q8 : HY_WEIGHTS_BF16};
        hy_ctx *c = NULL;
        if (hy_ctx_create(&c, m8, &ow, &err)) fail_msg("fp8 -> %s: %s", w ? "q8" : "bf16", err.msg);
        float *lg = run(c, seq, ids, n, V);
        acc A = {0};
        add_rows(&A, first, lg, n, V);
        printf("fp8 checkpoint -> %s at load: vs fp8 in place mean KL %.3g, top-1 %.4f\n", w ? "q8" : "bf16",
               A.kl_sum / A.n, (double)A.top1 / A.n);
        assert_true((double)A.top1 / A.n >= 0.8 && A.kl_sum / A.n <= 5e-4);
        free(lg);
        hy_ctx_free(c);
    }
    free(first);
    free(base);
    hy_ctx_free(c16);
    hy_seq_free(seq);
    hy_seq_free(seq16);
    hy_model_free(m8);
    hy_model_free(m16);
}

static int teardown(void **st) {
    (void)st;
    if (g_dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd)) return -1;
    }
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_checkpoint),
        cmocka_unit_test(test_quality_tame),
        cmocka_unit_test(test_quality_fixtures),
        cmocka_unit_test(test_quality_trained),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
