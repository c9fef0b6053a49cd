/*
 * Test doubles for the engine seams (header-only, included by the tests that
 * need them): a fake "model" whose logits are a deterministic hash of the
 * whole token history (so it behaves like a recurrent state: any mix-up of
 * sequences, positions or chunking changes the output), optionally steered
 * by a script that forces given tokens; and a byte-level fake vocabulary:
 * ids 0..255 are single bytes, 256..FAKE_N_VALID-1 are special tokens that
 * decode to nothing. The logits row is wider than the vocabulary, and its
 * padding rows get huge logits so a missing mask shows immediately.
 */
#ifndef HY_TEST_FAKE_MODEL_H
#define HY_TEST_FAKE_MODEL_H

#include "engine/engine.h"
#include "sampling/rng.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_N_VALID 300
#define FAKE_N_VOCAB 320
#define FAKE_EOS 256

typedef struct fake_seq {
    uint64_t h;
    int pos;
} fake_seq;

typedef struct fake_model {
    /* script(u, seq) -> token to favour strongly, or -1 for plain hash logits */
    int (*script)(void *u, const fake_seq *s);
    void *u;
    int sleep_us;        /* per forward call */
    int max_len;         /* capacity of a sequence; forward fails beyond */
    atomic_int calls;
    atomic_int fail_at;  /* fail the call with this index (1-based); 0 = never */
    atomic_int max_items;
} fake_model;

static int fake_seq_create(void *ctx, void **seq, hy_err *err) {
    (void)ctx;
    fake_seq *s = calloc(1, sizeof *s);
    if (!s) return hy_err_set(err, HY_E_NOMEM, "fake: oom");
    *seq = s;
    return 0;
}
static void fake_seq_free(void *ctx, void *seq) {
    (void)ctx;
    free(seq);
}
static void fake_seq_reset(void *ctx, void *seq) {
    (void)ctx;
    memset(seq, 0, sizeof(fake_seq));
}
static int fake_seq_copy(void *ctx, void *dst, const void *src, hy_err *err) {
    (void)ctx;
    (void)err;
    memcpy(dst, src, sizeof(fake_seq));
    return 0;
}
static int fake_forward(void *ctx, hy_batch_item *items, int n, hy_err *err) {
    fake_model *m = ctx;
    int call = atomic_fetch_add(&m->calls, 1) + 1;
    if (n > atomic_load(&m->max_items)) atomic_store(&m->max_items, n);
    if (m->sleep_us) usleep((useconds_t)m->sleep_us);
    if (atomic_load(&m->fail_at) == call) return hy_err_set(err, HY_E_INTERNAL, "fake: injected failure");
    for (int k = 0; k < n; k++) {
        fake_seq *s = items[k].seq;
        for (int i = 0; i < items[k].n_ids; i++) {
            if (m->max_len && s->pos >= m->max_len) return hy_err_set(err, HY_E_RANGE, "fake: sequence full");
            s->h = hy_rng_u64(s->h, (uint64_t)items[k].ids[i], (uint64_t)s->pos);
            s->pos++;
        }
        if (!items[k].logits) continue;
        float *l = items[k].logits;
        for (int v = 0; v < FAKE_N_VOCAB; v++)
            l[v] = v >= FAKE_N_VALID ? 100.0f : (float)(hy_rng_u64(s->h, (uint64_t)v, 99) >> 40) * 0x1p-24f * 4.0f;
        int t = m->script ? m->script(m->u, s) : -1;
        if (t >= 0) l[t] += 30.0f;
    }
    return 0;
}

static hy_engine_model fake_model_vtable(fake_model *m, int with_copy) {
    hy_engine_model v = {.ctx = m,
                         .n_vocab = FAKE_N_VOCAB,
                         .seq_create = fake_seq_create,
                         .seq_free = fake_seq_free,
                         .seq_reset = fake_seq_reset,
                         .seq_copy = with_copy ? fake_seq_copy : NULL,
                         .forward = fake_forward};
    return v;
}

static unsigned char fake_bytes[256];

static int fake_token_bytes(void *ctx, int32_t id, const char **b, size_t *len) {
    (void)ctx;
    if (id < 0 || id >= FAKE_N_VALID) return HY_E_INVALID;
    if (id >= 256) {
        *b = "";
        *len = 0;
        return 0;
    }
    fake_bytes[id] = (unsigned char)id; /* idempotent: same value every time */
    *b = (const char *)&fake_bytes[id];
    *len = 1;
    return 0;
}

static hy_engine_text fake_text_vtable(void) {
    hy_engine_text t = {NULL, FAKE_N_VALID, fake_token_bytes};
    return t;
}

#endif
