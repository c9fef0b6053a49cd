/*
 * GPT-2 byte-level alphabet (spec text-interface.md 1.5): printable bytes 0x21-0x7E,
 * 0xA1-0xAC, 0xAE-0xFF stand for themselves; the other 68 bytes, in increasing order, map to
 * U+0100..U+0143. Computed arithmetically: no tables, no state.
 */
#include "tokenizer/tok_internal.h"

static bool printable(uint32_t b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

uint32_t hy_bytelevel_byte_to_cp(uint8_t b) {
    if (printable(b)) return b;
    if (b <= 0x20) return 0x100u + b;
    if (b >= 0x7F && b <= 0xA0) return 0x100u + 33u + (b - 0x7Fu);
    return 0x100u + 67u; /* 0xAD */
}

int hy_bytelevel_cp_to_byte(uint32_t cp) {
    if (cp <= 0xFF) return printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 && cp < 0x144) {
        uint32_t i = cp - 0x100;
        if (i < 33) return (int)i;
        if (i < 67) return (int)(0x7F + (i - 33));
        return 0xAD;
    }
    return -1;
}

int hy_bytelevel_decode_piece(const char *s, size_t n, hy_tokbuf *out) {
    size_t start = out->n, i = 0;
    if (hy_tokbuf_reserve(out, n)) return HY_E_NOMEM; /* mapped form is never longer */
    while (i < n) {
        size_t l;
        uint32_t cp = hy_utf8_decode((const uint8_t *)s + i, n - i, &l);
        int b = hy_bytelevel_cp_to_byte(cp);
        if (b < 0) { /* not byte-level: HF keeps the token's own bytes */
            out->n = start;
            return hy_tokbuf_put(out, s, n);
        }
        out->p[out->n++] = (char)b;
        i += l;
    }
    return 0;
}

int hy_bytelevel_encode_bytes(const uint8_t *s, size_t n, hy_tokbuf *out) {
    for (size_t i = 0; i < n; i++) {
        char u[4];
        size_t l = hy_utf8_encode(hy_bytelevel_byte_to_cp(s[i]), u);
        if (hy_tokbuf_put(out, u, l)) return HY_E_NOMEM;
    }
    return 0;
}
