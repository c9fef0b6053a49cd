/* base/threadpool: every thread runs each job once, barriers (plain and prefetching) order
 * phases, sizes 1..4. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/threadpool.h"

#include <string.h>

typedef struct job {
    hy_threadpool *tp;
    int calls[8];
    int data[8];
    int bad;
    int rounds;
} job;

static void count_job(void *ctx, int ith, int nth) {
    job *j = ctx;
    (void)nth;
    j->calls[ith]++;
}

/* Each round: every thread writes its slot, barrier, checks everyone's slot. */
static void barrier_job(void *ctx, int ith, int nth) {
    job *j = ctx;
    for (int r = 1; r <= j->rounds; r++) {
        j->data[ith] = r * 100 + ith;
        hy_threadpool_barrier(j->tp);
        for (int i = 0; i < nth; i++)
            if (j->data[i] != r * 100 + i) j->bad = 1;
        hy_threadpool_barrier(j->tp);
    }
}

/* The same with the prefetching barrier: ranges of every shape (none, NULL, empty, odd
 * lengths, a long one) must not change what the barrier orders. */
static unsigned char pf_buf[1 << 20];
static void barrier_pf_job(void *ctx, int ith, int nth) {
    job *j = ctx;
    for (int r = 1; r <= j->rounds; r++) {
        const hy_pf_range rs[4] = {{NULL, 100}, {pf_buf + 3, 0}, {pf_buf + 1, (size_t)(r * 37 % 200)},
                                   {pf_buf + 7, sizeof pf_buf - 7}};
        j->data[ith] = r * 100 + ith;
        hy_threadpool_barrier_prefetch(j->tp, rs, r % 5);
        for (int i = 0; i < nth; i++)
            if (j->data[i] != r * 100 + i) j->bad = 1;
        hy_threadpool_barrier_prefetch(j->tp, NULL, 0);
    }
}

static void test_run_and_barrier(void **st) {
    (void)st;
    for (int n = 1; n <= 4; n++) {
        hy_threadpool *tp = NULL;
        assert_int_equal(hy_threadpool_create(&tp, n, NULL), 0);
        assert_int_equal(hy_threadpool_size(tp), n);
        job j;
        memset(&j, 0, sizeof j);
        j.tp = tp;
        for (int k = 0; k < 500; k++) hy_threadpool_run(tp, count_job, &j);
        for (int i = 0; i < n; i++) assert_int_equal(j.calls[i], 500);
        for (int i = n; i < 8; i++) assert_int_equal(j.calls[i], 0);
        j.rounds = 200;
        for (int k = 0; k < 5; k++) hy_threadpool_run(tp, barrier_job, &j);
        assert_int_equal(j.bad, 0);
        for (int k = 0; k < 5; k++) hy_threadpool_run(tp, barrier_pf_job, &j);
        assert_int_equal(j.bad, 0);
        hy_threadpool_free(tp);
    }
}

static void test_split_range(void **st) {
    (void)st;
    for (int n = 0; n < 40; n++)
        for (int nth = 1; nth <= 7; nth++) {
            int next = 0;
            for (int ith = 0; ith < nth; ith++) {
                int a, b;
                hy_split_range(n, ith, nth, &a, &b);
                assert_int_equal(a, next);
                assert_true(b >= a && b - a <= n / nth + 1);
                next = b;
            }
            assert_int_equal(next, n);
        }
}

static void test_bad_size(void **st) {
    (void)st;
    hy_threadpool *tp = (hy_threadpool *)1;
    hy_err e;
    assert_int_equal(hy_threadpool_create(&tp, 0, &e), HY_E_INVALID);
    assert_null(tp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_and_barrier),
        cmocka_unit_test(test_split_range),
        cmocka_unit_test(test_bad_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
