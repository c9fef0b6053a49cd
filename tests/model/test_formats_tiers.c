/*
 * Every weight format on every kernel tier, on the bf16 golden fixtures (tiny-text-bf16,
 * tiny-mm-bf16), everything quantizable quantized (HY_QUANT_ALL: the tiny matrices would mostly
 * stay bf16 under the selective default, so the quantized kernels would hardly run):
 *  - logits of the fixture prompts (every position of len65 and len129, the last of len63 and
 *    len700) with fp8 / q8 / q4 weights against the same tier's stored-bf16 logits: max|d|
 *    within the format's stated tolerance (a bound on the quantization error of these models,
 *    measured values printed next to max|logit|: 5.8 and 10 on these fixtures);
 *  - the same format on every tier against the ref tier: max|d| <= 1e-4 for float weights (the
 *    forward pass rounds differently per tier, ~1e-6); q8 / q4 matmuls are bit-identical
 *    across tiers by contract (kernels/matmul.h, test_matmul_simd), but their int8 activation
 *    rounding amplifies the other ops' differences, see k_fmts;
 *  - greedy agreement, reported: the recorded 32-token greedy continuations of the fixture
 *    (HF's, which the bf16 engine reproduces exactly, test_golden) against greedy decoding with
 *    each format: tokens equal before the first divergence, and in total.
 * and the class table hy_linears_plan (`hyla inspect --weights`) promises equals the one the
 * context built. Quality in KL / top-1 terms is test_quant_quality's job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/cpu.h"
#include "model/forward.h"
#include "model/random_model.h"
#include "model/shapes.h"
#include "st_writer.h"
#include "model/linears.h"
#include "model/model.h"
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SANITIZED HY_TEST_SANITIZED

typedef struct fmt_case {
    const char *name;
    hy_wreq w;
    double tol;      /* max|d| vs the tier's bf16 logits */
    double tier_tol; /* max|d| vs the first tier, same format */
} fmt_case;

/* Bounds vs bf16: about twice the largest value measured on the two fixtures (printed; the
 * max|logit| is printed too). Across tiers: 1e-4 for float weights; for q8 / q4 the
 * activations are rounded to int8 per group, so the other ops' ~1e-6 tier differences move a
 * value sitting on a rounding edge by a whole int8 step, which the following layers carry to
 * the logits (measured 0.03-0.05 for q8): bounded by the format's own error instead. */
static const fmt_case k_fmts[] = {
    {"bf16", HY_WEIGHTS_AUTO, 0.0, 1e-4},
    {"fp8", HY_WEIGHTS_FP8, 1.0, 1e-4},
    {"q8", HY_WEIGHTS_Q8, 0.3, 0.3},
    {"q4", HY_WEIGHTS_Q4, 3.5, 3.5},
};
#define N_FMT (int)(sizeof k_fmts / sizeof k_fmts[0])

typedef struct prompt {
    int32_t *ids;
    int n;
    bool all;
} prompt;

/* Logits of every prompt, concatenated (rows: all positions or the last). */
static float *run_prompts(hy_ctx *ctx, hy_seq *seq, const prompt *p, int np, int V, size_t *rows) {
    size_t total = 0;
    for (int i = 0; i < np; i++) total += p[i].all ? (size_t)p[i].n : 1;
    float *out = malloc(sizeof(float) * total * (size_t)V);
    float *tmp = malloc(sizeof(float) * 1024 * (size_t)V);
    assert_non_null(out);
    assert_non_null(tmp);
    size_t r = 0;
    hy_err err = {0};
    for (int i = 0; i < np; i++) {
        hy_seq_reset(seq);
        assert_int_equal(hy_forward(ctx, seq, p[i].ids, p[i].n, tmp, p[i].all, &err), 0);
        size_t k = p[i].all ? (size_t)p[i].n : 1;
        memcpy(out + r * (size_t)V, tmp, sizeof(float) * k * (size_t)V);
        r += k;
    }
    free(tmp);
    *rows = total;
    return out;
}

/* Greedy continuation of n tokens; returns tokens equal to want before the first divergence
 * and adds the total equal count to *same. */
