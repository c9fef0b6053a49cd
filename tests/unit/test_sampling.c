/* sampling/: processors, draws and logprobs against hand-computed distributions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sampling/penalty.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hy_sampler *mk(int n) {
    hy_sampler *s = NULL;
    hy_err e = {0};
    assert_int_equal(hy_sampler_create(&s, n, &e), 0);
    return s;
}

/* Compares the sampler's distribution with expected (ids, probs) in order. */
static void expect_dist(hy_sampler *s, const float *logits, int n, const hy_sampling_params *p,
                        const hy_token_counts *tc, int m, const int32_t *ids, const double *probs, double tol) {
    const int32_t *gi;
    const double *gp;
    int got = hy_sampler_distribution(s, logits, n, p, tc, &gi, &gp);
    assert_int_equal(got, m);
    double maxerr = 0;
    for (int i = 0; i < m; i++) {
        assert_int_equal(gi[i], ids[i]);
        maxerr = fmax(maxerr, fabs(gp[i] - probs[i]));
    }
    printf("  dist m=%d max_abs_err=%.3g\n", m, maxerr);
    assert_true(maxerr < tol);
}

static void test_greedy_and_mask(void **st) {
    (void)st;
    hy_sampler *s = mk(8);
    hy_sampling_params p;
    hy_sampling_params_default(&p);
    p.temperature = 0.0f;
    float l[5] = {0.5f, 2.0f, 2.0f, -1.0f, 100.0f};
    /* ties go to the lowest id; the padded row 4 is masked by n_valid = 4 */
    for (int step = 0; step < 5; step++) assert_int_equal(hy_sampler_sample(s, l, 4, &p, NULL, 0, step, NULL, 0), 1);
    assert_int_equal(hy_sampler_sample(s, l, 5, &p, NULL, 0, 0, NULL, 0), 4);
    /* top_k = 1 is greedy too, whatever the temperature */
    p.temperature = 5.0f;
    p.top_k = 1;
    assert_int_equal(hy_sampler_sample(s, l, 4, &p, NULL, 0, 0, NULL, 0), 1);
    /* a masked row never wins even at high temperature */
    p.top_k = 0;
    for (int step = 0; step < 200; step++) assert_true(hy_sampler_sample(s, l, 4, &p, NULL, 7, step, NULL, 0) < 4);
    hy_sampler_free(s);
}

static void test_temperature(void **st) {
    (void)st;
    hy_sampler *s = mk(3);
    hy_sampling_params p;
    hy_sampling_params_default(&p);
    float l[3] = {0.0f, logf(2.0f), logf(4.0f)};
    int32_t ids[3] = {0, 1, 2};
    double pr1[3] = {1 / 7.0, 2 / 7.0, 4 / 7.0};
    expect_dist(s, l, 3, &p, NULL, 3, ids, pr1, 1e-6); /* logf rounding */
    p.temperature = 0.5f; /* squares the odds: 1 : 4 : 16 */
    double pr2[3] = {1 / 21.0, 4 / 21.0, 16 / 21.0};
    const int32_t *gi;
    const double *gp;
    assert_int_equal(hy_sampler_distribution(s, l, 3, &p, NULL, &gi, &gp), 3);
    for (int i = 0; i < 3; i++) assert_true(fabs(gp[i] - pr2[i]) < 1e-6); /* logf rounding */
    hy_sampler_free(s);
}

static void test_top_k_top_p_min_p(void **st) {
    (void)st;
    hy_sampler *s = mk(4);
    hy_sampling_params p;
    hy_sampling_params_default(&p);
    {
        float l[4] = {0.0f, logf(2.0f), logf(4.0f), logf(3.0f)};
        p.top_k = 2;
        int32_t ids[2] = {2, 3};
        double pr[2] = {4 / 7.0, 3 / 7.0};
        const int32_t *gi;
        const double *gp;
        assert_int_equal(hy_sampler_distribution(s, l, 4, &p, NULL, &gi, &gp), 2);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(gi[i], ids[i]);
            assert_true(fabs(gp[i] - pr[i]) < 1e-6);
        }
    }
    {
        /* probabilities .1 .2 .3 .4 */
        float l[4] = {logf(1.0f), logf(2.0f), logf(3.0f), logf(4.0f)};
        hy_sampling_params_default(&p);
        p.top_p = 0.6f; /* .4 < .6, .4+.3 >= .6 -> keep ids 3, 2 */
        const int32_t *gi;
        const double *gp;
        assert_int_equal(hy_sampler_distribution(s, l, 4, &p, NULL, &gi, &gp), 2);
        assert_int_equal(gi[0], 3);
        assert_int_equal(gi[1], 2);
        assert_true(fabs(gp[0] - 4 / 7.0) < 1e-6 && fabs(gp[1] - 3 / 7.0) < 1e-6);
        hy_sampling_params_default(&p);
        p.min_p = 0.45f; /* threshold .45*.4 = .18: ids 1,2,3 kept, id order */
        assert_int_equal(hy_sampler_distribution(s, l, 4, &p, NULL, &gi, &gp), 3);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(gi[i], i + 1);
            assert_true(fabs(gp[i] - (i + 2) / 9.0) < 1e-6);
        }
        /* top_k then top_p on the renormalised top-k (HF order): top-3 = .4,.3,.2 -> /.9;
         * top_p .5: .444 < .5, .777 >= .5 -> ids 3, 2 */
        hy_sampling_params_default(&p);
        p.top_k = 3;
        p.top_p = 0.5f;
        assert_int_equal(hy_sampler_distribution(s, l, 4, &p, NULL, &gi, &gp), 2);
        assert_int_equal(gi[0], 3);
        assert_int_equal(gi[1], 2);
    }
    hy_sampler_free(s);
}

