/*
 * Normalizer (NFC) and pre-tokenizer Split(regex, behaviour Isolated) as HF tokenizers runs
 * them. The regex is taken from tokenizer.json and compiled with Oniguruma, the engine HF
 * tokenizers itself uses (same default syntax, UTF-8), so `(?!\S)`, `(?i:...)`, \p{L}/\p{M}/\p{N}
 * behave identically. NFC is utf8proc's, except for the code points that HF's older Unicode
 * tables do not know (nfc_compat.h, generated and verified by tools/reference/make_nfc_compat.py):
 * HF treats them as inert starters, so we cut the text there and normalize the pieces.
 * Oniguruma's default retry limit (10M backtracks per search) stays on: a pathological input
 * (e.g. tens of MB of one whitespace run) gets a clean error instead of a hang, as in HF.
 * Threading: a compiled regex is only read during searches (HF shares one across threads the
 * same way); each search uses its own region. onig_initialize runs once under pthread_once.
 */
#include "tokenizer/tok_internal.h"

#include <oniguruma.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/nfc_compat.h"

struct hy_pretok {
    regex_t *re;   /* NULL for a literal pattern */
    char *literal; /* literal pattern bytes */
    size_t literal_len;
};

static bool nfc_inert(uint32_t cp) {
    size_t lo = 0, hi = sizeof k_nfc_inert / sizeof k_nfc_inert[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < k_nfc_inert[mid][0]) hi = mid;
        else if (cp > k_nfc_inert[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

static int nfc_segment(const char *s, size_t n, hy_tokbuf *out) {
    if (!n) return 0;
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (r < 0) { /* input is valid UTF-8 by construction; only allocation can fail */
        free(dst);
        return HY_E_NOMEM;
    }
    int rc = hy_tokbuf_put(out, dst, (size_t)r);
    free(dst);
    return rc;
}

int hy_nfc_append(const char *s, size_t n, hy_tokbuf *out) {
    /* Code points below U+0300 are all NFC-stable starters: text made only of them (lead
     * bytes < 0xCC) is already NFC. */
    size_t i = 0;
    while (i < n && (uint8_t)s[i] < 0xCC) i++;
    if (i == n) return hy_tokbuf_put(out, s, n);
    size_t seg = 0;
    i = 0;
    while (i < n) {
        uint8_t c = (uint8_t)s[i];
        if (c < 0xDF) { i += c < 0x80 ? 1 : 2; continue; } /* < U+07C0: nothing inert there */
        size_t l;
        uint32_t cp = hy_utf8_decode((const uint8_t *)s + i, n - i, &l);
        if (nfc_inert(cp)) {
            int rc = nfc_segment(s + seg, i - seg, out);
            if (!rc) rc = hy_tokbuf_put(out, s + i, l);
            if (rc) return rc;
            seg = i + l;
        }
        i += l;
    }
    return nfc_segment(s + seg, n - seg, out);
}

static pthread_once_t g_onig_once = PTHREAD_ONCE_INIT;
static void onig_init_once(void) {
    OnigEncoding enc[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(enc, 1);
}

int hy_pretok_create(hy_pretok **out, const char *pattern, size_t len, bool literal, hy_err *err) {
    *out = NULL;
    hy_pretok *p = calloc(1, sizeof *p);
    if (!p) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (literal) {
        if (!len) {
            free(p);
            return hy_err_set(err, HY_E_INVALID, "empty Split pattern");
        }
        p->literal = malloc(len);
        if (!p->literal) {
            free(p);
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        }
        memcpy(p->literal, pattern, len);
        p->literal_len = len;
        *out = p;
        return 0;
    }
    pthread_once(&g_onig_once, onig_init_once);
    OnigErrorInfo einfo;
    int r = onig_new(&p->re, (const OnigUChar *)pattern, (const OnigUChar *)pattern + len, ONIG_OPTION_NONE,
                     ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &einfo);
    if (r != ONIG_NORMAL) {
        OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &einfo);
        free(p);
        return hy_err_set(err, HY_E_INVALID, "pre-tokenizer regex does not compile: %s", (const char *)msg);
    }
    *out = p;
    return 0;
}

void hy_pretok_free(hy_pretok *p) {
    if (!p) return;
    if (p->re) onig_free(p->re);
    free(p->literal);
    free(p);
}

static int split_literal(const hy_pretok *p, const char *s, size_t n, hy_pretok_cb cb, void *ctx) {
    size_t pos = 0, i = 0;
    while (i + p->literal_len <= n) {
        if (!memcmp(s + i, p->literal, p->literal_len)) {
            int rc;
            if (i > pos && (rc = cb(s + pos, i - pos, ctx))) return rc;
            if ((rc = cb(s + i, p->literal_len, ctx))) return rc;
            i += p->literal_len;
            pos = i;
        } else {
            i++;
        }
    }
    return pos < n ? cb(s + pos, n - pos, ctx) : 0;
}

int hy_pretok_split(const hy_pretok *p, const char *s, size_t n, hy_pretok_cb cb, void *ctx, hy_err *err) {
    if (!n) return 0;
    if (!p->re) return split_literal(p, s, n, cb, ctx);
    const OnigUChar *str = (const OnigUChar *)s, *end = str + n;
    OnigRegion *region = onig_region_new();
    if (!region) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    size_t pos = 0, from = 0;
    int rc = 0;
    while (from <= n) {
        int r = onig_search(p->re, str, end, str + from, end, region, ONIG_OPTION_NONE);
        if (r == ONIG_MISMATCH) break;
        if (r < 0) {
            OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
            onig_error_code_to_str(msg, r);
            rc = hy_err_set(err, HY_E_INTERNAL, "pre-tokenizer regex search failed: %s", (const char *)msg);
            break;
        }
        size_t ms = (size_t)region->beg[0], me = (size_t)region->end[0];
        if (me == ms) { /* empty match: no piece; step over one character */
            if (ms >= n) break;
            size_t l;
            hy_utf8_decode(str + ms, n - ms, &l);
            from = ms + l;
            continue;
        }
        if (ms > pos && (rc = cb(s + pos, ms - pos, ctx))) break;
        if ((rc = cb(s + ms, me - ms, ctx))) break;
        pos = from = me;
    }
    if (!rc && pos < n) rc = cb(s + pos, n - pos, ctx);
    onig_region_free(region, 1);
    return rc;
}
