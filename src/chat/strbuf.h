/*
 * Growable byte buffer used by the chat renderer and the output parser.
 * Owns: its heap block. Threading: one owner, no sharing.
 * Why: rendering appends many small pieces; a sticky out-of-memory flag lets
 * the callers append freely and check once at the end instead of after every
 * call.
 */
#ifndef HY_CHAT_STRBUF_H
#define HY_CHAT_STRBUF_H

#include <stddef.h>

typedef struct hy_chat_buf {
    char *p;    /* always NUL-terminated when non-NULL */
    size_t len; /* bytes used, excluding the terminating NUL */
    size_t cap; /* bytes allocated */
    int oom;    /* set once an allocation failed; later appends are ignored */
} hy_chat_buf;

void hy_chat_buf_init(hy_chat_buf *b);
void hy_chat_buf_free(hy_chat_buf *b);
/* Appends n bytes (may contain NUL). Returns 0 or HY_E_NOMEM (and sets b->oom). */
int hy_chat_buf_put(hy_chat_buf *b, const char *s, size_t n);
int hy_chat_buf_puts(hy_chat_buf *b, const char *s);
int hy_chat_buf_putc(hy_chat_buf *b, char c);
/* Drops bytes [from, len): used to undo a tentative append. */
void hy_chat_buf_truncate(hy_chat_buf *b, size_t from);
/* Removes the first n bytes (n <= len), keeping the rest. */
void hy_chat_buf_consume(hy_chat_buf *b, size_t n);
/* Hands the bytes to the caller (malloc'd, NUL-terminated; "" when empty) and resets b.
 * Returns NULL on out-of-memory. */
char *hy_chat_buf_take(hy_chat_buf *b, size_t *len);

#endif
