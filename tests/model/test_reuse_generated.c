/*
 * Reuse of generated tokens (slot retention, engine.c) on the real forward
 * pass (tiny fixture model).
 *
 * Why not bit-identical, and the tolerance. A retained sequence fed its
 * generated tokens one per decode call (the recurrent GDN update, one token
 * at a time), and the resumed prefill starts where the retained tokens end,
 * which is not one of the prefill schedule's call boundaries. An uncached
 * prefill of the same prompt computes those tokens inside chunked GDN calls
 * (64-token chunks, a different order of fp32 operations). Both are exact
 * evaluations of the same recurrence, so the results agree to fp32 rounding
 * only. The tolerance (anchors / issue 6): for every computed position,
 *   max_v |logit_reuse[v] - logit_uncached[v]| <= 1e-6 * max_v |logit_uncached[v]|,
 * i.e. relative to the row's largest logit magnitude; the test prints the
 * measured worst ratio. Greedy tokens must be equal.
 *
 * Poisoning: a resumed ("derived") sequence must never store KV blocks or
 * checkpoints under the prefix cache's keys, which promise the scheduled
 * computation. test_no_poisoning forces a later request to be served by the
 * prefix cache after a derived run of the same prompt and compares it bit for
 * bit with the cache off; it also checks that the derived run differed from
 * cache-off in some bits (else the check could not see a poisoned entry).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "engine/fwd_model.h"
#include "model/model.h"
#include "engine_runs.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GEN 64
#define MAX_LEN 2048
#define TOL 1e-6

#define SZ(full, light) (HY_TEST_SANITIZED ? (light) : (full))

/* ---------------------------------------------------------------- rows */

typedef struct row {
    uint64_t tag;
    int choice, pos;
    float *v;
} row;

typedef struct rows {
    row *r;
    size_t n, cap;
    int n_vocab;
} rows;

static void hook(void *ctx, uint64_t tag, int choice, int pos, const float *v) {
    rows *R = ctx;
    if (R->n == R->cap) {
        R->cap = R->cap ? R->cap * 2 : 1024;
        R->r = realloc(R->r, sizeof(row) * R->cap);
        if (!R->r) abort();
    }
    float *c = malloc(sizeof(float) * (size_t)R->n_vocab);
    if (!c) abort();
    memcpy(c, v, sizeof(float) * (size_t)R->n_vocab);
    R->r[R->n++] = (row){tag, choice, pos, c};
}

static int row_cmp(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
    if (x->choice != y->choice) return x->choice - y->choice;
    return x->pos - y->pos;
}

/* ---------------------------------------------------------------- engine */

typedef struct runner {
    hy_fwd_model *fm;
    hy_engine *e;
    rows rec;
} runner;

