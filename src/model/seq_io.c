/*
 * Sequence state copy out / in (see seq_io.h). Reads the sequence layout from
 * forward_impl.h; kept out of forward.c so the forward pass stays one concern.
 */
#include "model/seq_io.h"

#include "model/forward_impl.h"

#include <string.h>

size_t hy_seq_kv_row_bytes(const hy_seq *s) {
    return 2 * (size_t)s->kv->n_layers * (size_t)s->kv->kv_dim * s->kv->es;
}

size_t hy_seq_gdn_bytes(const hy_seq *s) { return s->gdn->bytes; }

int hy_seq_kv_read(const hy_seq *s, int pos0, int n, void *dst, hy_err *err) {
    if (pos0 < 0 || n < 0 || pos0 + n > s->pos)
        return hy_err_set(err, HY_E_RANGE, "seq_io: KV read [%d, %d) outside the %d computed positions", pos0, pos0 + n,
                          s->pos);
    const hy_kv_cache *kv = s->kv;
    const size_t row = (size_t)kv->kv_dim * kv->es;
    char *d = dst;
    for (int t = 0; t < n; t++) {
        for (int l = 0; l < kv->n_layers; l++) {
            hy_kv_cache_read_pos(kv, l, pos0 + t, d, d + row);
            d += 2 * row;
        }
    }
    return HY_OK;
}

int hy_seq_kv_write(hy_seq *s, int pos0, int n, const void *src, hy_err *err) {
    if (pos0 < 0 || n < 0 || pos0 + n > s->max_tokens)
        return hy_err_set(err, HY_E_RANGE, "seq_io: KV write [%d, %d) outside the capacity %d", pos0, pos0 + n,
                          s->max_tokens);
    hy_kv_cache *kv = s->kv;
    const size_t row = (size_t)kv->kv_dim * kv->es;
    const char *p = src;
    for (int t = 0; t < n; t++) {
        for (int l = 0; l < kv->n_layers; l++) {
            hy_kv_cache_write_pos(kv, l, pos0 + t, p, p + row);
            p += 2 * row;
        }
    }
    return HY_OK;
}

void hy_seq_gdn_read(const hy_seq *s, void *dst) { memcpy(dst, s->gdn->data, s->gdn->bytes); }

int hy_seq_restore(hy_seq *s, const void *gdn, int pos, hy_err *err) {
    if (pos < 0 || pos > s->max_tokens)
        return hy_err_set(err, HY_E_RANGE, "seq_io: restore position %d outside the capacity %d", pos, s->max_tokens);
    memcpy(s->gdn->data, gdn, s->gdn->bytes);
    s->pos = pos;
    return HY_OK;
}
