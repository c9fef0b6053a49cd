/*
 * Prefix cache exactness on the real forward pass (tiny fixture model): the
 * engine with the cache on must give, bit for bit, the same logits at every
 * position it computes and the same greedy tokens as the engine with the
 * cache off, for
 *   (a) the same prompt twice, (b) a prompt extended by 1, 17, 64, 700 tokens,
 *   (c) a 4-turn chat re-sent turn by turn (message ends as split / checkpoint
 *       hints, as the server passes them), (d) prompts sharing a prefix run
 *       concurrently, (e) all of it again under tiny budgets (evictions);
 * isolation: 16 concurrent requests sharing a long prefix, half cancelled,
 * survivors equal to their solo runs; and a seeded property test of hundreds
 * of requests with random shared prefixes in random waves.
 *
 * Logits are captured through the engine's logits_hook (every computed
 * position) and compared as 64-bit hashes of their bytes. A cached run skips
 * the restored positions, so it must compute exactly n_uncached - cached rows.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GEN 64
#define MAX_LEN 2048

/* Under sanitizers (unoptimised, ~50x slower) every workload is scaled down
 * (shorter prompts, fewer requests); the normal build runs the full sizes. */
#define SZ(full, light) (HY_TEST_SANITIZED ? (light) : (full))

/* ---------------------------------------------------------------- recorder */

typedef struct rec {
    uint64_t tag;
    int choice, pos;
    uint64_t h;
} rec;

typedef struct recorder {
    rec *v;
    size_t n, cap;
    int n_vocab;
} recorder;

static void hook(void *ctx, uint64_t tag, int choice, int pos, const float *row) {
    recorder *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->v = realloc(r->v, sizeof(rec) * r->cap);
        if (!r->v) abort();
    }
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)row;
    for (size_t i = 0; i < sizeof(float) * (size_t)r->n_vocab; i++) h = (h ^ b[i]) * 1099511628211ull;
    r->v[r->n++] = (rec){tag, choice, pos, h};
}

static int rec_cmp(const void *a, const void *b) {
    const rec *x = a, *y = b;
    if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
    if (x->choice != y->choice) return x->choice - y->choice;
    return x->pos - y->pos;
}

/* ---------------------------------------------------------------- engine runs */

typedef struct req_spec {
    int32_t *prompt;
    int n;
    int max_tokens;
    int32_t split[64];
    int n_split;
    int32_t ckpt[16];
    int n_ckpt;
    uint64_t tag;
} req_spec;

typedef struct outcome {
    int32_t tok[MAX_GEN];
    int n_tok;
    int cached;
    hy_finish fin;
} outcome;

typedef struct runner {
    hy_fwd_model *fm;
    hy_engine *e;
    recorder rec;
} runner;

typedef struct budget {
    size_t kv, state;
} budget;

/* The KV cache type of the runners (test_exact_extend_kv_types sets bf16) */
static hy_kv_type g_kv = HY_KV_F32;

static void runner_start(runner *R, bool cache, const budget *b) {
    memset(R, 0, sizeof *R);
    hy_err err = {0};
    const hy_ctx_opts o = {.n_threads = 1, .kv_type = g_kv};
    assert_int_equal(hy_fwd_model_create_opts(&R->fm, g_model, &o, MAX_LEN, &err), 0);
    hy_engine_model mv;
    hy_fwd_model_vtable(R->fm, &mv);
    R->rec.n_vocab = mv.n_vocab;
    hy_engine_config c;
    hy_engine_config_default(&c);
    c.max_num_seqs = 16;
    c.max_model_len = MAX_LEN;
    c.prefill_chunk = 64;
    c.max_batch_tokens = 256;
    c.checkpoint_interval = SZ(128, 48);
    c.prefix_cache = cache;
    /* Retention of finished sequences (reuse of generated tokens) resumes
     * from decode-fed states, which is exact only to ~1e-7 (tested in
     * test_reuse_generated.c); here every hit must be bit-identical, so only
     * the prefix cache may serve. */
    c.reuse_generated = false;
    if (b) {
        c.prefix_kv_bytes = b->kv;
        c.state_cache_bytes = b->state;
    }
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
    free(R->rec.v);
}


static hy_request *submit(runner *R, const req_spec *q) {
    return hy_test_submit_greedy(R->e, q->prompt, q->n, q->max_tokens, q->split, q->n_split, q->ckpt, q->n_ckpt,
                                 q->tag);
}

