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
    /* batched decode buffers, grown on demand to the largest step seen */
    int cap;
    hy_seq **seqs;
    int32_t *ids;
    float *logits; /* [cap][vocab] */
    int *item;     /* index of each decode item in the step's items */
    size_t kv_row_bytes, state_bytes;
};

static int fm_seq_create(void *ctx, void **seq, hy_err *err) {
    hy_fwd_model *fm = ctx;
    hy_seq *s = NULL;
    int rc = hy_seq_create_kv(&s, fm->m, fm->max_model_len, hy_ctx_kv_type(fm->ctx), err);
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
    if (d->m != s->m || d->max_tokens < s->pos || d->kv->n_layers != s->kv->n_layers || d->kv->type != s->kv->type ||
        d->kv->n_heads != s->kv->n_heads || d->kv->head_dim != s->kv->head_dim ||
        d->kv->max_tokens != s->kv->max_tokens || d->gdn->bytes != s->gdn->bytes)
        return hy_err_set(err, HY_E_INVALID, "seq_copy: sequences of different shapes");
    hy_gdn_state_copy(d->gdn, s->gdn);
    hy_kv_cache_copy(d->kv, s->kv, s->pos);
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


static int fm_grow(hy_fwd_model *fm, int n, hy_err *err) {
    if (n <= fm->cap) return 0;
    const size_t V = (size_t)fm->m->hp.vocab_size;
    hy_seq **s = realloc(fm->seqs, (size_t)n * sizeof *s);
    if (s) fm->seqs = s;
    int32_t *ids = realloc(fm->ids, (size_t)n * sizeof *ids);
    if (ids) fm->ids = ids;
    int *item = realloc(fm->item, (size_t)n * sizeof *item);
    if (item) fm->item = item;
    float *lg = realloc(fm->logits, (size_t)n * V * sizeof *lg);
    if (lg) fm->logits = lg;
    if (!s || !ids || !item || !lg) return hy_err_set(err, HY_E_NOMEM, "forward: out of memory for a batch of %d", n);
    fm->cap = n;
    return 0;
}

/* Prefill chunks (n_ids > 1) run one sequence at a time; the one-token decode items of the
 * step go through one hy_forward_batch (bit-identical to feeding them one by one). */
static int fm_forward(void *ctx, hy_batch_item *items, int n, hy_err *err) {
    hy_fwd_model *fm = ctx;
    int n_dec = 0;
    for (int i = 0; i < n; i++) {
        if (items[i].n_ids == 1) {
            n_dec++;
            continue;
        }
        int rc = hy_forward(fm->ctx, items[i].seq, items[i].ids, items[i].n_ids, items[i].logits, items[i].all_logits,
                            err);
        if (rc) return rc;
    }
    if (n_dec == 0) return 0;
    int rc = fm_grow(fm, n_dec, err);
    if (rc) return rc;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (items[i].n_ids == 1) {
            fm->seqs[k] = items[i].seq;
            fm->ids[k] = items[i].ids[0];
            fm->item[k++] = i;
        }
    if ((rc = hy_forward_batch(fm->ctx, fm->seqs, fm->ids, n_dec, fm->logits, err))) return rc;
    const size_t V = (size_t)fm->m->hp.vocab_size;
    for (int j = 0; j < n_dec; j++)
        if (items[fm->item[j]].logits) memcpy(items[fm->item[j]].logits, fm->logits + j * V, V * sizeof(float));
    return 0;
}

int hy_fwd_model_create(hy_fwd_model **out, const hy_model *m, int n_threads, int max_chunk, int max_model_len,
                        hy_err *err) {
    hy_ctx_opts o = {.n_threads = n_threads, .max_chunk = max_chunk};
    return hy_fwd_model_create_opts(out, m, &o, max_model_len, err);
}

int hy_fwd_model_create_opts(hy_fwd_model **out, const hy_model *m, const hy_ctx_opts *o, int max_model_len,
                             hy_err *err) {
    *out = NULL;
    hy_fwd_model *fm = calloc(1, sizeof *fm);
    if (!fm) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    fm->m = m;
    fm->max_model_len = max_model_len;
    int rc = hy_ctx_create(&fm->ctx, m, o, err);
    if (rc) {
        free(fm);
        return rc;
    }
    hy_seq *probe = NULL; /* sizes of a snapshot (a 1-position sequence costs nothing) */
    if ((rc = hy_seq_create_kv(&probe, m, 1, hy_ctx_kv_type(fm->ctx), err))) {
        hy_fwd_model_free(fm);
        return rc;
    }
    fm->kv_row_bytes = hy_seq_kv_row_bytes(probe);
    fm->state_bytes = hy_seq_gdn_bytes(probe);
    hy_seq_free(probe);
    *out = fm;
    return 0;
}

void hy_fwd_model_free(hy_fwd_model *fm) {
    if (!fm) return;
    hy_ctx_free(fm->ctx);
    free(fm->seqs);
    free(fm->ids);
    free(fm->item);
    free(fm->logits);
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