static int greedy(hy_ctx *ctx, hy_seq *seq, const int32_t *ids, int n, const int32_t *want, int ng, int V, int *same) {
    hy_err err = {0};
    float *lg = malloc(sizeof(float) * (size_t)V);
    assert_non_null(lg);
    hy_seq_reset(seq);
    assert_int_equal(hy_forward(ctx, seq, ids, n, lg, false, &err), 0);
    int prefix = -1;
    for (int t = 0; t < ng; t++) {
        int32_t tok = (int32_t)hy_test_argmax(lg, V);
        if (tok == want[t]) (*same)++;
        else if (prefix < 0) prefix = t;
        /* continue from the recorded token so later steps are compared on the same context */
        assert_int_equal(hy_forward(ctx, seq, &want[t], 1, lg, false, &err), 0);
    }
    free(lg);
    return prefix < 0 ? ng : prefix;
}

/* What `hyla inspect --weights` prints (hy_linears_plan) is the class table the context built. */
static void check_plan(const hy_model *m, const hy_ctx_opts *o, const char *tier, const hy_ctx *ctx) {
    hy_wclass_info plan[HY_WCLASS_COUNT];
    hy_err err = {0};
    const unsigned flags = hy_linears_tier_flags(o->quant_flags, (hy_isa)hy_isa_parse(tier), hy_ctx_tune(ctx));
    assert_int_equal(hy_linears_plan(m, o->weights, flags, o->weights_res, plan, &err), 0);
    for (int k = 0; k < HY_WCLASS_COUNT; k++) {
        const hy_wclass_info *b = &hy_ctx_linears(ctx)->cls[k];
        assert_int_equal(plan[k].n, b->n);
        assert_int_equal(plan[k].numel, b->numel);
        assert_int_equal(plan[k].bytes_stored, b->bytes_stored);
        assert_int_equal(plan[k].bytes_used, b->bytes_used);
        assert_int_equal(plan[k].fmts, b->fmts);
    }
}

static void run_model(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", name);
    char *dir = hy_test_data_path(rel);
    hy_model *m = NULL;
    hy_err err = {0};
    if (hy_model_load(&m, dir, &err)) fail_msg("%s: %s", name, err.msg);
    free(dir);
    const int V = m->hp.vocab_size;

    snprintf(rel, sizeof rel, "golden/%s/manifest.json", name);
    char *mpath = hy_test_data_path(rel);
    json_error_t je;
    json_t *man = json_load_file(mpath, 0, &je);
    free(mpath);
    assert_non_null(man);
    /* len700 is skipped under sanitizers (time) */
    static const char *want_prompts[] = {"len63", "len65", "len129", SANITIZED ? "-" : "len700"};
    prompt P[4];
    int np = 0;
    const json_t *prompts = json_object_get(man, "prompts");
    for (size_t i = 0; i < json_array_size(prompts); i++) {
        const json_t *pj = json_array_get(prompts, i);
        const char *pn = json_string_value(json_object_get(pj, "name"));
        for (int k = 0; k < 4; k++)
            if (pn && !strcmp(pn, want_prompts[k])) {
                P[np].ids = hy_test_json_ids(json_object_get(pj, "ids"), &P[np].n);
                P[np].all = !strcmp(json_string_value(json_object_get(pj, "positions")), "all");
                np++;
            }
    }
    assert_int_equal(np, SANITIZED ? 3 : 4);

    const char *tiers[8];
    const int nt = hy_test_isa_tiers(tiers, 8);
    hy_seq *seq = NULL;
    assert_int_equal(hy_seq_create(&seq, m, 1024, &err), 0);
    float *ref_tier[N_FMT] = {0}; /* each format's logits on the first tier */
    for (int ti = 0; ti < nt; ti++) {
        float *bf16 = NULL;
        size_t rows = 0;
        for (int f = 0; f < N_FMT; f++) {
            hy_ctx_opts o = {.n_threads = 2, .isa = tiers[ti], .weights = k_fmts[f].w, .quant_flags = HY_QUANT_ALL};
            hy_ctx *ctx = NULL;
            if (hy_ctx_create(&ctx, m, &o, &err)) fail_msg("%s %s %s: %s", name, tiers[ti], k_fmts[f].name, err.msg);
            check_plan(m, &o, tiers[ti], ctx);
            float *lg = run_prompts(ctx, seq, P, np, V, &rows);
            const size_t cnt = rows * (size_t)V;
            double d_bf16 = 0, d_tier = 0;
            if (f == 0) bf16 = lg;
            else d_bf16 = hy_test_max_abs_diff(bf16, lg, cnt);
            if (ti == 0) ref_tier[f] = lg;
            else d_tier = hy_test_max_abs_diff(ref_tier[f], lg, cnt);
            /* greedy agreement over the recorded continuations */
            int same = 0, total = 0, prefix_min = 1 << 30;
            const json_t *gr = json_object_get(man, "greedy");
            for (size_t g = 0; g < json_array_size(gr); g++) {
                const json_t *gj = json_array_get(gr, g);
                const char *pn = json_string_value(json_object_get(gj, "prompt"));
                int pn_len = 0, ng = 0;
                int32_t *pids = NULL;
                for (size_t i = 0; i < json_array_size(prompts); i++) {
                    const json_t *pj = json_array_get(prompts, i);
                    if (pn && !strcmp(json_string_value(json_object_get(pj, "name")), pn))
                        pids = hy_test_json_ids(json_object_get(pj, "ids"), &pn_len);
                }
                assert_non_null(pids);
                int32_t *want = hy_test_json_ids(json_object_get(gj, "tokens"), &ng);
                const int pre = greedy(ctx, seq, pids, pn_len, want, ng, V, &same);
                if (pre < prefix_min) prefix_min = pre;
                total += ng;
                free(pids);
                free(want);
            }
            double lmax = 0;
            for (size_t i = 0; i < cnt; i++) lmax = fabs(lg[i]) > lmax ? fabs(lg[i]) : lmax;
            printf("%-15s %-6s %-4s  max|logit| %.3g  max|d| vs bf16 %.4g (tol %.3g)  vs %s tier %.3g  greedy %d/%d "
                   "tokens, first divergence after >= %d\n",
                   name, tiers[ti], k_fmts[f].name, lmax, d_bf16, k_fmts[f].tol, tiers[0], d_tier, same, total,
                   prefix_min);
            if (f == 0) assert_int_equal(same, total); /* bf16 reproduces HF's greedy tokens */
            assert_true(d_bf16 <= k_fmts[f].tol);
            assert_true(d_tier <= k_fmts[f].tier_tol);
            if (lg != bf16 && lg != ref_tier[f]) free(lg);
            hy_ctx_free(ctx);
        }
        if (ti > 0) free(bf16);
    }
    for (int f = 0; f < N_FMT; f++) free(ref_tier[f]);
    for (int i = 0; i < np; i++) free(P[i].ids);
    hy_seq_free(seq);
    json_decref(man);
    hy_model_free(m);
}