static void collect(hy_request *r, outcome *o) {
    memset(o, 0, sizeof *o);
    hy_test_collect(r, o->tok, MAX_GEN, &o->n_tok, &o->fin, &o->cached);
}

/* Runs the requests in waves (wave[i] requests submitted together, then all
 * collected); waves == NULL: one at a time. */
static void run(runner *R, req_spec *q, int n, const int *waves, int n_waves, outcome *out) {
    hy_request **rs = calloc((size_t)n, sizeof *rs);
    int i = 0, w = 0;
    while (i < n) {
        int k = waves && w < n_waves ? waves[w++] : 1;
        if (i + k > n) k = n - i;
        for (int j = 0; j < k; j++) rs[i + j] = submit(R, &q[i + j]);
        for (int j = 0; j < k; j++) collect(rs[i + j], &out[i + j]);
        i += k;
    }
    free(rs);
}

/* Cached vs uncached: same tokens, and every cached-run logits row equals the
 * uncached row of the same (request, position); the cached run computed
 * exactly the rows the cache did not restore. skip[i]: leave request i out. */
static int compare(runner *on, runner *off, const req_spec *q, const outcome *o_on, const outcome *o_off, int n,
                   const bool *skip) {
    qsort(off->rec.v, off->rec.n, sizeof(rec), rec_cmp);
    qsort(on->rec.v, on->rec.n, sizeof(rec), rec_cmp);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (skip && skip[i]) continue;
        if (o_on[i].n_tok != o_off[i].n_tok || memcmp(o_on[i].tok, o_off[i].tok, sizeof(int32_t) * (size_t)o_on[i].n_tok)) {
            fprintf(stderr, "request %d (tag %llu): greedy tokens differ\n", i, (unsigned long long)q[i].tag);
            bad++;
        }
    }
    /* rows */
    size_t j = 0;
    long n_on_rows = 0, n_off_rows = 0;
    for (size_t k = 0; k < on->rec.n; k++) {
        const rec *x = &on->rec.v[k];
        int qi = -1;
        for (int i = 0; i < n; i++)
            if (q[i].tag == x->tag) qi = i;
        if (qi < 0 || (skip && skip[qi])) continue;
        n_on_rows++;
        while (j < off->rec.n && rec_cmp(&off->rec.v[j], x) < 0) j++;
        if (j == off->rec.n || rec_cmp(&off->rec.v[j], x) != 0) {
            fprintf(stderr, "tag %llu pos %d computed with the cache but not without\n", (unsigned long long)x->tag, x->pos);
            bad++;
        } else if (off->rec.v[j].h != x->h) {
            if (bad < 10) fprintf(stderr, "tag %llu pos %d: logits differ\n", (unsigned long long)x->tag, x->pos);
            bad++;
        }
    }
    long cached = 0;
    for (size_t k = 0; k < off->rec.n; k++) {
        int qi = -1;
        for (int i = 0; i < n; i++)
            if (q[i].tag == off->rec.v[k].tag) qi = i;
        if (qi >= 0 && !(skip && skip[qi])) n_off_rows++;
    }
    for (int i = 0; i < n; i++)
        if (!(skip && skip[i])) cached += o_on[i].cached;
    if (n_on_rows != n_off_rows - cached) {
        fprintf(stderr, "rows: cached run %ld, uncached %ld, cached tokens %ld\n", n_on_rows, n_off_rows, cached);
        bad++;
    }
    printf("compared %ld rows (uncached %ld, restored %ld): %d mismatches\n", n_on_rows, n_off_rows, cached, bad);
    return bad;
}

/* ---------------------------------------------------------------- workloads */

static int rnd_int(int n) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (int)((g_rng >> 8) % (uint32_t)n);
}

static void spec_free(req_spec *q, int n) {
    for (int i = 0; i < n; i++) free(q[i].prompt);
}

/* (a) + (b): a 300-token prompt twice, then extended by 1, 17, 64, 700. */
static int build_extend(req_spec *q) {
    static const int ext[] = {0, 0, 1, 17, 64, SZ(700, 120)};
    int32_t base[1000];
    for (int i = 0; i < 1000; i++) base[i] = rnd_tok();
    for (int i = 0; i < 6; i++) {
        memset(&q[i], 0, sizeof q[i]);
        q[i].n = SZ(300, 100) + ext[i];
        q[i].prompt = malloc(sizeof(int32_t) * (size_t)q[i].n);
        memcpy(q[i].prompt, base, sizeof(int32_t) * (size_t)q[i].n);
        q[i].max_tokens = 8;
        q[i].tag = 100 + (uint64_t)i;
    }
    return 6;
}

