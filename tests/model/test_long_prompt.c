/*
 * A 4096-token prompt on a fixture model: logits finite, every GDN recurrent and
 * conv state and every cached K/V finite (state norms printed), and a second
 * run from a fresh sequence (on a 2-thread context) reproduces the first bit for
 * bit, logits and GDN state alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/forward.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Under sanitizers (unoptimised, ~50x slower) 1024 tokens still cover two
 * 512-token internal steps and 16 GDN chunks; the numerics at 4096 are checked
 * by the normal build. */
#if HY_TEST_SANITIZED
#define N_TOK 1024
#else
#define N_TOK 4096
#endif

static int all_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static void test_long_prompt(void **st) {
    (void)st;
    char *dir = hy_test_data_path("models/tiny-text-bf16");
    hy_model *m = NULL;
    hy_err err;
    int rc = hy_model_load(&m, dir, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    free(dir);
    const int V = m->hp.vocab_size;
    int32_t *ids = malloc(sizeof(int32_t) * N_TOK);
    uint64_t r = 0x243F6A8885A308D3ull;
    for (int i = 0; i < N_TOK; i++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        ids[i] = (int32_t)(r % (uint64_t)V);
    }

    hy_ctx *c1 = NULL, *c2 = NULL;
    hy_ctx_opts o1 = {.n_threads = 1}, o2 = {.n_threads = 2};
    assert_int_equal(hy_ctx_create(&c1, m, &o1, &err), 0);
    assert_int_equal(hy_ctx_create(&c2, m, &o2, &err), 0);
    hy_seq *s1 = NULL, *s2 = NULL;
    assert_int_equal(hy_seq_create(&s1, m, N_TOK, &err), 0);
    assert_int_equal(hy_seq_create(&s2, m, N_TOK, &err), 0);
    float *l1 = malloc(sizeof(float) * V), *l2 = malloc(sizeof(float) * V);

    assert_int_equal(hy_forward(c1, s1, ids, N_TOK, l1, false, &err), 0);
    assert_int_equal(hy_seq_pos(s1), N_TOK);
    assert_true(all_finite(l1, (size_t)V));
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) mx = fmaxf(mx, fabsf(l1[i]));
    printf("%d-token prompt: last logits finite, |logit| max %.2f\n", N_TOK, mx);

    const hy_gdn_state *g = hy_seq_gdn_state(s1);
    for (int l = 0; l < g->n_layers; l++) {
        const float *rec = hy_gdn_state_rec(g, l), *conv = hy_gdn_state_conv(g, l);
        assert_true(all_finite(rec, g->rec_floats));
        assert_true(all_finite(conv, g->conv_floats));
        double nr = 0, nc = 0;
        for (size_t i = 0; i < g->rec_floats; i++) nr += (double)rec[i] * rec[i];
        for (size_t i = 0; i < g->conv_floats; i++) nc += (double)conv[i] * conv[i];
        printf("GDN layer slot %d: |recurrent state| %.4g, |conv state| %.4g\n", l, sqrt(nr), sqrt(nc));
        assert_true(isfinite(nr) && isfinite(nc) && nr > 0);
    }
    const hy_kv_cache *kv = hy_seq_kv_cache(s1);
    float *kr = malloc(sizeof(float) * (size_t)kv->kv_dim), *vr = malloc(sizeof(float) * (size_t)kv->kv_dim);
    for (int l = 0; l < kv->n_layers; l++)
        for (int p = 0; p < N_TOK; p++) {
            hy_kv_cache_get_pos(kv, l, p, kr, vr);
            assert_true(all_finite(kr, (size_t)kv->kv_dim) && all_finite(vr, (size_t)kv->kv_dim));
        }
    free(kr);
    free(vr);

    /* second run, fresh sequence, other thread count: bit for bit */
    assert_int_equal(hy_forward(c2, s2, ids, N_TOK, l2, false, &err), 0);
    assert_memory_equal(l1, l2, sizeof(float) * V);
    assert_memory_equal(hy_seq_gdn_state(s1)->data, hy_seq_gdn_state(s2)->data, hy_seq_gdn_state(s1)->bytes);
    printf("second run from a fresh state (2 threads): logits and GDN state bit-identical\n");

    /* full: no room for one more token */
    assert_int_equal(hy_forward(c1, s1, ids, 1, l1, false, &err), HY_E_RANGE);

    free(l1); free(l2); free(ids);
    hy_seq_free(s1); hy_seq_free(s2);
    hy_ctx_free(c1); hy_ctx_free(c2);
    hy_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_long_prompt)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
