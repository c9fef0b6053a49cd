/*
 * hy_forward_batch (batched decode): on the tiny fixture models, n = 1..16 sequences at
 * different positions (prefills of different lengths, one of them empty) take three decode
 * steps batched, while twin sequences with the same prefills take the same tokens one by one
 * through hy_forward: logits and positions are bit-identical (tolerance 0: the matmuls' order
 * per output does not depend on T, and every per-token kernel gets the arguments of a solo
 * step), for every kernel tier, 1 and 2 threads, and with fast_prefill on (batches >= 8 rows
 * must keep fp32 activations), and with fast_decode on (n = 3, 5, 16: bf16 activations in the
 * GEMVs of bf16 matrices, and fp8's own sum, batched or not: the same per-output chains at any
 * batch size up to HY_MATMUL_GEMV_MAX_T); tiny-text also with fp8 weights quantized at load.
 * Bad batches (repeated or full sequences, bad ids) fail and change nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/forward.h"
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 16
#define CAP 40

static int32_t tok(uint64_t *r, int V) {
    *r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
    return (int32_t)(*r % (uint64_t)V);
}

/* Returns max |batched - solo| over every logit (asserts 0). */
static double run_case(const hy_model *m, const hy_ctx_opts *o, int n) {
    hy_err err;
    const int V = m->hp.vocab_size;
    hy_ctx *ctx = NULL;
    assert_int_equal(hy_ctx_create(&ctx, m, o, &err), 0);
    hy_seq *a[MAXN], *b[MAXN];
    int32_t prompt[CAP];
    uint64_t r = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        assert_int_equal(hy_seq_create(&a[i], m, CAP, &err), 0);
        assert_int_equal(hy_seq_create(&b[i], m, CAP, &err), 0);
        int len = i == 1 ? 0 : 1 + (i * 7) % 30; /* one sequence empty, the others 1..30 tokens */
        for (int k = 0; k < len; k++) prompt[k] = tok(&r, V);
        if (len) {
            assert_int_equal(hy_forward(ctx, a[i], prompt, len, NULL, false, &err), 0);
            assert_int_equal(hy_forward(ctx, b[i], prompt, len, NULL, false, &err), 0);
        }
    }
    float *la = malloc(sizeof(float) * (size_t)n * V), *lb = malloc(sizeof(float) * (size_t)n * V);
    int32_t ids[MAXN];
    double worst = 0;
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < n; i++) ids[i] = tok(&r, V);
        int rc = hy_forward_batch(ctx, a, ids, n, la, &err);
        if (rc) fprintf(stderr, "%s\n", err.msg);
        assert_int_equal(rc, 0);
        for (int i = 0; i < n; i++)
            assert_int_equal(hy_forward(ctx, b[i], &ids[i], 1, lb + (size_t)i * V, false, &err), 0);
        double e = hy_test_max_abs_diff(la, lb, (size_t)n * V);
        if (e > worst) worst = e;
        assert_memory_equal(la, lb, sizeof(float) * (size_t)n * V);
        for (int i = 0; i < n; i++) assert_int_equal(hy_seq_pos(a[i]), hy_seq_pos(b[i]));
    }
    for (int i = 0; i < n; i++) {
        const hy_gdn_state *ga = hy_seq_gdn_state(a[i]), *gb = hy_seq_gdn_state(b[i]);
        assert_memory_equal(ga->data, gb->data, ga->bytes);
        hy_seq_free(a[i]);
        hy_seq_free(b[i]);
    }
    free(la);
    free(lb);
    hy_ctx_free(ctx);
    return worst;
}

