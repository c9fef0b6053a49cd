/* UTF-8 scanning (see u8scan.h). Table-free decoder of the well-formed ranges
 * of Unicode 15 Table 3-7. */
#include "base/u8scan.h"

#include <string.h>

/* Examines the sequence starting at s[0] (n >= 1 bytes available).
 * Returns the length of a valid character (1..4), or 0 for an invalid
 * maximal subpart whose length is put in *bad (>= 1); *incomplete is set when
 * the subpart is a valid prefix cut by the end of input. */
static size_t scan_one(const unsigned char *s, size_t n, size_t *bad, bool *incomplete) {
    *incomplete = false;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 2;
    else if (c == 0xe0) { need = 3; lo = 0xa0; }
    else if (c == 0xed) { need = 3; hi = 0x9f; }
    else if (c >= 0xe1 && c <= 0xef) need = 3;
    else if (c == 0xf0) { need = 4; lo = 0x90; }
    else if (c == 0xf4) { need = 4; hi = 0x8f; }
    else if (c >= 0xf1 && c <= 0xf3) need = 4;
    else { *bad = 1; return 0; }
    size_t i = 1;
    for (; i < need; i++) {
        if (i >= n) {
            *incomplete = true;
            *bad = i;
            return 0;
        }
        unsigned b = s[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xbf;
        if (b < l || b > h) {
            *bad = i;
            return 0;
        }
    }
    return need;
}

size_t hy_u8_complete_len(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    /* Only the last 3 bytes can start an incomplete character. */
    size_t start = n > 3 ? n - 3 : 0;
    for (size_t i = start; i < n; i++) {
        if ((u[i] & 0xc0) == 0x80) continue;
        size_t bad;
        bool inc;
        size_t len = scan_one(u + i, n - i, &bad, &inc);
        if (len == 0 && inc) return i;
        if (len) i += len - 1;
    }
    return n;
}

bool hy_u8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t bad;
        bool inc;
        size_t len = scan_one(u + i, n - i, &bad, &inc);
        if (!len) return false;
        i += len;
    }
    return true;
}

size_t hy_u8_repair(const char *s, size_t n, char *out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t bad;
        bool inc;
        size_t len = scan_one(u + i, n - i, &bad, &inc);
        if (len) {
            memcpy(out + w, s + i, len);
            w += len;
            i += len;
        } else {
            memcpy(out + w, "\xef\xbf\xbd", 3);
            w += 3;
            i += bad;
        }
    }
    return w;
}
