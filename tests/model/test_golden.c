/*
 * Golden model test: every fixture model under tests/data/golden/<name>/
 * (checkpoint in tests/data/models/<name>/) against HF transformers run in
 * fp32, and against an independent double-precision reference of the spec
 * (synth_model.h, "exact").
 *
 *  - every prompt: max|d| vs HF <= TOL_HF (catches any semantic or layout
 *    error, which moves logits by O(1)); max|d| vs exact <= TOL_EXACT;
 *  - accuracy: our worst max|d| vs exact over a model's prompts is no larger
 *    than HF fp32's own worst max|d| vs exact;
 *  - the longest all-positions prompt fed in splits (1+62+66, 64+64+1, 100+29)
 *    and token by token agrees with one call within TOL_SPLIT;
 *  - every recorded greedy continuation is reproduced exactly;
 *  - 1 vs 2 threads is bit-identical.
 *
 * Why not 1e-4 (fp32) / 1e-3 (bf16) vs HF and 1e-5 for splits: the fixtures
 * amplify fp32 rounding ~100x (8 random layers, |logit| up to ~20), so HF fp32
 * itself is far from exact. Measured: HF fp32 vs exact up to 2.75e-4
 * (tiny-text), 6.6e-4 (tiny-text-bf16), 1.39e-3 (tiny-mm), 8.2e-4
 * (tiny-mm-bf16); HF fp32 fed the same splits differs from its own one-call
 * logits by up to 3.5e-4 / 5.7e-4 / 2.4e-3 / 9.5e-4. Ours: <= 3.6e-4 vs exact,
 * <= 3.4e-4 across splits. The strict 1e-5 split invariance is asserted on the
 * better-conditioned synthetic model (test_forward_synth.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/forward.h"
#include "synth_model.h"
#include "test_util.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_HF 3e-3    /* vs HF fp32 (HF itself is up to 1.39e-3 from exact) */
#define TOL_EXACT 1e-3 /* vs the double-precision reference (ours <= 3.6e-4) */
/* Under sanitizers (unoptimised, ~50x slower) prompts longer than this are
 * skipped and the double reference is not run: that build looks for memory
 * errors; the normal build checks all the numerics. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#define SAN_MAX_T 200
#else
#define SANITIZED 0
#define SAN_MAX_T 1000000
#endif
#define TOL_SPLIT 1e-3 /* ours <= 3.4e-4; HF fp32 itself up to 2.4e-3 */

/* hy_test_data_path of a formatted relative path (caller frees). */
static char *data_pathf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *data_pathf(const char *fmt, ...) {
    char rel[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof rel);
    return hy_test_data_path(rel);
}

static float *load_f32(const char *name, const char *file, size_t expect) {
    char *path = data_pathf("golden/%s/%s", name, file);
    size_t len = 0;
    float *p = (float *)hy_test_read_file(path, &len);
    if (!p || len != expect * sizeof(float)) {
        fprintf(stderr, "%s: expected %zu floats, got %zu bytes\n", path, expect, len);
        fail();
    }
    free(path);
    return p;
}

static int32_t *json_ids(json_t *arr, int *n) {
    *n = (int)json_array_size(arr);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(*n > 0 ? *n : 1));
    for (int i = 0; i < *n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, (size_t)i));
    return ids;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* One call, or a list of call sizes; returns logits of every position. */
static float *run_all(hy_ctx *ctx, hy_seq *seq, const int32_t *ids, int n, const int *sp, int k, int V) {
    hy_err err;
    hy_seq_reset(seq);
    float *lg = malloc(sizeof(float) * (size_t)n * V);
    int done = 0;
    for (int i = 0; i < k; i++) {
        assert_int_equal(hy_forward(ctx, seq, ids + done, sp[i], lg + (size_t)done * V, true, &err), 0);
        done += sp[i];
    }
    assert_int_equal(done, n);
    return lg;
}

