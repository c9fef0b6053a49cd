/* engine/: scheduler, batch invariance, n > 1, stop conditions, UTF-8 release,
 * cancellation, queue limits, failure isolation, drain — over a fake model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/u8scan.h"
#include "unit/fake_model.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAXC 8
#define MAXT 4096

typedef struct result {
    int n_tok[MAXC];
    int32_t tok[MAXC][MAXT];
    char text[MAXC][MAXT * 4];
    size_t text_len[MAXC];
    int n_deltas[MAXC];
    hy_finish fin[MAXC];
    int32_t stop_token[MAXC];
    char stop_str[MAXC][64];
    int n_lp[MAXC];
    int prompt_tokens, completion_tokens;
    bool bad_utf8_delta;
    int events_after_done;
} result;

static void collect(hy_request *r, result *res) {
    memset(res, 0, sizeof *res);
    hy_event ev;
    int rc;
    while ((rc = hy_request_next_event(r, &ev, 10000)) == 1) {
        int c = ev.choice;
        if (ev.type == HY_EV_TOKEN) {
            res->tok[c][res->n_tok[c]++] = ev.token;
            if (ev.text_len) {
                if (!hy_u8_valid(ev.text, ev.text_len)) res->bad_utf8_delta = true;
                memcpy(res->text[c] + res->text_len[c], ev.text, ev.text_len);
                res->text_len[c] += ev.text_len;
                res->n_deltas[c]++;
            }
            if (ev.has_logprobs) res->n_lp[c]++;
        } else if (ev.type == HY_EV_FINISH) {
            res->fin[c] = ev.finish;
            res->stop_token[c] = ev.stop_token;
            if (ev.stop_str) snprintf(res->stop_str[c], 64, "%s", ev.stop_str);
        } else if (ev.type == HY_EV_DONE) {
            res->prompt_tokens = ev.prompt_tokens;
            res->completion_tokens = ev.completion_tokens;
        }
        hy_event_clear(&ev);
    }
    assert_int_equal(rc, -1); /* ended by DONE, not by a timeout */
}

