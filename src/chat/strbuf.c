/*
 * Growable byte buffer (see strbuf.h). Doubling growth; the block always has
 * room for a terminating NUL so callers can hand out C strings.
 */
#include "chat/strbuf.h"

#include "hyla.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void hy_chat_buf_init(hy_chat_buf *b) { memset(b, 0, sizeof *b); }

void hy_chat_buf_free(hy_chat_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int reserve(hy_chat_buf *b, size_t extra) {
    if (b->oom) return HY_E_NOMEM;
    if (extra > SIZE_MAX / 2 - b->len) {
        b->oom = 1;
        return HY_E_NOMEM;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return HY_E_NOMEM;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

int hy_chat_buf_put(hy_chat_buf *b, const char *s, size_t n) {
    if (reserve(b, n)) return HY_E_NOMEM;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

int hy_chat_buf_puts(hy_chat_buf *b, const char *s) { return hy_chat_buf_put(b, s, strlen(s)); }

int hy_chat_buf_putc(hy_chat_buf *b, char c) { return hy_chat_buf_put(b, &c, 1); }

void hy_chat_buf_truncate(hy_chat_buf *b, size_t from) {
    if (from < b->len) {
        b->len = from;
        b->p[from] = 0;
    }
}

void hy_chat_buf_consume(hy_chat_buf *b, size_t n) {
    if (n >= b->len) {
        hy_chat_buf_truncate(b, 0);
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    b->p[b->len] = 0;
}

char *hy_chat_buf_take(hy_chat_buf *b, size_t *len) {
    if (b->oom) return NULL;
    if (!b->p) {
        if (reserve(b, 0)) return NULL;
        b->p[0] = 0;
    }
    char *p = b->p;
    if (len) *len = b->len;
    memset(b, 0, sizeof *b);
    return p;
}