static void check_model(const char *name, double *worst_out) {
    char *mpath = data_pathf("golden/%s/manifest.json", name);
    json_error_t jerr;
    json_t *man = json_load_file(mpath, 0, &jerr);
    if (!man) fprintf(stderr, "%s: %s\n", mpath, jerr.text);
    assert_non_null(man);
    free(mpath);
    char *dir = data_pathf("models/%s", name);
    hy_model *m = NULL;
    hy_err err;
    int rc = hy_model_load(&m, dir, &err);
    if (rc) fprintf(stderr, "load %s: %s\n", dir, err.msg);
    assert_int_equal(rc, 0);
    free(dir);
    const int V = m->hp.vocab_size;
    assert_int_equal(V, (int)json_integer_value(json_object_get(man, "vocab_size")));
    const double tol = TOL_HF;

    hy_ctx *ctx = NULL, *ctx2 = NULL;
    hy_ctx_opts o1 = {.n_threads = 1}, o2 = {.n_threads = 2};
    assert_int_equal(hy_ctx_create(&ctx, m, &o1, &err), 0);
    assert_int_equal(hy_ctx_create(&ctx2, m, &o2, &err), 0);
    hy_seq *seq = NULL;
    assert_int_equal(hy_seq_create(&seq, m, 1024, &err), 0);

    json_t *prompts = json_object_get(man, "prompts");
    assert_true(json_array_size(prompts) > 0);
    double worst = 0, worst_ours = 0, worst_hf = 0;
    const int32_t *split_ids = NULL;
    int split_n = 0;
    float *split_base = NULL;
    for (size_t pi = 0; pi < json_array_size(prompts); pi++) {
        json_t *p = json_array_get(prompts, pi);
        const char *pname = json_string_value(json_object_get(p, "name"));
        bool all = !strcmp(json_string_value(json_object_get(p, "positions")), "all");
        int n;
        int32_t *ids = json_ids(json_object_get(p, "ids"), &n);
        assert_true(n >= 1 && n <= 1024);
        if (n > SAN_MAX_T) {
            free(ids);
            continue;
        }
        size_t rows = all ? (size_t)n : 1;
        float *want = load_f32(name, json_string_value(json_object_get(p, "logits")), rows * V);
        float *got = malloc(sizeof(float) * rows * V);
        hy_seq_reset(seq);
        assert_int_equal(hy_forward(ctx, seq, ids, n, got, all, &err), 0);
        double e = hy_test_max_abs_diff(got, want, rows * V);
        /* exact result from the double-precision reference (all positions; keep the rows compared) */
        double e_ours = 0, e_hf = 0;
        if (!SANITIZED) {
            double *exact = malloc(sizeof(double) * (size_t)n * V);
            ref_forward(m, ids, n, 0, 0, exact);
            const double *ex = exact + (size_t)(n - (int)rows) * V;
            e_ours = max_abs_fd(got, ex, rows * V);
            e_hf = max_abs_fd(want, ex, rows * V);
            free(exact);
        }
        if (e_ours > worst_ours) worst_ours = e_ours;
        if (e_hf > worst_hf) worst_hf = e_hf;
        printf("%-15s %-7s T=%-4d %-4s vs HF max|d| = %.3g (tol %.0e) | vs exact: ours %.3g, HF %.3g\n", name,
               pname, n, all ? "all" : "last", e, tol, e_ours, e_hf);
        if (e > worst) worst = e;
        assert_true(e <= tol);
        assert_true(e_ours <= TOL_EXACT);
        /* 2 threads: bit-identical */
        {
            float *got2 = malloc(sizeof(float) * rows * V);
            hy_seq_reset(seq);
            assert_int_equal(hy_forward(ctx2, seq, ids, n, got2, all, &err), 0);
            assert_memory_equal(got, got2, sizeof(float) * rows * V);
            free(got2);
        }
        if (all && n > split_n) {
            free((void *)split_ids);
            free(split_base);
            split_ids = ids;
            split_n = n;
            split_base = got;
            got = NULL;
            ids = NULL;
        }
        free(got); free(want); free(ids);
    }

    /* splits and token by token on the longest all-positions prompt */
    if (split_n >= 129) {
        static const int sp_a[] = {1, 62, 66}, sp_b[] = {64, 64, 1}, sp_c[] = {100, 29};
        struct { const int *sp; int k; const char *nm; } cases[] = {
            {sp_a, 3, "1+62+66"}, {sp_b, 3, "64+64+1"}, {sp_c, 2, "100+29"}};
        int tail = split_n - 129;
        for (size_t i = 0; i < 3; i++) {
            int sp[4];
            memcpy(sp, cases[i].sp, sizeof(int) * cases[i].k);
            sp[cases[i].k - 1] += tail;
            float *lg = run_all(ctx, seq, split_ids, split_n, sp, cases[i].k, V);
            double e = hy_test_max_abs_diff(split_base, lg, (size_t)split_n * V);
            printf("%-15s split %-8s vs one call max|d| = %.3g\n", name, cases[i].nm, e);
            assert_true(e <= TOL_SPLIT);
            free(lg);
        }
        int *ones = malloc(sizeof(int) * split_n);
        for (int i = 0; i < split_n; i++) ones[i] = 1;
        float *lg = run_all(ctx, seq, split_ids, split_n, ones, split_n, V);
        double e = hy_test_max_abs_diff(split_base, lg, (size_t)split_n * V);
        printf("%-15s token by token vs one call max|d| = %.3g\n", name, e);
        assert_true(e <= TOL_SPLIT);
        free(lg);
        free(ones);
    }
    free((void *)split_ids);
    free(split_base);
    printf("%-15s worst vs exact: ours %.3g, HF fp32 %.3g\n", name, worst_ours, worst_hf);
    assert_true(worst_ours <= worst_hf);

    /* greedy continuations */
    json_t *greedy = json_object_get(man, "greedy");
    float *lg = malloc(sizeof(float) * V);
    for (size_t gi = 0; gi < json_array_size(greedy); gi++) {
        json_t *g = json_array_get(greedy, gi);
        const char *pname = json_string_value(json_object_get(g, "prompt"));
        json_t *p = NULL;
        for (size_t pi = 0; pi < json_array_size(prompts); pi++)
            if (!strcmp(json_string_value(json_object_get(json_array_get(prompts, pi), "name")), pname))
                p = json_array_get(prompts, pi);
        assert_non_null(p);
        int n, ng;
        int32_t *ids = json_ids(json_object_get(p, "ids"), &n);
        int32_t *want = json_ids(json_object_get(g, "tokens"), &ng);
        hy_seq_reset(seq);
        assert_int_equal(hy_forward(ctx, seq, ids, n, lg, false, &err), 0);
        int match = 0;
        for (int i = 0; i < ng; i++) {
            int32_t tok = argmax(lg, V);
            if (tok != want[i]) break;
            match++;
            assert_int_equal(hy_forward(ctx, seq, &tok, 1, lg, false, &err), 0);
        }
        printf("%-15s greedy after %-7s %d/%d tokens match (min top1-top2 gap %.3g)\n", name, pname, match, ng,
               json_real_value(json_object_get(g, "min_gap")));
        assert_int_equal(match, ng);
        free(ids);
        free(want);
    }
    free(lg);

    hy_seq_free(seq);
    hy_ctx_free(ctx);
    hy_ctx_free(ctx2);
    hy_model_free(m);
    json_decref(man);
    *worst_out = worst;
}

static void test_golden_all(void **st) {
    (void)st;
    char *gdir = hy_test_data_path("golden");
    DIR *dp = opendir(gdir);
    assert_non_null(dp);
    char names[32][256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dp)) && n < 32) {
        if (de->d_name[0] == '.') continue;
        if (strlen(de->d_name) >= sizeof names[0]) continue;
        strcpy(names[n++], de->d_name);
    }
    closedir(dp);
    free(gdir);
    assert_true(n > 0);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char t[256];
                memcpy(t, names[i], sizeof t);
                memcpy(names[i], names[j], sizeof t);
                memcpy(names[j], t, sizeof t);
            }
    for (int i = 0; i < n; i++) {
        double w;
        check_model(names[i], &w);
        printf("%-15s worst max|d| over prompts = %.3g\n", names[i], w);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden_all)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
