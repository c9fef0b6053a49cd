/*
 * Fuzz target: arbitrary bytes -> encode with the tiny tokenizer (parse_special from the first
 * byte) -> decode and stream-decode. Must never crash; when the input is valid UTF-8,
 * decode(encode(x)) must equal NFC(x), and the streamed text must equal the one-shot decode.
 * Valid UTF-8 is also encoded with special tokens allowed in ranges cut from the input's
 * bytes (hy_tokenizer_encode_marked): it must succeed and decode to NFC(x) as well, and give
 * the parse_special = false ids with no range and the parse_special = true ids with one range
 * over everything.
 * The tiny tokenizer is found via $HYLA_DATA_DIR or, failing that, relative to this source
 * file (the replay test runs from the CTest directory).
 */
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hy_tokenizer *g_tok; /* loaded once per process: fuzzers call us millions of times */

static hy_tokenizer *tok(void) {
    if (g_tok) return g_tok;
    char dir[4096];
    const char *env = getenv("HYLA_DATA_DIR");
    if (env) snprintf(dir, sizeof dir, "%s/tokenizers/tiny", env);
    else {
        const char *f = __FILE__; /* .../tests/fuzz/fuzz_tokenizer.c */
        const char *cut = strstr(f, "tests/fuzz/");
        snprintf(dir, sizeof dir, "%.*stests/data/tokenizers/tiny", cut ? (int)(cut - f) : 0, f);
    }
    hy_err err = {0};
    if (hy_tokenizer_load(&g_tok, dir, &err)) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    return g_tok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hy_tokenizer *t = tok();
    bool parse_special = size > 0 && (data[0] & 1);
    hy_err err = {0};
    int32_t *ids = NULL;
    size_t n = 0;
    if (hy_tokenizer_encode(t, (const char *)data, size, parse_special, &ids, &n, &err)) abort();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= hy_tokenizer_vocab_size(t)) abort();
    char *text = NULL;
    size_t tl = 0;
    if (hy_tokenizer_decode(t, ids, n, false, &text, &tl, &err)) abort();
    if (!hy_utf8_is_valid((const uint8_t *)text, tl)) abort();
    if (hy_utf8_is_valid(data, size)) {
        hy_tokbuf nfc = {0};
        if (hy_nfc_append((const char *)data, size, &nfc)) abort();
        if (nfc.n != tl || (tl && memcmp(nfc.p, text, tl))) abort();
        free(nfc.p);
    }
    if (hy_utf8_is_valid(data, size)) {
        size_t rg[8], nr = 0, at = 0;
        for (size_t i = 1; i < size && nr < 4; i += 2) { /* ranges from the bytes, sorted */
            size_t a = at + data[i] % 7, b = a + data[i - 1] % 13 + 1;
            if (b > size) break;
            rg[2 * nr] = a;
            rg[2 * nr + 1] = b;
            nr++;
            at = b + 1;
        }
        int32_t *m = NULL, *ref = NULL;
        size_t nm = 0, nref = 0;
        char *mt = NULL;
        size_t ml = 0;
        if (hy_tokenizer_encode_marked(t, (const char *)data, size, rg, nr, &m, &nm, &err)) abort();
        if (hy_tokenizer_decode(t, m, nm, false, &mt, &ml, &err) || ml != tl || (tl && memcmp(mt, text, tl))) abort();
        free(mt);
        free(m);
        size_t all[2] = {0, size};
        for (int k = 0; k < 2; k++) {
            if (hy_tokenizer_encode_marked(t, (const char *)data, size, all, (size_t)k, &m, &nm, &err) ||
                hy_tokenizer_encode(t, (const char *)data, size, k == 1, &ref, &nref, &err))
                abort();
            if (nm != nref || (nm && memcmp(m, ref, nm * sizeof *m))) abort();
            free(m);
            free(ref);
        }
    }
    hy_detok *d = NULL;
    if (hy_detok_create(&d, t, false, &err)) abort();
    hy_tokbuf acc = {0};
    const char *s;
    size_t l;
    for (size_t i = 0; i < n; i++) {
        if (hy_detok_push(d, ids[i], &s, &l, &err) || !hy_utf8_is_valid((const uint8_t *)s, l)) abort();
        if (hy_tokbuf_put(&acc, s, l)) abort();
    }
    if (hy_detok_flush(d, &s, &l, &err) || hy_tokbuf_put(&acc, s, l)) abort();
    if (acc.n != tl || (tl && memcmp(acc.p, text, tl))) abort();
    free(acc.p);
    hy_detok_free(d);
    /* decoding arbitrary ids (the input read as int32s) must not crash either */
    if (size >= 4) {
        char *t2 = NULL;
        size_t l2 = 0;
        if (hy_tokenizer_decode(t, (const int32_t *)(const void *)data, size / 4, data[0] & 2, &t2, &l2, &err)) abort();
        free(t2);
    }
    free(text);
    free(ids);
    return 0;
}
