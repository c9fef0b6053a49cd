/*
 * Test helpers for driving the engine over a real forward pass (test_prefix_exact.c,
 * test_reuse_generated.c): the tiny-text model both load, a token-bytes callback for tests
 * that read token ids only, a greedy request with explicit prefill split / checkpoint
 * positions, collecting a request's events, and the seeded chat workloads. Header-only
 * (static) so each test executable can include it after cmocka.h.
 */
#ifndef HY_TESTS_ENGINE_RUNS_H
#define HY_TESTS_ENGINE_RUNS_H

#include "engine/engine.h"
#include "model/model.h"
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* models/tiny-text, loaded by the cmocka group setup and freed by its teardown */
static hy_model *g_model;

static int hy_test_load_tiny_text(void **st) {
    (void)st;
    char *dir = hy_test_data_path("models/tiny-text");
    hy_err err;
    int rc = hy_model_load(&g_model, dir, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    free(dir);
    return rc;
}

static int hy_test_free_model(void **st) {
    (void)st;
    hy_model_free(g_model);
    return 0;
}

/* hy_engine_text.token_bytes for tests that compare token ids, never text. */
static int hy_test_empty_token_bytes(void *ctx, int32_t id, const char **b, size_t *len) {
    (void)ctx;
    (void)id;
    *b = "";
    *len = 0;
    return 0;
}

/* Submits one greedy choice (temperature 0, eos ignored, seeded) of max_tokens tokens; fails
 * the test when the engine refuses it. */
static hy_request *hy_test_submit_greedy(hy_engine *e, const int32_t *prompt, int n, int max_tokens,
                                         const int32_t *split, int n_split, const int32_t *ckpt, int n_ckpt,
                                         uint64_t tag) {
    hy_gen_params p;
    memset(&p, 0, sizeof p);
    p.prompt = prompt;
    p.n_prompt = n;
    p.n = 1;
    p.max_tokens = max_tokens;
    hy_sampling_params_default(&p.sp);
    p.sp.temperature = 0.0f;
    p.has_seed = true;
    p.ignore_eos = true;
    p.n_logprobs = -1;
    p.split_at = split;
    p.n_split_at = n_split;
    p.checkpoint_at = ckpt;
    p.n_checkpoint_at = n_ckpt;
    p.tag = tag;
    hy_request *r = NULL;
    hy_err err = {0};
    int rc = hy_engine_submit(e, &p, &r, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    return r;
}

/* Reads r's events to the end (at most cap tokens kept) and releases it. */
static void hy_test_collect(hy_request *r, int32_t *tok, int cap, int *n_tok, hy_finish *fin, int *cached) {
    *n_tok = 0;
    hy_event ev;
    int rc;
    while ((rc = hy_request_next_event(r, &ev, 60000)) == 1) {
        if (ev.type == HY_EV_TOKEN && *n_tok < cap) tok[(*n_tok)++] = ev.token;
        else if (ev.type == HY_EV_FINISH) *fin = ev.finish;
        else if (ev.type == HY_EV_DONE) *cached = ev.cached_tokens;
        hy_event_clear(&ev);
    }
    assert_int_equal(rc, -1);
    hy_request_release(r);
}

/* Seeded workload tokens: ids below 500, so they never collide with the chat markers below.
 * Tests set g_rng to seed a workload. */
static uint32_t g_rng;
static int32_t rnd_tok(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (int32_t)((g_rng >> 8) % 500);
}

/* Chats in the model's token layout: messages are [<im_start>, role, content..., <im_end>, \n];
 * a turn's prompt is every message so far plus [<im_start>, assistant]. ends[] records where
 * each message ends (the split hints the server sends). */
enum { IM_START = 501, IM_END = 502, NL = 503, R_USER = 504, R_ASSIST = 505, R_SYS = 506 };
#define HY_TEST_CHAT_MAX 2048

typedef struct chat {
    int32_t t[HY_TEST_CHAT_MAX];
    int n;
    int32_t ends[64];
    int n_ends;
} chat;

static void chat_msg(chat *c, int32_t role, const int32_t *content, int len) {
    c->t[c->n++] = IM_START;
    c->t[c->n++] = role;
    for (int i = 0; i < len; i++) c->t[c->n++] = content[i];
    c->t[c->n++] = IM_END;
    c->t[c->n++] = NL;
    c->ends[c->n_ends++] = c->n;
}

#endif
