/*
 * hy_engine_model over model/forward.h (see fwd_model.h). Everything here
 * runs on the engine thread. seq_copy reads the sequence layout from
 * model/forward_impl.h because forward.h has no copy yet; when the forward
 * module grows hy_seq_copy this file should call it instead.
 */
#include "engine/fwd_model.h"

#include "model/forward_impl.h"
#include "model/seq_io.h"

#include <stdlib.h>
#include <string.h>

struct hy_fwd_model {
    const hy_model *m;
    hy_ctx *ctx;
    int max_model_len;
    size_t kv_row_bytes, state_bytes;
};

static int fm_seq_create(void *ctx, void **seq, hy_err *err) {
    hy_fwd_model *fm = ctx;
    hy_seq *s = NULL;
    int rc = hy_seq_create(&s, fm->m, fm->max_model_len, err);
    *seq = s;
    return rc;
}

static void fm_seq_free(void *ctx, void *seq) {
    (void)ctx;
    hy_seq_free(seq);
}

static void fm_seq_reset(void *ctx, void *seq) {
    (void)ctx;
    hy_seq_reset(seq);
}

static int fm_seq_copy(void *ctx, void *dst, const void *src, hy_err *err) {
    (void)ctx;
    hy_seq *d = dst;
    const hy_seq *s = src;
    if (d->m != s->m || d->max_tokens < s->pos || d->kv->n_layers != s->kv->n_layers || d->kv->kv_dim != s->kv->kv_dim ||
        d->kv->max_tokens != s->kv->max_tokens || d->gdn->bytes != s->gdn->bytes)
        return hy_err_set(err, HY_E_INVALID, "seq_copy: sequences of different shapes");
    hy_gdn_state_copy(d->gdn, s->gdn);
    const size_t row = (size_t)s->kv->kv_dim * sizeof(float);
    for (int l = 0; l < s->kv->n_layers && s->pos > 0; l++) {
        memcpy(hy_kv_cache_k(d->kv, l, 0), hy_kv_cache_k(s->kv, l, 0), row * (size_t)s->pos);
        memcpy(hy_kv_cache_v(d->kv, l, 0), hy_kv_cache_v(s->kv, l, 0), row * (size_t)s->pos);
    }
    d->pos = s->pos;
    return 0;
}

static int fm_kv_read(void *ctx, const void *seq, int pos0, int n, void *dst, hy_err *err) {
    (void)ctx;
    return hy_seq_kv_read(seq, pos0, n, dst, err);
}

static int fm_kv_write(void *ctx, void *seq, int pos0, int n, const void *src, hy_err *err) {
    (void)ctx;
    return hy_seq_kv_write(seq, pos0, n, src, err);
}

static void fm_state_read(void *ctx, const void *seq, void *dst) {
    (void)ctx;
    hy_seq_gdn_read(seq, dst);
}

static int fm_restore(void *ctx, void *seq, const void *state, int pos, hy_err *err) {
    (void)ctx;
    return hy_seq_restore(seq, state, pos, err);
}

static int fm_forward(void *ctx, hy_batch_item *items, int n, hy_err *err) {
    hy_fwd_model *fm = ctx;
    for (int i = 0; i < n; i++) {
        int rc = hy_forward(fm->ctx, items[i].seq, items[i].ids, items[i].n_ids, items[i].logits, items[i].all_logits,
                            err);
        if (rc) return rc;
    }
    return 0;
}

int hy_fwd_model_create(hy_fwd_model **out, const hy_model *m, int n_threads, int max_chunk, int max_model_len,
                        hy_err *err) {
    *out = NULL;
    hy_fwd_model *fm = calloc(1, sizeof *fm);
    if (!fm) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    fm->m = m;
    fm->max_model_len = max_model_len;
    hy_ctx_opts o = {.n_threads = n_threads, .max_chunk = max_chunk};
    int rc = hy_ctx_create(&fm->ctx, m, &o, err);
    if (rc) {
        free(fm);
        return rc;
    }
    hy_seq *probe = NULL; /* sizes of a snapshot (a 1-position sequence costs nothing) */
    if ((rc = hy_seq_create(&probe, m, 1, err))) {
        hy_fwd_model_free(fm);
        return rc;
    }
    fm->kv_row_bytes = hy_seq_kv_row_floats(probe) * sizeof(float);
    fm->state_bytes = hy_seq_gdn_bytes(probe);
    hy_seq_free(probe);
    *out = fm;
    return 0;
}

void hy_fwd_model_free(hy_fwd_model *fm) {
    if (!fm) return;
    hy_ctx_free(fm->ctx);
    free(fm);
}

void hy_fwd_model_vtable(hy_fwd_model *fm, hy_engine_model *out) {
    memset(out, 0, sizeof *out);
    out->ctx = fm;
    out->n_vocab = fm->m->hp.vocab_size;
    out->seq_create = fm_seq_create;
    out->seq_free = fm_seq_free;
    out->seq_reset = fm_seq_reset;
    out->seq_copy = fm_seq_copy;
    out->forward = fm_forward;
    /* A model without attention or GDN layers has nothing to snapshot in one
     * of the two parts: the cache then stays off (sizes 0). */
    out->kv_row_bytes = fm->kv_row_bytes;
    out->state_bytes = fm->state_bytes;
    out->kv_read = fm_kv_read;
    out->kv_write = fm_kv_write;
    out->state_read = fm_state_read;
    out->restore = fm_restore;
}

int hy_fwd_model_threads(const hy_fwd_model *fm) { return hy_ctx_threads(fm->ctx); }