/* (c): a 4-turn chat (layout in engine_runs.h); the next turn appends the
 * assistant reply as generated and a new user message. Hints as the server
 * gives them: every message end is a split, the last user message end a
 * checkpoint. */
static void chat_spec(const chat *c, req_spec *q, uint64_t tag) {
    memset(q, 0, sizeof *q);
    q->n = c->n + 2;
    q->prompt = malloc(sizeof(int32_t) * (size_t)q->n);
    memcpy(q->prompt, c->t, sizeof(int32_t) * (size_t)c->n);
    q->prompt[c->n] = IM_START;
    q->prompt[c->n + 1] = R_ASSIST;
    for (int i = 0; i < c->n_ends; i++) q->split[q->n_split++] = c->ends[i];
    q->ckpt[q->n_ckpt++] = c->ends[c->n_ends - 1];
    q->max_tokens = 24;
    q->tag = tag;
}

/* Runs the chat turn by turn on R; specs[] and outs[] get the 4 turns. */
static void run_chat(runner *R, req_spec *q, outcome *o, uint32_t seed) {
    g_rng = seed;
    chat c;
    memset(&c, 0, sizeof c);
    int32_t content[400];
    for (int i = 0; i < 37; i++) content[i] = rnd_tok();
    chat_msg(&c, R_SYS, content, 37);
    for (int turn = 0; turn < 4; turn++) {
        int len = SZ(60, 20) + rnd_int(SZ(300, 40));
        for (int i = 0; i < len; i++) content[i] = rnd_tok();
        chat_msg(&c, R_USER, content, len);
        chat_spec(&c, &q[turn], 200 + (uint64_t)turn);
        run(R, &q[turn], 1, NULL, 0, &o[turn]);
        chat_msg(&c, R_ASSIST, o[turn].tok, o[turn].n_tok);
    }
}

static void test_exact_extend(void **st) {
    (void)st;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 1: budgets of a few blocks and about two checkpoints (evictions) */
        budget tiny = {24 * 16 * 1024, 2 * 190 * 1024}; /* 24 blocks, 2 checkpoints */
        req_spec q[6];
        g_rng = 12345;
        int n = build_extend(q);
        runner on, off;
        outcome oo[6], of[6];
        runner_start(&off, false, NULL);
        run(&off, q, n, NULL, 0, of);
        runner_start(&on, true, pass ? &tiny : NULL);
        run(&on, q, n, NULL, 0, oo);
        printf("%s: cached tokens", pass ? "tiny budgets" : "default budgets");
        for (int i = 0; i < n; i++) printf(" %d/%d", oo[i].cached, q[i].n);
        printf("\n");
        if (!pass) {
            assert_true(oo[1].cached > 0); /* (a) same prompt again */
            for (int i = 2; i < n; i++) assert_true(oo[i].cached > 0); /* (b) extensions */
        }
        hy_engine_stats es;
        hy_engine_get_stats(on.e, &es);
        printf("checkpoints %llu (%llu bytes, %llu evicted), blocks %llu (%llu evicted)\n",
               (unsigned long long)es.pc.checkpoints, (unsigned long long)es.pc.checkpoint_bytes,
               (unsigned long long)es.pc.checkpoint_evictions, (unsigned long long)es.pc.blocks,
               (unsigned long long)es.pc.block_evictions);
        if (pass) assert_true(es.pc.checkpoint_evictions + es.pc.block_evictions > 0);
        assert_int_equal(compare(&on, &off, q, oo, of, n, NULL), 0);
        runner_stop(&on);
        runner_stop(&off);
        spec_free(q, n);
    }
}

/* (a), (b) and the tiny budgets with bf16 and fp8 KV caches: the prefix cache keeps its blocks
 * as rows of the cache's type then (hy_seq_kv_row_bytes), copies of its bits, so restored
 * positions give the bits of computed ones here too. */
static void test_exact_extend_kv_types(void **st) {
    g_kv = HY_KV_BF16;
    test_exact_extend(st);
    g_kv = HY_KV_FP8;
    test_exact_extend(st);
    g_kv = HY_KV_F32;
}