static void test_top_p_large_fallback(void **st) {
    (void)st;
    /* All equal logits over 5000 tokens: top_p .9 needs 4500 candidates, more
     * than the first-try heap, so the full-sort path must be taken. */
    const int n = 5000;
    hy_sampler *s = mk(n);
    float *l = calloc(n, sizeof(float));
    hy_sampling_params p;
    hy_sampling_params_default(&p);
    p.top_p = 0.9f;
    const int32_t *gi;
    const double *gp;
    int m = hy_sampler_distribution(s, l, n, &p, NULL, &gi, &gp);
    printf("  top_p uniform kept %d of %d\n", m, n);
    assert_true(m >= 4499 && m <= 4501);
    for (int i = 0; i < m; i++) assert_int_equal(gi[i], i); /* ties by id */
    free(l);
    hy_sampler_free(s);
}

static void test_penalties(void **st) {
    (void)st;
    hy_token_counts tc;
    assert_int_equal(hy_token_counts_init(&tc, 4), 0);
    hy_token_counts_add(&tc, 0, false);
    hy_token_counts_add(&tc, 0, false);
    hy_token_counts_add(&tc, 1, true);
    hy_token_counts_add(&tc, 2, true);
    hy_token_counts_add(&tc, 2, false);
    hy_token_counts_add(&tc, 9, false); /* beyond n_vocab: ignored */
    float l[4] = {2.0f, -2.0f, 1.0f, 0.5f};
    hy_penalties_apply(l, 4, &tc, 2.0f, 0.5f, 0.25f);
    /* id0: 2/2 - .5*2 - .25; id1: -2*2; id2: 1/2 - .5 - .25; id3 untouched */
    assert_true(l[0] == -0.25f && l[1] == -4.0f && l[2] == -0.25f && l[3] == 0.5f);

    hy_sampler *s = mk(4);
    hy_sampling_params p;
    hy_sampling_params_default(&p);
    p.repetition_penalty = 2.0f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    float raw[4] = {2.0f, -2.0f, 1.0f, 0.5f};
    double e0 = exp(-0.25), e1 = exp(-4.0), e3 = exp(0.5), z = 2 * e0 + e1 + e3;
    int32_t ids[4] = {0, 1, 2, 3};
    double pr[4] = {e0 / z, e1 / z, e0 / z, e3 / z};
    expect_dist(s, raw, 4, &p, &tc, 4, ids, pr, 1e-12);
    assert_true(raw[0] == 2.0f); /* caller's logits untouched */
    /* logit_bias comes before the penalties: +2 on id 1 -> (-2+2)*2 = 0 */
    int32_t bid[1] = {1};
    float bval[1] = {2.0f};
    p.n_bias = 1;
    p.bias_ids = bid;
    p.bias_values = bval;
    z = 2 * e0 + 1.0 + e3;
    double pr2[4] = {e0 / z, 1.0 / z, e0 / z, e3 / z};
    expect_dist(s, raw, 4, &p, &tc, 4, ids, pr2, 1e-12);
    hy_sampler_free(s);
    hy_token_counts_release(&tc);
}