static void runner_start(runner *R, bool cache, bool reuse, int slots) {
    memset(R, 0, sizeof *R);
    hy_err err = {0};
    assert_int_equal(hy_fwd_model_create(&R->fm, g_model, 1, 0, MAX_LEN, &err), 0);
    hy_engine_model mv;
    hy_fwd_model_vtable(R->fm, &mv);
    R->rec.n_vocab = mv.n_vocab;
    hy_engine_config c;
    hy_engine_config_default(&c);
    c.max_num_seqs = slots;
    c.max_model_len = MAX_LEN;
    c.prefill_chunk = 64;
    c.max_batch_tokens = 256;
    c.checkpoint_interval = 128;
    c.prefix_cache = cache;
    c.reuse_generated = reuse;
    c.logits_hook = hook;
    c.logits_hook_ctx = &R->rec;
    hy_engine_text t = {NULL, g_model->hp.vocab_size, hy_test_empty_token_bytes};
    int rc = hy_engine_create(&R->e, &c, &mv, &t, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void runner_stop(runner *R) {
    hy_engine_free(R->e);
    hy_fwd_model_free(R->fm);
    for (size_t i = 0; i < R->rec.n; i++) free(R->rec.r[i].v);
    free(R->rec.r);
}

typedef struct req {
    int32_t *prompt;
    int n;
    int max_tokens;
    int32_t split[64];
    int n_split;
    int32_t ckpt[4];
    int n_ckpt;
    uint64_t tag;
    /* outcome */
    int32_t tok[MAX_GEN];
    int n_tok;
    int cached;
    hy_finish fin;
} req;

static hy_request *submit(runner *R, const req *q) {
    return hy_test_submit_greedy(R->e, q->prompt, q->n, q->max_tokens, q->split, q->n_split, q->ckpt, q->n_ckpt,
                                 q->tag);
}

static void collect(hy_request *r, req *q) {
    hy_test_collect(r, q->tok, MAX_GEN, &q->n_tok, &q->fin, &q->cached);
}

static void run1(runner *R, req *q) { collect(submit(R, q), q); }

/* Compares the rows of request tag between two runs: *exact counts rows that
 * differ in any bit; returns the worst max|diff| / max|logit| over the rows
 * the first run computed (each must exist in the second). */
typedef struct cmp_out {
    double worst;
    long rows, differing, missing;
} cmp_out;

static void compare_tag(runner *a, runner *b, uint64_t tag, cmp_out *o) {
    memset(o, 0, sizeof *o);
    const int V = a->rec.n_vocab;
    for (size_t i = 0; i < a->rec.n; i++) {
        const row *x = &a->rec.r[i];
        if (x->tag != tag) continue;
        row key = {tag, x->choice, x->pos, NULL};
        const row *y = bsearch(&key, b->rec.r, b->rec.n, sizeof(row), row_cmp);
        o->rows++;
        if (!y) {
            o->missing++;
            continue;
        }
        double md = 0, ml = 0;
        for (int v = 0; v < V; v++) {
            double d = fabs((double)x->v[v] - (double)y->v[v]), l = fabs((double)y->v[v]);
            if (d > md) md = d;
            if (l > ml) ml = l;
        }
        if (memcmp(x->v, y->v, sizeof(float) * (size_t)V)) o->differing++;
        if (ml > 0 && md / ml > o->worst) o->worst = md / ml;
    }
}

static void sort_rows(runner *R) { qsort(R->rec.r, R->rec.n, sizeof(row), row_cmp); }

/* ---------------------------------------------------------------- chats (engine_runs.h) */

static void chat_user(chat *c, int len) {
    int32_t content[512];
    for (int i = 0; i < len; i++) content[i] = rnd_tok();
    chat_msg(c, R_USER, content, len);
}

/* The next turn's request, with the hints the server sends. */
static void chat_req(const chat *c, req *q, uint64_t tag, int max_tokens) {
    memset(q, 0, sizeof *q);
    q->n = c->n + 2;
    q->prompt = malloc(sizeof(int32_t) * (size_t)q->n);
    memcpy(q->prompt, c->t, sizeof(int32_t) * (size_t)c->n);
    q->prompt[c->n] = IM_START;
    q->prompt[c->n + 1] = R_ASSIST;
    for (int i = 0; i < c->n_ends && i < 64; i++) q->split[q->n_split++] = c->ends[i];
    q->ckpt[q->n_ckpt++] = c->ends[c->n_ends - 1];
    q->max_tokens = max_tokens;
    q->tag = tag;
}

static void req_copy(req *dst, const req *src) {
    *dst = *src;
    dst->prompt = malloc(sizeof(int32_t) * (size_t)src->n);
    memcpy(dst->prompt, src->prompt, sizeof(int32_t) * (size_t)src->n);
}

/* ---------------------------------------------------------------- tests */

/* A 4-turn chat with long generated replies: turns 2..4 resume in the
 * retained slot; every computed row within TOL of the uncached run. */
static void test_chat_within_tolerance(void **st) {
    (void)st;
    enum { T = 4 };
    g_rng = 31337;
    chat c;
    memset(&c, 0, sizeof c);
    int32_t sys[40];
    for (int i = 0; i < 40; i++) sys[i] = rnd_tok();
    chat_msg(&c, R_SYS, sys, 40);
    runner on, off;
    runner_start(&on, true, true, 4);
    req q[T], qo[T];
    for (int t = 0; t < T; t++) {
        chat_user(&c, SZ(20 + t * 30, 10));
        chat_req(&c, &q[t], 10 + (uint64_t)t, SZ(MAX_GEN, 24));
        run1(&on, &q[t]);
        chat_msg(&c, R_ASSIST, q[t].tok, q[t].n_tok);
    }
    hy_engine_stats es;
    hy_engine_get_stats(on.e, &es);
    runner_start(&off, false, false, 4);
    for (int t = 0; t < T; t++) {
        req_copy(&qo[t], &q[t]);
        run1(&off, &qo[t]);
    }
    sort_rows(&on);
    sort_rows(&off);
    double worst = 0;
    long differing = 0, n_rows = 0;
    for (int t = 0; t < T; t++) {
        cmp_out o;
        compare_tag(&on, &off, q[t].tag, &o);
        printf("turn %d: prompt %d, resumed at %d, %ld rows computed, %ld differ in some bit, worst "
               "max|d| / max|logit| = %.3g\n",
               t + 1, q[t].n, q[t].cached, o.rows, o.differing, o.worst);
        assert_int_equal(o.missing, 0);
        assert_int_equal(q[t].n_tok, qo[t].n_tok);
        assert_memory_equal(q[t].tok, qo[t].tok, sizeof(int32_t) * (size_t)q[t].n_tok);
        if (t > 0) assert_int_equal(q[t].cached, q[t - 1].n + q[t - 1].n_tok - 1); /* the retained slot */
        if (o.worst > worst) worst = o.worst;
        differing += o.differing;
        n_rows += o.rows;
        if (t > 0) assert_int_equal(o.rows, q[t].n - q[t].cached + q[t].n_tok - 1);
    }
    printf("reuse vs uncached: %ld rows, %ld not bit-identical, worst ratio %.3g (tolerance %.0e)\n", n_rows,
           differing, worst, TOL);
    assert_true(worst <= TOL);
    assert_int_equal((int)es.reuse_hits, T - 1);
    assert_int_equal(es.retained_seqs, 1);
    for (int t = 0; t < T; t++) {
        free(q[t].prompt);
        free(qo[t].prompt);
    }
    runner_stop(&on);
    runner_stop(&off);
}

/* One slot: A (turn 1), B (turn 2, resumed in A's retained slot: derived),
 * C (unrelated: evicts B's retained state), D = B's prompt, C again (evicts
 * D's), E = B's prompt + reply + a new user turn: D and E can only be served
 * by the prefix cache. If B had stored anything under the cache keys, D or E
 * would restore it: they must equal the uncached run bit for bit. */
static void test_no_poisoning(void **st) {
    (void)st;
    g_rng = 4711;
    chat c;
    memset(&c, 0, sizeof c);
    int32_t sys[30];
    for (int i = 0; i < 30; i++) sys[i] = rnd_tok();
    chat_msg(&c, R_SYS, sys, 30);
    runner on, off;
    runner_start(&on, true, true, 1);
    enum { N = 6 };
    req q[N], qo[N];
    chat_user(&c, SZ(150, 40));
    chat_req(&c, &q[0], 1, SZ(40, 16)); /* A */
    run1(&on, &q[0]);
    chat_msg(&c, R_ASSIST, q[0].tok, q[0].n_tok);
    chat_user(&c, SZ(150, 40));
    chat_req(&c, &q[1], 2, SZ(40, 16)); /* B */
    run1(&on, &q[1]);
    assert_int_equal(q[1].cached, q[0].n + q[0].n_tok - 1);
    memset(&q[2], 0, sizeof q[2]); /* C */
    q[2].n = 90;
    q[2].prompt = malloc(sizeof(int32_t) * 90);
    for (int i = 0; i < 90; i++) q[2].prompt[i] = rnd_tok();
    q[2].max_tokens = 4;
    q[2].tag = 3;
    run1(&on, &q[2]);
    hy_engine_stats es;
    hy_engine_get_stats(on.e, &es);
    assert_true(es.retained_evictions >= 1);
    req_copy(&q[3], &q[1]); /* D */
    q[3].tag = 4;
    run1(&on, &q[3]);
    req_copy(&q[4], &q[2]); /* C again */
    q[4].tag = 5;
    run1(&on, &q[4]);
    chat_msg(&c, R_ASSIST, q[1].tok, q[1].n_tok);
    chat_user(&c, SZ(60, 20));
    chat_req(&c, &q[5], 6, 8); /* E */
    run1(&on, &q[5]);
    printf("A %d tokens; B %d resumed at %d; D %d restored %d from the prefix cache; E %d restored %d\n", q[0].n,
           q[1].n, q[1].cached, q[3].n, q[3].cached, q[5].n, q[5].cached);
    hy_engine_get_stats(on.e, &es);
    assert_int_equal((int)es.reuse_hits, 1); /* only B resumed in a retained slot */
    /* D can only reuse what A computed (its prompt, at most A's length) */
    assert_true(q[3].cached > 0 && q[3].cached <= q[0].n);
    runner_start(&off, false, false, 1);
    for (int i = 0; i < N; i++) {
        req_copy(&qo[i], &q[i]);
        run1(&off, &qo[i]);
    }
    sort_rows(&on);
    sort_rows(&off);
    for (int i = 0; i < N; i++) {
        cmp_out o;
        compare_tag(&on, &off, q[i].tag, &o);
        printf("  %s: %ld rows, %ld differ in some bit, worst ratio %.3g\n", (const char *[]){"A", "B", "C", "D", "C again", "E"}[i], o.rows, o.differing, o.worst);
        assert_int_equal(o.missing, 0);
        assert_int_equal(q[i].n_tok, qo[i].n_tok);
        assert_memory_equal(q[i].tok, qo[i].tok, sizeof(int32_t) * (size_t)q[i].n_tok);
        if (i == 1) {
            assert_true(o.worst <= TOL);
            assert_true(o.differing > 0); /* else a poisoned entry would be invisible here */
        } else {
            assert_int_equal(o.differing, 0);
        }
        free(q[i].prompt);
        free(qo[i].prompt);
    }
    runner_stop(&on);
    runner_stop(&off);
}

/* Four conversations advanced concurrently on 3 slots (retention, the prefix
 * cache and LRU eviction all in play), one turn cancelled mid-way: every
 * completed turn equals its solo uncached run (greedy tokens; rows within TOL). */
static void test_concurrent_conversations(void **st) {
    (void)st;
    enum { NCV = 4, T = 3 };
    g_rng = 99;
    static chat cv[NCV];
    memset(cv, 0, sizeof cv);
    for (int k = 0; k < NCV; k++) {
        int32_t sys[20];
        for (int i = 0; i < 20; i++) sys[i] = rnd_tok();
        chat_msg(&cv[k], R_SYS, sys, 20);
    }
    runner on, off;
    runner_start(&on, true, true, 3);
    req q[T][NCV], qo[T][NCV];
    bool cancelled[T][NCV];
    memset(cancelled, 0, sizeof cancelled);
    for (int t = 0; t < T; t++) {
        hy_request *rs[NCV];
        for (int k = 0; k < NCV; k++) {
            chat_user(&cv[k], SZ(30 + 10 * k, 8));
            chat_req(&cv[k], &q[t][k], 100 + (uint64_t)(t * NCV + k), SZ(32, 12));
            rs[k] = submit(&on, &q[t][k]);
        }
        if (t == 1) { /* cancel conversation 2's turn after its first token */
            hy_event ev;
            while (hy_request_next_event(rs[2], &ev, 60000) == 1) {
                bool stop = ev.type == HY_EV_TOKEN || ev.type == HY_EV_DONE;
                hy_event_clear(&ev);
                if (stop) break;
            }
            hy_request_cancel(rs[2]);
            cancelled[t][2] = true;
        }
        for (int k = 0; k < NCV; k++) {
            collect(rs[k], &q[t][k]);
            /* a cancelled turn keeps no reply: the next user message follows */
            if (!cancelled[t][k]) chat_msg(&cv[k], R_ASSIST, q[t][k].tok, q[t][k].n_tok);
        }
    }
    hy_engine_stats es;
    hy_engine_get_stats(on.e, &es);
    runner_start(&off, false, false, 1);
    for (int t = 0; t < T; t++)
        for (int k = 0; k < NCV; k++) {
            req_copy(&qo[t][k], &q[t][k]);
            if (!cancelled[t][k]) run1(&off, &qo[t][k]);
        }
    sort_rows(&on);
    sort_rows(&off);
    double worst = 0;
    int resumed = 0;
    for (int t = 0; t < T; t++)
        for (int k = 0; k < NCV; k++) {
            if (!cancelled[t][k]) {
                cmp_out o;
                compare_tag(&on, &off, q[t][k].tag, &o);
                assert_int_equal(o.missing, 0);
                assert_int_equal(q[t][k].n_tok, qo[t][k].n_tok);
                assert_memory_equal(q[t][k].tok, qo[t][k].tok, sizeof(int32_t) * (size_t)q[t][k].n_tok);
                if (o.worst > worst) worst = o.worst;
            }
            resumed += q[t][k].cached > 0;
            free(q[t][k].prompt);
            free(qo[t][k].prompt);
        }
    printf("concurrent conversations: %llu resumed in retained slots (%llu tokens), %llu retained evicted, "
           "%d turns reused something, worst ratio %.3g\n",
           (unsigned long long)es.reuse_hits, (unsigned long long)es.reuse_hit_tokens,
           (unsigned long long)es.retained_evictions, resumed, worst);
    assert_true(worst <= TOL);
    /* Whether a turn resumes its own retained slot depends on the order the 3 slots free up,
     * which timing decides: when a conversation's retention was the least recent, its next
     * turn evicts another's, and so on down the line (a fresh-clone CI run under ctest -j2 saw
     * 0 of 9 once; alone it is 2). The retained path itself is checked deterministically by
     * the tests above; here, that turns reuse something (a retained slot or the prefix cache). */
    assert_true(resumed >= 1);
    runner_stop(&on);
    runner_stop(&off);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_within_tolerance),
        cmocka_unit_test(test_no_poisoning),
        cmocka_unit_test(test_concurrent_conversations),
    };
    return cmocka_run_group_tests(tests, hy_test_load_tiny_text, hy_test_free_model);
}