static void test_exact_chat(void **st) {
    (void)st;
    for (int pass = 0; pass < 2; pass++) {
        budget tiny = {24 * 16 * 1024, 2 * 190 * 1024}; /* 24 blocks, 2 checkpoints */
        req_spec q[4], q2[4];
        outcome oo[4], of[4];
        runner on, off;
        runner_start(&off, false, NULL);
        run_chat(&off, q, of, 777);
        runner_start(&on, true, pass ? &tiny : NULL);
        run_chat(&on, q2, oo, 777);
        printf("chat%s: cached tokens", pass ? " (tiny budgets)" : "");
        for (int i = 0; i < 4; i++) {
            printf(" %d/%d", oo[i].cached, q2[i].n);
            assert_int_equal(q[i].n, q2[i].n); /* same replies, same prompts */
        }
        printf("\n");
        /* turns 2..4 reuse at least the previous turn's history */
        if (!pass)
            for (int i = 1; i < 4; i++) assert_true(oo[i].cached >= q2[i - 1].n - 2);
        assert_int_equal(compare(&on, &off, q2, oo, of, 4, NULL), 0);
        runner_stop(&on);
        runner_stop(&off);
        spec_free(q, 4);
        spec_free(q2, 4);
    }
}

/* (d): prompts sharing a prefix, concurrently: once cold, once after a warm-up. */
static void test_exact_concurrent_shared(void **st) {
    (void)st;
    g_rng = 4242;
    int32_t pre[500];
    for (int i = 0; i < 500; i++) pre[i] = rnd_tok();
    enum { N = 7 };
    req_spec q[N];
    for (int i = 0; i < N; i++) {
        memset(&q[i], 0, sizeof q[i]);
        int shared = i == 0 ? SZ(420, 140) : SZ(300, 100) + rnd_int(SZ(200, 60)), own = 1 + rnd_int(SZ(90, 20));
        q[i].n = shared + own;
        q[i].prompt = malloc(sizeof(int32_t) * (size_t)q[i].n);
        memcpy(q[i].prompt, pre, sizeof(int32_t) * (size_t)shared);
        for (int k = shared; k < q[i].n; k++) q[i].prompt[k] = rnd_tok();
        q[i].max_tokens = 10;
        q[i].tag = 300 + (uint64_t)i;
    }
    runner on, off;
    outcome oo[N], of[N];
    runner_start(&off, false, NULL);
    run(&off, q, N, NULL, 0, of);
    runner_start(&on, true, NULL);
    const int waves[] = {3, 1, 3}; /* cold pair+1, then one, then three warm */
    run(&on, q, N, waves, 3, oo);
    int hits = 0;
    for (int i = 0; i < N; i++) hits += oo[i].cached > 0;
    printf("concurrent shared prefix: %d of %d requests hit\n", hits, N);
    assert_true(hits >= 3);
    assert_int_equal(compare(&on, &off, q, oo, of, N, NULL), 0);
    runner_stop(&on);
    runner_stop(&off);
    spec_free(q, N);
}

/* Isolation: 16 concurrent requests sharing a 400-token prefix, every other
 * one cancelled (some while queued or prefilling, some after their first
 * token); every survivor equals its solo (uncached, alone) run. Twice: the
 * second wave finds the checkpoints the first (cancelled ones included) left. */
static void test_isolation_cancel(void **st) {
    (void)st;
    g_rng = 999;
    enum { PRE = SZ(400, 100) };
    int32_t pre[400];
    for (int i = 0; i < PRE; i++) pre[i] = rnd_tok();
    enum { N = 16 };
    req_spec q[2 * N];
    for (int i = 0; i < 2 * N; i++) {
        memset(&q[i], 0, sizeof q[i]);
        q[i].n = PRE + 5 + rnd_int(40);
        q[i].prompt = malloc(sizeof(int32_t) * (size_t)q[i].n);
        memcpy(q[i].prompt, pre, sizeof(int32_t) * PRE);
        for (int k = PRE; k < q[i].n; k++) q[i].prompt[k] = rnd_tok();
        q[i].max_tokens = 20;
        q[i].tag = 400 + (uint64_t)i;
    }
    runner on, off;
    outcome oo[2 * N], of[2 * N];
    bool skip[2 * N];
    memset(skip, 0, sizeof skip);
    runner_start(&off, false, NULL);
    run(&off, q, 2 * N, NULL, 0, of); /* solo: one at a time, no cache */
    runner_start(&on, true, NULL);
    for (int wave = 0; wave < 2; wave++) {
        hy_request *rs[N];
        req_spec *w = q + wave * N;
        for (int i = 0; i < N; i++) rs[i] = submit(&on, &w[i]);
        for (int i = 0; i < N; i++) {
            if (wave == 1 || i % 2 == 0) continue;
            skip[wave * N + i] = true;
            if (i % 4 == 3) { /* after the first token */
                hy_event ev;
                while (hy_request_next_event(rs[i], &ev, 60000) == 1) {
                    bool tok = ev.type == HY_EV_TOKEN, done = ev.type == HY_EV_DONE;
                    hy_event_clear(&ev);
                    if (tok || done) break;
                }
            }
            hy_request_cancel(rs[i]);
        }
        for (int i = 0; i < N; i++) collect(rs[i], &oo[wave * N + i]);
    }
    int hits = 0;
    for (int i = N; i < 2 * N; i++) hits += oo[i].cached >= PRE / 16 * 16 - 16;
    printf("isolation: second wave %d of %d requests reused >= %d tokens\n", hits, N, PRE / 16 * 16 - 16);
    assert_true(hits == N);
    assert_int_equal(compare(&on, &off, q, oo, of, 2 * N, skip), 0);
    runner_stop(&on);
    runner_stop(&off);
    spec_free(q, 2 * N);
}