static void check_model(const char *rel, hy_wreq weights) {
    char *dir = hy_test_data_path(rel);
    hy_model *m = NULL;
    hy_err err;
    int rc = hy_model_load(&m, dir, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    free(dir);
    const char *isas[8];
    int n_isas = hy_test_isa_tiers(isas, 8);
    static const int ns[] = {1, 2, 3, 5, 8, 16};
    for (int k = 0; k < n_isas; k++)
        for (int th = 1; th <= 2; th++)
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
                hy_ctx_opts o = {.n_threads = th, .isa = isas[k], .fast_prefill = ns[j] >= 8,
                                 .fast_decode = ns[j] == 3 || ns[j] == 5 || ns[j] == 16, .weights = weights};
                double e = run_case(m, &o, ns[j]);
                printf("%-13s %-6s%s threads %d n %2d%s%s batched vs one by one max|d| = %g\n", rel, isas[k],
                       weights == HY_WEIGHTS_FP8 ? " fp8" : "", th, ns[j], o.fast_prefill ? " (fast_prefill)" : "",
                       o.fast_decode ? " (fast_decode)" : "", e);
            }
    hy_model_free(m);
}

static void test_tiny_text(void **st) {
    (void)st;
    check_model("models/tiny-text", HY_WEIGHTS_AUTO);
}

/* fp8 weights (quantized at load): the fast decode's FP8 sums (matmul.h) do not depend on T
 * either (on AMX: fp32 FMAs for 1-4 tokens, the tiles for more, in one order) */
static void test_tiny_text_fp8(void **st) {
    (void)st;
    check_model("models/tiny-text", HY_WEIGHTS_FP8);
}

static void test_tiny_mm_bf16(void **st) {
    (void)st;
    check_model("models/tiny-mm-bf16", HY_WEIGHTS_AUTO);
}

static void test_bad_batches(void **st) {
    (void)st;
    char *dir = hy_test_data_path("models/tiny-text");
    hy_model *m = NULL;
    hy_err err;
    assert_int_equal(hy_model_load(&m, dir, &err), 0);
    free(dir);
    hy_ctx *ctx = NULL;
    hy_ctx_opts o = {.n_threads = 2};
    assert_int_equal(hy_ctx_create(&ctx, m, &o, &err), 0);
    hy_seq *s[3];
    for (int i = 0; i < 3; i++) assert_int_equal(hy_seq_create(&s[i], m, 2, &err), 0);
    const int32_t one = 1;
    assert_int_equal(hy_forward(ctx, s[2], &one, 1, NULL, false, &err), 0);
    assert_int_equal(hy_forward(ctx, s[2], &one, 1, NULL, false, &err), 0); /* s[2] now full */
    const hy_gdn_state *g0 = hy_seq_gdn_state(s[0]);
    unsigned char *before = malloc(g0->bytes);
    memcpy(before, g0->data, g0->bytes);

    hy_seq *dup[2] = {s[0], s[0]};
    int32_t ids[3] = {1, 2, 3};
    assert_int_not_equal(hy_forward_batch(ctx, dup, ids, 2, NULL, &err), 0);
    printf("repeated: %s\n", err.msg);
    hy_seq *full[2] = {s[0], s[2]};
    assert_int_not_equal(hy_forward_batch(ctx, full, ids, 2, NULL, &err), 0);
    printf("full: %s\n", err.msg);
    int32_t bad[2] = {1, m->hp.vocab_size};
    hy_seq *ok[2] = {s[0], s[1]};
    assert_int_not_equal(hy_forward_batch(ctx, ok, bad, 2, NULL, &err), 0);
    printf("bad id: %s\n", err.msg);
    hy_seq *nul[2] = {s[0], NULL};
    assert_int_not_equal(hy_forward_batch(ctx, nul, ids, 2, NULL, &err), 0);
    assert_int_not_equal(hy_forward_batch(ctx, ok, ids, 0, NULL, &err), 0);
    assert_int_equal(hy_seq_pos(s[0]), 0);
    assert_int_equal(hy_seq_pos(s[1]), 0);
    assert_int_equal(hy_seq_pos(s[2]), 2);
    assert_memory_equal(before, g0->data, g0->bytes);
    /* and a good one still works, logits NULL allowed */
    assert_int_equal(hy_forward_batch(ctx, ok, ids, 2, NULL, &err), 0);
    assert_int_equal(hy_seq_pos(s[0]), 1);
    free(before);
    for (int i = 0; i < 3; i++) hy_seq_free(s[i]);
    hy_ctx_free(ctx);
    hy_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_text),
        cmocka_unit_test(test_tiny_text_fp8),
        cmocka_unit_test(test_tiny_mm_bf16),
        cmocka_unit_test(test_bad_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
