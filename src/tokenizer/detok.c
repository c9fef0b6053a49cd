/*
 * Streaming detokenizer: token bytes are appended to a pending buffer and only the prefix that
 * is complete UTF-8 is released; a trailing sequence that is still a valid prefix (at most 3
 * bytes) waits for the next token. Ill-formed bytes are replaced as soon as they are known to
 * be ill-formed, with the same maximal-subpart rule as hy_tokenizer_decode, so the
 * concatenated output always equals the one-shot decode. One owner thread per hy_detok.
 */
#include "tokenizer/tok_internal.h"

#include <stdlib.h>
#include <string.h>

struct hy_detok {
    const hy_tokenizer *t;
    bool skip_special;
    hy_tokbuf pending; /* raw bytes not yet released (< 4 between calls) */
    hy_tokbuf out;     /* text returned by the last call */
};

int hy_detok_create(hy_detok **out, const hy_tokenizer *t, bool skip_special, hy_err *err) {
    *out = calloc(1, sizeof **out);
    if (!*out) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    (*out)->t = t;
    (*out)->skip_special = skip_special;
    return 0;
}

void hy_detok_free(hy_detok *d) {
    if (!d) return;
    free(d->pending.p);
    free(d->out.p);
    free(d);
}

size_t hy_detok_pending(const hy_detok *d) { return d->pending.n; }

static int release(hy_detok *d, bool final, const char **text, size_t *len, hy_err *err) {
    d->out.n = 0;
    size_t used = hy_utf8_lossy((const uint8_t *)d->pending.p, d->pending.n, final, &d->out);
    if (used == (size_t)-1 || hy_tokbuf_reserve(&d->out, 1)) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (used && used < d->pending.n) memmove(d->pending.p, d->pending.p + used, d->pending.n - used);
    d->pending.n -= used;
    d->out.p[d->out.n] = 0;
    *text = d->out.p;
    *len = d->out.n;
    return 0;
}

int hy_detok_push(hy_detok *d, int32_t id, const char **text, size_t *len, hy_err *err) {
    size_t bl = 0;
    const uint8_t *b = hy_tokenizer_token_bytes(d->t, id, &bl);
    if (b && !(d->skip_special && hy_tokenizer_is_special(d->t, id)) && hy_tokbuf_put(&d->pending, b, bl))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    return release(d, false, text, len, err);
}

int hy_detok_flush(hy_detok *d, const char **text, size_t *len, hy_err *err) { return release(d, true, text, len, err); }