/* Property: 200 requests over 2 random bases (random shared prefix lengths,
 * random suffixes, random message-like hints for some), run in random waves
 * with small budgets; every output and logits row equals the uncached run. */
static void test_property_random(void **st) {
    (void)st;
    g_rng = 2024;
    enum { N = SZ(200, 30), NB = 2, BL = SZ(300, 100) };
    int32_t base[NB][BL];
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < BL; i++) base[b][i] = rnd_tok();
    req_spec *q = calloc(N, sizeof *q);
    for (int i = 0; i < N; i++) {
        int b = rnd_int(NB), shared = 1 + rnd_int(BL), own = rnd_int(SZ(60, 30));
        if (shared + own < 2) own = 1;
        q[i].n = shared + own;
        q[i].prompt = malloc(sizeof(int32_t) * (size_t)q[i].n);
        memcpy(q[i].prompt, base[b], sizeof(int32_t) * (size_t)shared);
        for (int k = shared; k < q[i].n; k++) q[i].prompt[k] = rnd_tok();
        q[i].max_tokens = 1 + rnd_int(6);
        q[i].tag = 1000 + (uint64_t)i;
        int kind = rnd_int(10);
        kind = kind < 6 ? 0 : kind < 9 ? 1 : 2; /* none, message-like, random checkpoints */
        for (int p = 50; kind == 1 && p < q[i].n && q[i].n_split < 60; p += 50) q[i].split[q[i].n_split++] = p;
        if (kind == 1 && q[i].n > 75) q[i].ckpt[q[i].n_ckpt++] = 75;
        for (int k = 0; kind == 2 && k < 3 && q[i].n > 2; k++) q[i].ckpt[q[i].n_ckpt++] = 1 + rnd_int(q[i].n - 1);
    }
    int waves[N];
    for (int i = 0; i < N; i++) waves[i] = 1 + rnd_int(12);
    runner on, off;
    outcome *oo = calloc(N, sizeof *oo), *of = calloc(N, sizeof *of);
    runner_start(&off, false, NULL);
    run(&off, q, N, NULL, 0, of);
    budget small = {SZ(200, 40) * 16 * 1024, SZ(40, 8) * 175 * 1024}; /* 200 blocks, ~40 checkpoints */
    runner_start(&on, true, &small);
    run(&on, q, N, waves, N, oo);
    int hits = 0;
    long reused = 0;
    for (int i = 0; i < N; i++) {
        hits += oo[i].cached > 0;
        reused += oo[i].cached;
    }
    hy_engine_stats es;
    hy_engine_get_stats(on.e, &es);
    printf("property: %d of %d requests hit, %ld tokens reused; evictions: %llu checkpoints, %llu blocks\n", hits, N,
           reused, (unsigned long long)es.pc.checkpoint_evictions, (unsigned long long)es.pc.block_evictions);
    assert_true(hits >= SZ(N / 5, 1)); /* hints of three kinds split the population: not every prefix is shareable */
    assert_true(es.pc.checkpoint_evictions > 0);
    assert_int_equal(compare(&on, &off, q, oo, of, N, NULL), 0);
    runner_stop(&on);
    runner_stop(&off);
    spec_free(q, N);
    free(q);
    free(oo);
    free(of);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_extend),
        cmocka_unit_test(test_exact_extend_kv_types),
        cmocka_unit_test(test_exact_chat),
        cmocka_unit_test(test_exact_concurrent_shared),
        cmocka_unit_test(test_isolation_cancel),
        cmocka_unit_test(test_property_random),
    };
    return cmocka_run_group_tests(tests, hy_test_load_tiny_text, hy_test_free_model);
}