static void test_formats_text(void **st) {
    (void)st;
    run_model("tiny-text-bf16");
}

static void test_formats_mm(void **st) {
    (void)st;
    run_model("tiny-mm-bf16");
}

/* The plan of a block-FP8 checkpoint (the golden fixtures are bf16): fp8 used as stored (FP8G
 * where the tier groups rows), and converted to each other format, on every tier. */
static void test_plan_fp8(void **st) {
    (void)st;
    char *dir = stw_tmpdir();
    assert_non_null(dir);
    hy_model_shape s;
    hy_err err = {0};
    assert_int_equal(hy_model_shape_get(&s, "tiny", &err), 0);
    const hy_random_model_opts ro = {.out_dir = dir, .shape = &s, .fp8 = true, .seed = 3};
    hy_random_model_stats rs;
    assert_int_equal(hy_random_model_write(&ro, &rs, &err), 0);
    hy_model *m = NULL;
    if (hy_model_load(&m, dir, &err)) fail_msg("%s", err.msg);
    const char *tiers[8];
    const int nt = hy_test_isa_tiers(tiers, 8);
    for (int ti = 0; ti < nt; ti++)
        for (int f = 0; f < N_FMT; f++) {
            const hy_ctx_opts o = {.n_threads = 1, .isa = tiers[ti], .weights = k_fmts[f].w};
            hy_ctx *ctx = NULL;
            if (hy_ctx_create(&ctx, m, &o, &err)) fail_msg("fp8 %s %s: %s", tiers[ti], k_fmts[f].name, err.msg);
            check_plan(m, &o, tiers[ti], ctx);
            hy_ctx_free(ctx);
        }
    printf("fp8 checkpoint: the plan equals the context's class table, %d tiers x %d formats\n", nt, N_FMT);
    hy_model_free(m);
    stw_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats_text),
        cmocka_unit_test(test_formats_mm),
        cmocka_unit_test(test_plan_fp8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
