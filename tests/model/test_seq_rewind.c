/*
 * hy_seq_rewind (what `hyla bench` uses to start every repetition at the same depth): feed
 * 100 tokens, snapshot the GDN state at 60, continue to 100; rewind to 60 and feed the same
 * 40 tokens again (in other splits: one call, then token by token): the logits of every
 * position and the final GDN state are bit-identical to the first pass. Bad rewinds (past the
 * current position, a snapshot of other sizes) fail with a message and change nothing.
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

static void test_rewind(void **st) {
    (void)st;
    char *dir = hy_test_data_path("models/tiny-text");
    hy_model *m = NULL;
    hy_err err;
    int rc = hy_model_load(&m, dir, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    free(dir);
    const int V = m->hp.vocab_size, n = 100, at = 60;
    int32_t ids[100];
    uint64_t r = 7;
    for (int i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        ids[i] = (int32_t)(r % (uint64_t)V);
    }
    hy_ctx *ctx = NULL;
    hy_seq *seq = NULL;
    hy_gdn_state *snap = NULL, *end1 = NULL;
    hy_ctx_opts o = {.n_threads = 2};
    assert_int_equal(hy_ctx_create(&ctx, m, &o, &err), 0);
    assert_int_equal(hy_seq_create(&seq, m, n, &err), 0);
    const hy_gdn_state *g = hy_seq_gdn_state(seq);
    assert_int_equal(hy_gdn_state_create(&snap, g->n_layers, &g->d, g->conv_kernel, &err), 0);
    assert_int_equal(hy_gdn_state_create(&end1, g->n_layers, &g->d, g->conv_kernel, &err), 0);
    float *a = malloc(sizeof(float) * (size_t)(n - at) * V), *b = malloc(sizeof(float) * (size_t)(n - at) * V);

    assert_int_equal(hy_forward(ctx, seq, ids, at, NULL, false, &err), 0);
    hy_gdn_state_copy(snap, hy_seq_gdn_state(seq));
    assert_int_equal(hy_forward(ctx, seq, ids + at, n - at, a, true, &err), 0);
    hy_gdn_state_copy(end1, hy_seq_gdn_state(seq));

    /* one call again */
    assert_int_equal(hy_seq_rewind(seq, at, snap, &err), 0);
    assert_int_equal(hy_seq_pos(seq), at);
    assert_int_equal(hy_forward(ctx, seq, ids + at, n - at, b, true, &err), 0);
    assert_memory_equal(a, b, sizeof(float) * (size_t)(n - at) * V);
    assert_memory_equal(end1->data, hy_seq_gdn_state(seq)->data, end1->bytes);

    /* a different split after the rewind: 1 + 39 (decode then chunked) vs one call of 40 */
    assert_int_equal(hy_seq_rewind(seq, at, snap, &err), 0);
    assert_int_equal(hy_forward(ctx, seq, ids + at, 1, b, true, &err), 0);
    assert_int_equal(hy_forward(ctx, seq, ids + at + 1, n - at - 1, b + V, true, &err), 0);
    const double e = hy_test_max_abs_diff(a, b, (size_t)(n - at) * V);
    printf("rewind to %d, replay 1+39 vs one call of 40: max|d| = %.3g\n", at, e);
    assert_true(e <= 1e-3); /* as test_golden's TOL_SPLIT: this fixture amplifies fp32 rounding ~100x */

    /* bad rewinds: nothing changes */
    assert_int_equal(hy_seq_rewind(seq, n + 1, snap, &err), HY_E_RANGE);
    printf("past the end: %s\n", err.msg);
    hy_gdn_state *other = NULL;
    hy_gdn_dims od = g->d;
    od.Hv *= 2;
    assert_int_equal(hy_gdn_state_create(&other, g->n_layers, &od, g->conv_kernel, &err), 0);
    assert_int_equal(hy_seq_rewind(seq, at, other, &err), HY_E_INVALID);
    printf("other sizes: %s\n", err.msg);
    assert_int_equal(hy_seq_pos(seq), n);

    hy_gdn_state_free(other);
    free(a);
    free(b);
    hy_gdn_state_free(snap);
    hy_gdn_state_free(end1);
    hy_seq_free(seq);
    hy_ctx_free(ctx);
    hy_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rewind)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
