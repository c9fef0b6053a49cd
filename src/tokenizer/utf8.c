/*
 * UTF-8 helpers for the tokenizer: validation, lossy decoding with U+FFFD per maximal ill-formed
 * subpart (Unicode 15 ch. 3 "U+FFFD substitution of maximal subparts", which both Python's
 * errors="replace" and Rust's String::from_utf8_lossy implement, so our replacements match
 * what HF sees), and the growable buffers used across the module. Pure functions, no state.
 */
#include "tokenizer/tok_internal.h"

#include <stdlib.h>
#include <string.h>

int hy_tokbuf_reserve(hy_tokbuf *b, size_t extra) {
    if (b->cap - b->n >= extra) return 0;
    size_t need = b->n + extra;
    if (need < b->n) return HY_E_NOMEM;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return HY_E_NOMEM;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) return HY_E_NOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int hy_tokbuf_put(hy_tokbuf *b, const void *s, size_t n) {
    if (hy_tokbuf_reserve(b, n)) return HY_E_NOMEM;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

int hy_idvec_reserve(hy_idvec *v, size_t extra) {
    if (v->cap - v->n >= extra) return 0;
    size_t need = v->n + extra;
    size_t cap = v->cap ? v->cap : 32;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(int32_t)) return HY_E_NOMEM;
        cap *= 2;
    }
    int32_t *p = realloc(v->p, cap * sizeof(int32_t));
    if (!p) return HY_E_NOMEM;
    v->p = p;
    v->cap = cap;
    return 0;
}

int hy_idvec_push(hy_idvec *v, int32_t id) {
    if (v->n == v->cap && hy_idvec_reserve(v, 1)) return HY_E_NOMEM;
    v->p[v->n++] = id;
    return 0;
}

/* Length of the well-formed sequence starting at s (Table 3-7), 0 if ill-formed; when the
 * input ends inside a sequence that is still a valid prefix, returns 0 and sets *partial to
 * the number of bytes of that prefix. Otherwise *partial is the maximal subpart length
 * (>= 1) to replace. */
static size_t seq_len(const uint8_t *s, size_t n, size_t *partial) {
    uint8_t c = s[0];
    *partial = 1;
    if (c < 0x80) return 1;
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) { need = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) need = 3;
    else if (c == 0xED) { need = 3; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) need = 3;
    else if (c == 0xF0) { need = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else if (c == 0xF4) { need = 4; hi = 0x8F; }
    else return 0;
    for (size_t i = 1; i < need; i++) {
        if (i >= n) { *partial = i; return (size_t)-1; } /* valid prefix cut by end of input */
        uint8_t d = s[i];
        if (i == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) { *partial = i; return 0; }
    }
    return need;
}

bool hy_utf8_is_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        size_t partial, l = seq_len(s + i, n - i, &partial);
        if (l == 0 || l == (size_t)-1) return false;
        i += l;
    }
    return true;
}

size_t hy_utf8_lossy(const uint8_t *s, size_t n, bool final, hy_tokbuf *out) {
    static const char k_fffd[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    size_t i = 0, run = 0; /* run: start of the pending valid stretch */
    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        size_t partial, l = seq_len(s + i, n - i, &partial);
        if (l != 0 && l != (size_t)-1) { i += l; continue; }
        if (i > run && hy_tokbuf_put(out, s + run, i - run)) return (size_t)-1;
        if (l == (size_t)-1 && !final) return i; /* hold back the incomplete tail */
        if (hy_tokbuf_put(out, k_fffd, 3)) return (size_t)-1;
        i += partial;
        run = i;
    }
    if (i > run && hy_tokbuf_put(out, s + run, i - run)) return (size_t)-1;
    return i;
}

uint32_t hy_utf8_decode(const uint8_t *s, size_t n, size_t *len) {
    uint8_t c = s[0];
    if (c < 0x80 || n < 2) { *len = 1; return c; }
    if (c < 0xE0) { *len = 2; return ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F); }
    if (c < 0xF0 || n < 4) {
        *len = 3;
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *len = 4;
    return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
           (s[3] & 0x3F);
}

size_t hy_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
