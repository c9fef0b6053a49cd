/* model/rowsplit: every row of every call is handed out exactly once, at aligned boundaries,
 * with one thread, with threads that run one after the other (all work stolen), and with real
 * threads of which some stall (stealing under contention), several calls between barriers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/threadpool.h"
#include "model/rowsplit.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Takes every piece of one call for thread ith; counts each row, checks the boundaries. */
static int take_all(hy_rowsplit *s, int rows, int align, int piece, int ith, _Atomic int *count, int *pieces) {
    hy_rowsplit_call call;
    hy_rowsplit_begin(s, rows, align, piece, ith, &call);
    int o0, o1, n = 0, got = 0;
    while (hy_rowsplit_next(s, &call, ith, &o0, &o1)) {
        if (o0 % align || (o1 % align && o1 != rows) || o0 >= o1 || o1 > rows) return -1;
        if (o1 - o0 > 8 * piece) return -1;
        for (int r = o0; r < o1; r++) atomic_fetch_add(&count[r], 1);
        got += o1 - o0;
        n++;
    }
    if (pieces) *pieces = n;
    return got;
}

static void test_one_thread(void **st) {
    (void)st;
    hy_err err;
    hy_rowsplit *s;
    assert_int_equal(hy_rowsplit_create(&s, 1, &err), HY_OK);
    static _Atomic int count[1000];
    const int shapes[][3] = {{1000, 1, 64}, {999, 16, 32}, {7, 16, 16}, {0, 1, 8}, {1, 1, 1}, {1000, 1, 4}};
    for (int rep = 0; rep < 3; rep++) { /* the ring wraps: 15 calls over 32 slots, reset, again */
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            memset(count, 0, sizeof count);
            int pieces = 0;
            assert_int_equal(take_all(s, shapes[i][0], shapes[i][1], shapes[i][2], 0, count, &pieces), shapes[i][0]);
            for (int r = 0; r < shapes[i][0]; r++) assert_int_equal(count[r], 1);
            /* one thread: a quarter of what is left each time, 1 to 8 pieces */
            int expect = 0;
            for (int left = shapes[i][0], a = shapes[i][1], p = shapes[i][2]; left > 0; expect++) {
                int len = (left / 4 + a - 1) / a * a;
                len = len < p ? p : len > 8 * p ? 8 * p : len;
                left -= len < left ? len : left;
            }
            assert_int_equal(pieces, expect);
        }
        if (rep == 1) hy_rowsplit_reset(s);
    }
    hy_rowsplit_free(s);
}

/* Thread 0 runs its whole call before thread 1 starts: thread 0 must take thread 1's part too
 * (halving it again and again), and thread 1 then finds nothing. */
static void test_sequential_threads_steal(void **st) {
    (void)st;
    hy_err err;
    for (int nth = 2; nth <= 4; nth++) {
        hy_rowsplit *s;
        assert_int_equal(hy_rowsplit_create(&s, nth, &err), HY_OK);
        static _Atomic int count[4096];
        for (int call = 0; call < 40; call++) { /* more calls than the ring holds */
            const int rows = 4096 - 37 * call, align = call % 3 ? 16 : 1, piece = align * (1 + call % 5);
            memset(count, 0, sizeof count);
            assert_int_equal(take_all(s, rows, align, piece, 0, count, NULL), rows);
            for (int i = 1; i < nth; i++) assert_int_equal(take_all(s, rows, align, piece, i, count, NULL), 0);
            for (int r = 0; r < rows; r++) assert_int_equal(count[r], 1);
        }
        hy_rowsplit_free(s);
    }
}

typedef struct job {
    hy_threadpool *tp;
    hy_rowsplit *s;
    _Atomic int *count; /* [calls][rows] */
    int rows, calls, per_barrier;
    _Atomic int bad, got_by[8], stalls;
} job;

static void spin_us(int us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void run(void *arg, int ith, int nth) {
    (void)nth;
    job *j = arg;
    unsigned rnd = 12345u + 977u * (unsigned)ith;
    for (int c = 0; c < j->calls; c++) {
        hy_rowsplit_call call;
        const int align = c % 2 ? 16 : 1;
        hy_rowsplit_begin(j->s, j->rows, align, align * 4, ith, &call);
        int o0, o1;
        while (hy_rowsplit_next(j->s, &call, ith, &o0, &o1)) {
            if (o0 % align || (o1 % align && o1 != j->rows) || o0 >= o1) atomic_fetch_add(&j->bad, 1);
            for (int r = o0; r < o1; r++) atomic_fetch_add(&j->count[(size_t)c * j->rows + r], 1);
            atomic_fetch_add(&j->got_by[ith], o1 - o0);
            rnd = rnd * 1103515245u + 12345u;
            if (ith == 1 && (rnd >> 16) % 8 == 0) { /* a thread another process delays */
                spin_us(20);
                atomic_fetch_add(&j->stalls, 1);
            }
        }
        if ((c + 1) % j->per_barrier == 0) hy_threadpool_barrier(j->tp);
    }
}

static void test_threads(void **st) {
    (void)st;
    hy_err err;
    for (int nth = 2; nth <= 4; nth++) {
        hy_threadpool *tp;
        hy_rowsplit *s;
        assert_int_equal(hy_threadpool_create(&tp, nth, &err), HY_OK);
        assert_int_equal(hy_rowsplit_create(&s, nth, &err), HY_OK);
        job j;
        memset(&j, 0, sizeof j);
        j.tp = tp;
        j.s = s;
        j.rows = 3001;
        j.calls = 60;
        j.per_barrier = 5;
        j.count = calloc((size_t)j.calls * j.rows, sizeof *j.count);
        assert_non_null(j.count);
        for (int step = 0; step < 3; step++) {
            memset(j.count, 0, (size_t)j.calls * j.rows * sizeof *j.count);
            hy_rowsplit_reset(s);
            hy_threadpool_run(tp, run, &j);
            assert_int_equal(atomic_load(&j.bad), 0);
            for (size_t i = 0; i < (size_t)j.calls * j.rows; i++) assert_int_equal(atomic_load(&j.count[i]), 1);
        }
        /* how the rows fell depends on timing: printed, not asserted */
        long total = 0;
        printf("%d threads: rows taken", nth);
        for (int i = 0; i < nth; i++) {
            total += atomic_load(&j.got_by[i]);
            printf(" %d", atomic_load(&j.got_by[i]));
        }
        printf(" (thread 1 stalled %d times)\n", atomic_load(&j.stalls));
        assert_int_equal(total, 3L * j.calls * j.rows);
        free(j.count);
        hy_rowsplit_free(s);
        hy_threadpool_free(tp);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_thread),
        cmocka_unit_test(test_sequential_threads_steal),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