static void test_logprobs(void **st) {
    (void)st;
    hy_sampler *s = mk(4);
    hy_sampling_params p;
    hy_sampling_params_default(&p);
    p.temperature = 0.0f;
    p.repetition_penalty = 3.0f; /* penalties must not change the reported (raw) logprobs */
    hy_token_counts tc;
    hy_token_counts_init(&tc, 4);
    hy_token_counts_add(&tc, 2, false);
    float l[4] = {1.0f, 2.0f, 3.0f, 50.0f};
    hy_logprobs lp;
    int32_t t = hy_sampler_sample(s, l, 3, &p, &tc, 0, 0, &lp, 5);
    /* penalised: 1, 2, 1 -> greedy 1 */
    assert_int_equal(t, 1);
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    double err = fabs(lp.logprob - (2.0 - lse));
    assert_int_equal(lp.n_top, 3); /* capped at n_valid */
    assert_int_equal(lp.top_ids[0], 2);
    assert_int_equal(lp.top_ids[1], 1);
    assert_int_equal(lp.top_ids[2], 0);
    for (int i = 0; i < 3; i++) err = fmax(err, fabs(lp.top_logprobs[i] - ((3.0 - i) - lse)));
    printf("  logprobs max_abs_err=%.3g\n", err);
    assert_true(err < 1e-6);
    hy_token_counts_release(&tc);
    hy_sampler_free(s);
}

static void test_seeded_draws(void **st) {
    (void)st;
    hy_sampler *s = mk(3);
    hy_sampling_params p;
    hy_sampling_params_default(&p);
    p.seed = 1234;
    float l[3] = {0.0f, logf(2.0f), logf(4.0f)};
    /* same (seed, stream, step) -> same token; frequencies follow the distribution */
    int count[3] = {0};
    const int N = 30000;
    for (int i = 0; i < N; i++) {
        int32_t a = hy_sampler_sample(s, l, 3, &p, NULL, 5, (uint64_t)i, NULL, 0);
        int32_t b = hy_sampler_sample(s, l, 3, &p, NULL, 5, (uint64_t)i, NULL, 0);
        assert_int_equal(a, b);
        count[a]++;
    }
    double maxdev = 0;
    for (int i = 0; i < 3; i++) maxdev = fmax(maxdev, fabs(count[i] / (double)N - (1 << i) / 7.0));
    printf("  empirical max deviation %.4f over %d draws\n", maxdev, N);
    assert_true(maxdev < 0.015);
    /* other seeds / streams give other sequences */
    int diff = 0;
    hy_sampling_params q = p;
    q.seed = 1235;
    for (int i = 0; i < 100; i++)
        diff += hy_sampler_sample(s, l, 3, &p, NULL, 5, i, NULL, 0) != hy_sampler_sample(s, l, 3, &q, NULL, 5, i, NULL, 0);
    assert_true(diff > 20);
    diff = 0;
    for (int i = 0; i < 100; i++)
        diff += hy_sampler_sample(s, l, 3, &p, NULL, 5, i, NULL, 0) != hy_sampler_sample(s, l, 3, &p, NULL, 6, i, NULL, 0);
    assert_true(diff > 20);
    hy_sampler_free(s);
}

static void test_rng(void **st) {
    (void)st;
    double sum = 0, mn = 1, mx = 0;
    for (int i = 0; i < 100000; i++) {
        double u = hy_rng_uniform(42, 0, (uint64_t)i);
        assert_true(u >= 0.0 && u < 1.0);
        sum += u;
        mn = fmin(mn, u);
        mx = fmax(mx, u);
    }
    assert_true(fabs(sum / 100000 - 0.5) < 0.01);
    assert_true(mn < 0.001 && mx > 0.999);
    assert_true(hy_rng_u64(1, 2, 3) == hy_rng_u64(1, 2, 3));
    assert_true(hy_rng_u64(1, 2, 3) != hy_rng_u64(1, 3, 2));
}

static void test_token_counts(void **st) {
    (void)st;
    hy_token_counts a, b;
    assert_int_equal(hy_token_counts_init(&a, 1), 0);
    assert_int_equal(hy_token_counts_init(&b, 1), 0);
    for (int i = 0; i < 5000; i++) assert_int_equal(hy_token_counts_add(&a, i * 7 % 3001, i % 3 == 0), 0);
    assert_int_equal(hy_token_counts_copy(&b, &a), 0);
    uint32_t n;
    bool pr;
    int total = 0;
    for (int id = 0; id < 3001; id++) {
        if (hy_token_counts_get(&b, id, &n, &pr)) total += (int)n;
    }
    assert_int_equal(total, 5000 - 1667); /* i%3==0 are prompt entries */
    assert_false(hy_token_counts_get(&b, 4000, NULL, NULL));
    assert_int_equal(hy_token_counts_add(&a, -1, false), HY_E_INVALID);
    hy_token_counts_clear(&a);
    assert_false(hy_token_counts_get(&a, 7, NULL, NULL));
    hy_token_counts_release(&a);
    hy_token_counts_release(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_and_mask),   cmocka_unit_test(test_temperature),
        cmocka_unit_test(test_top_k_top_p_min_p), cmocka_unit_test(test_top_p_large_fallback),
        cmocka_unit_test(test_penalties),         cmocka_unit_test(test_logprobs),
        cmocka_unit_test(test_seeded_draws),      cmocka_unit_test(test_rng),
        cmocka_unit_test(test_token_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