static hy_engine *mk_engine(fake_model *m, int max_seqs, int with_copy, void (*tweak)(hy_engine_config *)) {
    hy_engine_config cfg;
    hy_engine_config_default(&cfg);
    cfg.max_num_seqs = max_seqs;
    cfg.max_model_len = 2048;
    cfg.prefill_chunk = 16;
    cfg.max_batch_tokens = 40;
    cfg.eos_ids[0] = FAKE_EOS;
    cfg.n_eos = 1;
    cfg.seed_base = 7;
    if (tweak) tweak(&cfg);
    hy_engine_model mv = fake_model_vtable(m, with_copy);
    hy_engine_text tv = fake_text_vtable();
    hy_engine *e = NULL;
    hy_err err = {0};
    int rc = hy_engine_create(&e, &cfg, &mv, &tv, &err);
    if (rc) fprintf(stderr, "create: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return e;
}

static void base_params(hy_gen_params *p, const int32_t *prompt, int n_prompt, int max_tokens) {
    memset(p, 0, sizeof *p);
    p->prompt = prompt;
    p->n_prompt = n_prompt;
    p->n = 1;
    p->max_tokens = max_tokens;
    hy_sampling_params_default(&p->sp);
    p->sp.temperature = 0.0f;
    p->n_logprobs = -1;
}

static hy_request *submit(hy_engine *e, const hy_gen_params *p) {
    hy_request *r = NULL;
    hy_err err = {0};
    int rc = hy_engine_submit(e, p, &r, &err);
    if (rc) fprintf(stderr, "submit: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return r;
}

static void run_one(hy_engine *e, const hy_gen_params *p, result *res) {
    hy_request *r = submit(e, p);
    collect(r, res);
    hy_request_release(r);
}

/* Random prompts of assorted lengths (some longer than the prefill chunk). */
static int mk_prompt(int i, int32_t *out) {
    int n = 1 + (i * 37) % 70;
    for (int k = 0; k < n; k++) out[k] = (int32_t)((i * 131 + k * 17) % 250);
    return n;
}

static void test_basic_greedy(void **st) {
    (void)st;
    fake_model m = {0};
    hy_engine *e = mk_engine(&m, 4, 1, NULL);
    int32_t prompt[3] = {1, 2, 3};
    hy_gen_params p;
    base_params(&p, prompt, 3, 10);
    p.n_logprobs = 3;
    static result a, b;
    run_one(e, &p, &a);
    assert_int_equal(a.n_tok[0], 10);
    assert_int_equal(a.fin[0], HY_FINISH_LENGTH);
    assert_int_equal(a.prompt_tokens, 3);
    assert_int_equal(a.completion_tokens, 10);
    assert_int_equal(a.n_lp[0], 10);
    for (int i = 0; i < 10; i++) assert_true(a.tok[0][i] < FAKE_N_VALID); /* padding masked */
    assert_false(a.bad_utf8_delta);
    run_one(e, &p, &b); /* greedy is reproducible */
    assert_memory_equal(a.tok[0], b.tok[0], sizeof(int32_t) * 10);
    hy_engine_free(e);
}

/* 24 requests (mixed lengths, greedy and seeded sampling, some n=2) run
 * concurrently on 8 slots must equal their solo runs token for token. */
static void fill_mixed(hy_gen_params *p, int32_t *buf, int i) {
    int n = mk_prompt(i, buf);
    base_params(p, buf, n, 5 + (i * 7) % 30);
    if (i % 3 == 1) {
        p->sp.temperature = 0.9f;
        p->sp.top_k = 50;
        p->sp.top_p = 0.95f;
        p->sp.seed = 1000 + (uint64_t)i;
        p->has_seed = true;
    }
    if (i % 5 == 2) {
        p->sp.temperature = 1.0f;
        p->sp.presence_penalty = 0.5f;
        p->sp.repetition_penalty = 1.2f;
        p->sp.seed = 77;
        p->has_seed = true;
        p->n = 2;
    }
}

static void test_batch_invariance(void **st) {
    (void)st;
    enum { N = 24 };
    static int32_t prompts[N][128];
    static result solo[N], batched[N];
    fake_model m1 = {0}, m2 = {0};
    hy_engine *e1 = mk_engine(&m1, 2, 1, NULL);
    for (int i = 0; i < N; i++) {
        hy_gen_params p;
        fill_mixed(&p, prompts[i], i);
        run_one(e1, &p, &solo[i]);
    }
    hy_engine_free(e1);
    hy_engine *e2 = mk_engine(&m2, 8, 1, NULL);
    hy_request *rs[N];
    for (int i = 0; i < N; i++) {
        hy_gen_params p;
        fill_mixed(&p, prompts[i], i);
        rs[i] = submit(e2, &p);
    }
    for (int i = 0; i < N; i++) {
        collect(rs[i], &batched[i]);
        hy_request_release(rs[i]);
    }
    printf("  batched: %d forward calls, up to %d sequences per step\n", atomic_load(&m2.calls), atomic_load(&m2.max_items));
    assert_true(atomic_load(&m2.max_items) > 2);
    int mismatches = 0;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < 2; c++) {
            if (solo[i].n_tok[c] != batched[i].n_tok[c] ||
                memcmp(solo[i].tok[c], batched[i].tok[c], sizeof(int32_t) * (size_t)solo[i].n_tok[c]))
                mismatches++;
        }
    printf("  %d requests, %d choice mismatches\n", N, mismatches);
    assert_int_equal(mismatches, 0);
    /* 16 identical greedy prompts give 16 identical answers */
    hy_request *same[16];
    int32_t pr[20];
    for (int k = 0; k < 20; k++) pr[k] = k * 3;
    for (int i = 0; i < 16; i++) {
        hy_gen_params p;
        base_params(&p, pr, 20, 12);
        same[i] = submit(e2, &p);
    }
    static result r0, ri;
    collect(same[0], &r0);
    hy_request_release(same[0]);
    for (int i = 1; i < 16; i++) {
        collect(same[i], &ri);
        hy_request_release(same[i]);
        assert_int_equal(ri.n_tok[0], r0.n_tok[0]);
        assert_memory_equal(ri.tok[0], r0.tok[0], sizeof(int32_t) * (size_t)r0.n_tok[0]);
    }
    hy_engine_free(e2);
}

static void test_n_choices(void **st) {
    (void)st;
    fake_model m1 = {0}, m2 = {0};
    hy_engine *with_copy = mk_engine(&m1, 4, 1, NULL);
    hy_engine *no_copy = mk_engine(&m2, 4, 0, NULL);
    int32_t prompt[40];
    for (int i = 0; i < 40; i++) prompt[i] = i + 1;
    hy_gen_params p;
    base_params(&p, prompt, 40, 15);
    p.n = 3;
    p.sp.temperature = 1.0f;
    p.sp.seed = 5;
    p.has_seed = true;
    static result a, b;
    run_one(with_copy, &p, &a);
    run_one(no_copy, &p, &b);
    for (int c = 0; c < 3; c++) {
        assert_int_equal(a.n_tok[c], 15);
        assert_memory_equal(a.tok[c], b.tok[c], sizeof(int32_t) * 15); /* copy == re-prefill */
    }
    assert_true(memcmp(a.tok[0], a.tok[1], sizeof(int32_t) * 15) || memcmp(a.tok[1], a.tok[2], sizeof(int32_t) * 15));
    assert_int_equal(a.completion_tokens, 45);
    /* the prompt ran once with copy, 3 times without: 40/16 -> 3 chunks each */
    printf("  forward calls with copy %d, without %d\n", atomic_load(&m1.calls), atomic_load(&m2.calls));
    hy_engine_free(with_copy);
    hy_engine_free(no_copy);
}

typedef struct script {
    const char *text;
    int n_prompt;
    int eos_at_end;
} script;

static int script_fn(void *u, const fake_seq *s) {
    const script *sc = u;
    int k = s->pos - sc->n_prompt;
    int n = (int)strlen(sc->text);
    if (k < 0) return -1;
    if (k < n) return (unsigned char)sc->text[k];
    return sc->eos_at_end ? FAKE_EOS : 'x';
}

static void test_stop_strings_and_utf8(void **st) {
    (void)st;
    script sc = {"Hello world, STOP here", 2, 1};
    fake_model m = {.script = script_fn, .u = &sc};
    hy_engine *e = mk_engine(&m, 2, 1, NULL);
    int32_t prompt[2] = {5, 6};
    hy_gen_params p;
    static result r;
    const char *stops[2] = {"STOP", "world!"};
    base_params(&p, prompt, 2, 100);
    p.stop = stops;
    p.n_stop = 2;
    run_one(e, &p, &r);
    assert_int_equal(r.fin[0], HY_FINISH_STOP);
    assert_string_equal(r.stop_str[0], "STOP");
    assert_int_equal((int)r.text_len[0], 13);
    assert_memory_equal(r.text[0], "Hello world, ", 13);
    /* "world" was held back while it could still become "world!" but released after */
    /* no stop: runs to the scripted end, then EOS */
    base_params(&p, prompt, 2, 100);
    run_one(e, &p, &r);
    assert_int_equal(r.fin[0], HY_FINISH_STOP);
    assert_int_equal(r.stop_token[0], FAKE_EOS);
    assert_int_equal((int)r.text_len[0], 22);
    assert_int_equal(r.n_tok[0], 23); /* the EOS counts as a generated token */
    /* ignore_eos: continues to max_tokens */
    p.ignore_eos = true;
    p.max_tokens = 30;
    run_one(e, &p, &r);
    assert_int_equal(r.fin[0], HY_FINISH_LENGTH);
    assert_int_equal(r.n_tok[0], 30);
    /* stop_token_ids */
    int32_t sid[1] = {'w'};
    base_params(&p, prompt, 2, 100);
    p.stop_ids = sid;
    p.n_stop_ids = 1;
    run_one(e, &p, &r);
    assert_int_equal(r.stop_token[0], 'w');
    assert_int_equal((int)r.text_len[0], 6); /* "Hello " */
    /* a held-back stop prefix is flushed when the length limit ends the choice */
    const char *st2[1] = {"world"};
    base_params(&p, prompt, 2, 9); /* "Hello wor" */
    p.stop = st2;
    p.n_stop = 1;
    run_one(e, &p, &r);
    assert_int_equal(r.fin[0], HY_FINISH_LENGTH);
    assert_int_equal((int)r.text_len[0], 9);
    assert_memory_equal(r.text[0], "Hello wor", 9);
    hy_engine_free(e);

    /* UTF-8: multi-byte characters arrive one byte per token; every delta is
     * valid UTF-8, an invalid byte becomes U+FFFD, a cut character at the end
     * is repaired. */
    script su = {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff!\xe2\x82", 1, 0};
    fake_model mu = {.script = script_fn, .u = &su};
    e = mk_engine(&mu, 2, 1, NULL);
    base_params(&p, prompt, 1, 13);
    run_one(e, &p, &r);
    assert_false(r.bad_utf8_delta);
    const char *want = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd!\xef\xbf\xbd";
    assert_int_equal(r.text_len[0], strlen(want));
    assert_memory_equal(r.text[0], want, strlen(want));
    assert_true(r.n_deltas[0] <= 6); /* é, €, 😀, U+FFFD, "!", final repair */
    hy_engine_free(e);
}

static void small_len(hy_engine_config *c) { c->max_model_len = 16; }

static void test_limits(void **st) {
    (void)st;
    fake_model m = {0};
    hy_engine *e = mk_engine(&m, 2, 1, small_len);
    int32_t prompt[16] = {0};
    hy_gen_params p;
    static result r;
    base_params(&p, prompt, 10, 100);
    run_one(e, &p, &r);
    assert_int_equal(r.fin[0], HY_FINISH_LENGTH);
    assert_int_equal(r.n_tok[0], 6); /* 10 + 6 = max_model_len */
    hy_request *q = NULL;
    hy_err err = {0};
    base_params(&p, prompt, 16, 1);
    assert_int_equal(hy_engine_submit(e, &p, &q, &err), HY_E_RANGE);
    printf("  too long: %s\n", err.msg);
    base_params(&p, prompt, 3, 1);
    p.n = 3;
    assert_int_equal(hy_engine_submit(e, &p, &q, &err), HY_E_INVALID);
    int32_t bad[1] = {FAKE_N_VALID};
    base_params(&p, bad, 1, 1);
    assert_int_equal(hy_engine_submit(e, &p, &q, &err), HY_E_INVALID);
    hy_engine_free(e);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void tiny_queue(hy_engine_config *c) { c->max_queue = 2; }

static void test_cancel_and_queue(void **st) {
    (void)st;
    fake_model m = {.sleep_us = 2000};
    hy_engine *e = mk_engine(&m, 2, 1, tiny_queue);
    int32_t prompt[4] = {1, 2, 3, 4};
    hy_gen_params p;
    base_params(&p, prompt, 4, 100000);
    hy_request *a = submit(e, &p), *b = submit(e, &p);
    /* wait until both run, then fill the queue */
    hy_event ev;
    assert_int_equal(hy_request_next_event(a, &ev, 5000), 1);
    hy_event_clear(&ev);
    assert_int_equal(hy_request_next_event(b, &ev, 5000), 1);
    hy_event_clear(&ev);
    hy_request *c = submit(e, &p), *d = submit(e, &p), *x = NULL;
    hy_err err = {0};
    assert_int_equal(hy_engine_submit(e, &p, &x, &err), HY_E_NOMEM);
    hy_engine_stats s;
    hy_engine_get_stats(e, &s);
    assert_int_equal(s.running_requests, 2);
    assert_int_equal(s.waiting_requests, 2);
    /* cancel a running and a waiting request; drop another without reading */
    double t0 = now();
    hy_request_cancel(a);
    hy_request_cancel(c);
    hy_request_release(b);
    static result ra, rc;
    collect(a, &ra);
    collect(c, &rc);
    assert_int_equal(ra.fin[0], HY_FINISH_ABORT);
    assert_int_equal(rc.fin[0], HY_FINISH_ABORT);
    assert_int_equal(rc.n_tok[0], 0);
    hy_request_release(a);
    hy_request_release(c);
    /* d gets admitted; cancel it too and check everything drains quickly */
    hy_request_release(d);
    for (int i = 0; i < 200; i++) {
        hy_engine_get_stats(e, &s);
        if (s.running_requests == 0 && s.waiting_requests == 0 && s.running_seqs == 0) break;
        usleep(5000);
    }
    double dt = now() - t0;
    printf("  cancelled 4 requests, engine idle after %.3f s\n", dt);
    assert_int_equal(s.running_requests, 0);
    assert_int_equal(s.running_seqs, 0);
    assert_true(dt < 1.0);
    assert_true(s.finished_total[HY_FINISH_ABORT] == 4);
    /* the engine still works */
    base_params(&p, prompt, 4, 3);
    static result r;
    run_one(e, &p, &r);
    assert_int_equal(r.n_tok[0], 3);
    hy_engine_free(e);
}

static void test_forward_failure_isolated(void **st) {
    (void)st;
    fake_model m = {0};
    hy_engine *e = mk_engine(&m, 2, 1, NULL);
    int32_t prompt[4] = {1, 2, 3, 4};
    hy_gen_params p;
    base_params(&p, prompt, 4, 5);
    atomic_store(&m.fail_at, 3);
    static result r;
    run_one(e, &p, &r);
    assert_int_equal(r.fin[0], HY_FINISH_ERROR);
    run_one(e, &p, &r);
    assert_int_equal(r.fin[0], HY_FINISH_LENGTH);
    assert_int_equal(r.n_tok[0], 5);
    hy_engine_free(e);
}

static void test_drain(void **st) {
    (void)st;
    fake_model m = {.sleep_us = 500};
    hy_engine *e = mk_engine(&m, 1, 1, NULL);
    int32_t prompt[2] = {1, 2};
    hy_gen_params p;
    base_params(&p, prompt, 2, 20);
    hy_request *r[3];
    for (int i = 0; i < 3; i++) r[i] = submit(e, &p);
    hy_engine_shutdown(e, true);
    static result res;
    for (int i = 0; i < 3; i++) {
        collect(r[i], &res);
        assert_int_equal(res.fin[0], HY_FINISH_LENGTH);
        assert_int_equal(res.n_tok[0], 20);
        hy_request_release(r[i]);
    }
    hy_request *x = NULL;
    hy_err err = {0};
    assert_int_equal(hy_engine_submit(e, &p, &x, &err), HY_E_STATE);
    hy_engine_free(e);
    /* without drain, everything is aborted */
    e = mk_engine(&m, 1, 1, NULL);
    base_params(&p, prompt, 2, 100000);
    for (int i = 0; i < 3; i++) r[i] = submit(e, &p);
    hy_engine_shutdown(e, false);
    for (int i = 0; i < 3; i++) {
        collect(r[i], &res);
        assert_int_equal(res.fin[0], HY_FINISH_ABORT);
        hy_request_release(r[i]);
    }
    hy_engine_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_greedy),        cmocka_unit_test(test_batch_invariance),
        cmocka_unit_test(test_n_choices),           cmocka_unit_test(test_stop_strings_and_utf8),
        cmocka_unit_test(test_limits),              cmocka_unit_test(test_cancel_and_queue),
        cmocka_unit_test(test_forward_failure_isolated), cmocka_unit_test(test_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
