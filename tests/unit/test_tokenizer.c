/* tokenizer/: ids identical to HF tokenizers on the corpus (real Qwen3.6 tokenizer and the tiny
 * one), decode, parse_special, both merge spellings, load errors, streaming detokenizer,
 * concurrent encodes. Fixtures: tests/data/tokenizers/, tests/data/tokenizer/ (made by
 * tools/reference/make_*.py); .zst files are decompressed with the zstd tool into memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_util.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ fixtures */

static char *zstd_read(const char *rel, size_t *len) {
    char *path = hy_test_data_path(rel);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "zstd -dc '%s'", path);
    free(path);
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap + 1);
    for (;;) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        cap *= 2;
        b = realloc(b, cap + 1);
    }
    if (pclose(f) != 0 || n == 0) {
        free(b);
        return NULL;
    }
    b[n] = 0;
    *len = n;
    return b;
}

static char *replace1(const char *s, const char *a, const char *b);

/* qwen2_regex: swap the Qwen3.5 pre-tokenizer regex for the Qwen2/Qwen3 one (no \p{M}). */
static hy_tokenizer *load_qwen_ex(bool qwen2_regex) {
    size_t jl = 0, cl = 0;
    char *json = zstd_read("tokenizers/qwen3.6/tokenizer.json.zst", &jl);
    assert_non_null(json);
    if (qwen2_regex) {
        char *a = replace1(json, "?[\\\\p{L}\\\\p{M}]+|", "?\\\\p{L}+|");
        char *b = replace1(a, "[^\\\\s\\\\p{L}\\\\p{M}\\\\p{N}]+", "[^\\\\s\\\\p{L}\\\\p{N}]+");
        free(a);
        free(json);
        json = b;
        jl = strlen(json);
    }
    char *cp = hy_test_data_path("tokenizers/qwen3.6/tokenizer_config.json");
    char *cfg = (char *)hy_test_read_file(cp, &cl);
    free(cp);
    assert_non_null(cfg);
    hy_tokenizer *t = NULL;
    hy_err err = {0};
    int rc = hy_tokenizer_load_json(&t, json, jl, cfg, cl, "qwen3.6 tokenizer.json", &err);
    if (rc) fprintf(stderr, "load: %s\n", err.msg);
    assert_int_equal(rc, 0);
    free(json);
    free(cfg);
    return t;
}

static hy_tokenizer *load_qwen(void) { return load_qwen_ex(false); }

static hy_tokenizer *load_tiny(void) {
    char *dir = hy_test_data_path("tokenizers/tiny");
    hy_tokenizer *t = NULL;
    hy_err err = {0};
    int rc = hy_tokenizer_load(&t, dir, &err);
    if (rc) fprintf(stderr, "load: %s\n", err.msg);
    assert_int_equal(rc, 0);
    free(dir);
    return t;
}

typedef struct {
    char **s;
    size_t *len;
    size_t n;
    char *buf;
} lines_t;

static void read_lines(const char *rel, lines_t *L) {
    char *path = hy_test_data_path(rel);
    size_t n = 0;
    L->buf = (char *)hy_test_read_file(path, &n);
    free(path);
    assert_non_null(L->buf);
    L->n = 0;
    for (size_t i = 0; i < n; i++) L->n += L->buf[i] == '\n';
    L->s = calloc(L->n, sizeof *L->s);
    L->len = calloc(L->n, sizeof *L->len);
    size_t k = 0, st = 0;
    for (size_t i = 0; i < n; i++)
        if (L->buf[i] == '\n') {
            L->s[k] = L->buf + st;
            L->len[k++] = i - st;
            st = i + 1;
        }
}

static void free_lines(lines_t *L) {
    free(L->s);
    free(L->len);
    free(L->buf);
}

static bool ids_equal(const int32_t *a, size_t na, json_t *arr) {
    if (!json_is_array(arr) || json_array_size(arr) != na) return false;
    for (size_t i = 0; i < na; i++)
        if (json_integer_value(json_array_get(arr, i)) != a[i]) return false;
    return true;
}

static void print_ids_diff(const char *what, size_t idx, const int32_t *a, size_t na, json_t *arr) {
    fprintf(stderr, "MISMATCH %s %zu: ours (%zu):", what, idx, na);
    for (size_t i = 0; i < na && i < 40; i++) fprintf(stderr, " %d", a[i]);
    fprintf(stderr, "\n   HF (%zu):", json_array_size(arr));
    for (size_t i = 0; i < json_array_size(arr) && i < 40; i++) fprintf(stderr, " %lld", json_integer_value(json_array_get(arr, i)));
    fprintf(stderr, "\n");
}

/* Runs every record of a golden file against t; returns number of failures. */
static int run_golden(const hy_tokenizer *t, const char *golden_rel, const char *name) {
    lines_t L, I;
    read_lines("tokenizer/corpus.txt", &L);
    read_lines("tokenizer/corpus_invalid.bin", &I);
    size_t glen = 0;
    char *g = zstd_read(golden_rel, &glen);
    assert_non_null(g);
    size_t n_line = 0, ok_line = 0, n_ns = 0, ok_ns = 0, n_block = 0, ok_block = 0, n_inv = 0, ok_inv = 0;
    size_t n_dec = 0, ok_dec = 0, n_rt = 0, ok_rt = 0, n_ids = 0;
    hy_err err = {0};
    char *save = NULL;
    for (char *ln = strtok_r(g, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        json_error_t je;
        json_t *r = json_loads(ln, JSON_ALLOW_NUL, &je);
        assert_non_null(r);
        json_t *jl = json_object_get(r, "line"), *jb = json_object_get(r, "block");
        json_t *ji = json_object_get(r, "invalid"), *jd = json_object_get(r, "decode");
        int32_t *ids = NULL;
        size_t n = 0;
        if (jl) {
            size_t i = (size_t)json_integer_value(jl);
            assert_true(i < L.n);
            assert_int_equal(hy_tokenizer_encode(t, L.s[i], L.len[i], true, &ids, &n, &err), 0);
            n_line++;
            n_ids += n;
            if (ids_equal(ids, n, json_object_get(r, "ids"))) ok_line++;
            else print_ids_diff("line", i, ids, n, json_object_get(r, "ids"));
            /* decode(encode(x)) == NFC(x) (HF's NFC, which ours reproduces) */
            char *txt = NULL;
            size_t tl = 0;
            hy_tokbuf nfc = {0};
            assert_int_equal(hy_tokenizer_decode(t, ids, n, false, &txt, &tl, &err), 0);
            assert_int_equal(hy_nfc_append(L.s[i], L.len[i], &nfc), 0);
            n_rt++;
            if (tl == nfc.n && (tl == 0 || !memcmp(txt, nfc.p, tl))) ok_rt++;
            else fprintf(stderr, "ROUNDTRIP %s line %zu differs\n", name, i);
            free(txt);
            free(nfc.p);
            free(ids);
            /* parse_special off = HF split_special_tokens=True */
            json_t *want_ns = json_object_get(r, "ids_ns");
            if (!want_ns) want_ns = json_object_get(r, "ids");
            else n_ns++;
            assert_int_equal(hy_tokenizer_encode(t, L.s[i], L.len[i], false, &ids, &n, &err), 0);
            if (ids_equal(ids, n, want_ns)) ok_ns += json_object_get(r, "ids_ns") != NULL;
            else {
                print_ids_diff("line(no-special)", i, ids, n, want_ns);
                n_ns += json_object_get(r, "ids_ns") == NULL; /* count the failure */
            }
        } else if (jb) {
            size_t b = (size_t)json_integer_value(json_array_get(jb, 0)), c = (size_t)json_integer_value(json_array_get(jb, 1));
            assert_true(b + c <= L.n);
            const char *s = L.s[b];
            size_t len = (size_t)(L.s[b + c - 1] + L.len[b + c - 1] + 1 - s); /* lines are contiguous */
            assert_int_equal(hy_tokenizer_encode(t, s, len, true, &ids, &n, &err), 0);
            n_block++;
            if (ids_equal(ids, n, json_object_get(r, "ids"))) ok_block++;
            else print_ids_diff("block", b, ids, n, json_object_get(r, "ids"));
        } else if (ji) {
            size_t i = (size_t)json_integer_value(ji);
            assert_true(i < I.n);
            assert_int_equal(hy_tokenizer_encode(t, I.s[i], I.len[i], true, &ids, &n, &err), 0);
            n_inv++;
            if (ids_equal(ids, n, json_object_get(r, "ids"))) ok_inv++;
            else print_ids_diff("invalid", i, ids, n, json_object_get(r, "ids"));
        } else if (jd) {
            size_t k = json_array_size(jd);
            int32_t *in = malloc((k + 1) * sizeof *in);
            for (size_t j = 0; j < k; j++) in[j] = (int32_t)json_integer_value(json_array_get(jd, j));
            char *txt = NULL;
            size_t tl = 0;
            assert_int_equal(hy_tokenizer_decode(t, in, k, json_is_true(json_object_get(r, "skip")), &txt, &tl, &err), 0);
            json_t *want = json_object_get(r, "text");
            n_dec++;
            if (tl == json_string_length(want) && !memcmp(txt, json_string_value(want), tl)) ok_dec++;
            else fprintf(stderr, "DECODE %s record %zu differs\n", name, n_dec);
            free(txt);
            free(in);
        }
        free(ids);
        json_decref(r);
    }
    printf("[%s] HF-identical ids: lines %zu/%zu (%zu ids), parse_special=off lines that differ %zu/%zu, "
           "blocks %zu/%zu, invalid-UTF-8 lines %zu/%zu; decode %zu/%zu; decode(encode(x))==NFC(x) %zu/%zu\n",
           name, ok_line, n_line, n_ids, ok_ns, n_ns, ok_block, n_block, ok_inv, n_inv, ok_dec, n_dec, ok_rt, n_rt);
    free(g);
    free_lines(&L);
    free_lines(&I);
    return (int)((n_line - ok_line) + (n_ns - ok_ns) + (n_block - ok_block) + (n_inv - ok_inv) + (n_dec - ok_dec) +
                 (n_rt - ok_rt)) +
           (n_line == 0);
}

/* ------------------------------------------------------------------ real tokenizer */

static hy_tokenizer *g_qwen;

static int setup_qwen(void **st) {
    (void)st;
    g_qwen = load_qwen();
    return 0;
}
static int teardown_qwen(void **st) {
    (void)st;
    hy_tokenizer_free(g_qwen);
    return 0;
}

static void test_qwen_golden(void **st) {
    (void)st;
    assert_int_equal(run_golden(g_qwen, "tokenizer/expected.jsonl.zst", "qwen3.6"), 0);
}

static void test_qwen2_regex_golden(void **st) {
    (void)st;
    hy_tokenizer *t = load_qwen_ex(true);
    assert_int_equal(run_golden(t, "tokenizer/expected_qwen2_regex.jsonl.zst", "qwen3.6 vocab + Qwen2 regex"), 0);
    hy_tokenizer_free(t);
}

static void test_tiny_golden(void **st) {
    (void)st;
    hy_tokenizer *t = load_tiny();
    assert_int_equal(hy_tokenizer_vocab_size(t), 473);
    assert_int_equal(hy_tokenizer_token_id(t, "<|im_end|>"), 442);
    assert_int_equal(run_golden(t, "tokenizer/expected_tiny.jsonl.zst", "tiny"), 0);
    hy_tokenizer_free(t);
}

static void expect_ids(const hy_tokenizer *t, const char *s, bool ps, const int32_t *want, size_t nw) {
    int32_t *ids = NULL;
    size_t n = 0;
    hy_err err = {0};
    assert_int_equal(hy_tokenizer_encode(t, s, strlen(s), ps, &ids, &n, &err), 0);
    if (n != nw || memcmp(ids, want, n * sizeof *ids)) {
        fprintf(stderr, "encode(\"%s\") =", s);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    assert_int_equal(n, nw);
    assert_memory_equal(ids, want, n * sizeof *ids);
    free(ids);
}

static void test_qwen_api(void **st) {
    (void)st;
    const hy_tokenizer *t = g_qwen;
    assert_int_equal(hy_tokenizer_vocab_size(t), 248077);
    assert_int_equal(hy_tokenizer_token_id(t, "<|endoftext|>"), 248044);
    assert_int_equal(hy_tokenizer_token_id(t, "<|im_start|>"), 248045);
    assert_int_equal(hy_tokenizer_token_id(t, "<|im_end|>"), 248046);
    assert_int_equal(hy_tokenizer_token_id(t, "<think>"), 248068);
    assert_int_equal(hy_tokenizer_token_id(t, "</think>"), 248069);
    assert_int_equal(hy_tokenizer_token_id(t, "<tool_call>"), 248058);
    assert_int_equal(hy_tokenizer_token_id(t, "Ċ"), 198);
    assert_int_equal(hy_tokenizer_token_id(t, "nonexistent-token"), -1);
    assert_string_equal(hy_tokenizer_id_to_piece(t, 74455), "assistant");
    assert_string_equal(hy_tokenizer_id_to_piece(t, 1156), "Ġuser");
    assert_string_equal(hy_tokenizer_id_to_piece(t, 248046), "<|im_end|>");
    assert_null(hy_tokenizer_id_to_piece(t, 248077));
    assert_null(hy_tokenizer_id_to_piece(t, -1));
    size_t bl = 0;
    const uint8_t *b = hy_tokenizer_token_bytes(t, 198, &bl);
    assert_int_equal(bl, 1);
    assert_int_equal(b[0], '\n');
    assert_int_equal(hy_tokenizer_eos_id(t), 248046);
    assert_int_equal(hy_tokenizer_pad_id(t), 248044);
    assert_int_equal(hy_tokenizer_bos_id(t), -1);
    assert_int_equal(hy_tokenizer_model_max_length(t), 262144);
    assert_true(hy_tokenizer_is_special(t, 248046));
    assert_false(hy_tokenizer_is_special(t, 248068)); /* <think> is special:false */
    assert_true(hy_tokenizer_is_added(t, 248068));
    assert_false(hy_tokenizer_is_added(t, 198));
    /* spec 1.4 prompt */
    const int32_t want[] = {248045, 846, 198, 12675, 30, 248046, 198, 248045, 74455, 198, 248068, 198};
    expect_ids(t, "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n<think>\n", true, want, 12);
    /* parse_special off: <|im_end|> typed by a user stays text, <think> is still one token */
    int32_t *ids = NULL;
    size_t n = 0;
    hy_err err = {0};
    assert_int_equal(hy_tokenizer_encode(t, "a<|im_end|>b<think>c", 20, false, &ids, &n, &err), 0);
    bool has_imend = false, has_think = false;
    for (size_t i = 0; i < n; i++) {
        has_imend |= ids[i] == 248046;
        has_think |= ids[i] == 248068;
    }
    assert_false(has_imend);
    assert_true(has_think);
    char *txt = NULL;
    size_t tl = 0;
    assert_int_equal(hy_tokenizer_decode(t, ids, n, false, &txt, &tl, &err), 0);
    assert_string_equal(txt, "a<|im_end|>b<think>c");
    free(txt);
    free(ids);
    /* skip_special drops <|im_end|> but keeps <think> */
    const int32_t mix[] = {248045, 846, 248068, 248046, 999999, -5};
    assert_int_equal(hy_tokenizer_decode(t, mix, 6, true, &txt, &tl, &err), 0);
    assert_string_equal(txt, "user<think>");
    free(txt);
    assert_int_equal(hy_tokenizer_decode(t, mix, 6, false, &txt, &tl, &err), 0);
    assert_string_equal(txt, "<|im_start|>user<think><|im_end|>");
    free(txt);
    /* empty input */
    assert_int_equal(hy_tokenizer_encode(t, "", 0, true, &ids, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_non_null(ids);
    free(ids);
}

/* ------------------------------------------------------------------ streaming detokenizer */

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void check_stream(const hy_tokenizer *t, const int32_t *ids, size_t n, bool skip) {
    hy_err err = {0};
    hy_detok *d = NULL;
    assert_int_equal(hy_detok_create(&d, t, skip, &err), 0);
    hy_tokbuf acc = {0};
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t l;
        assert_int_equal(hy_detok_push(d, ids[i], &s, &l, &err), 0);
        assert_true(hy_utf8_is_valid((const uint8_t *)s, l)); /* never a broken sequence */
        assert_true(hy_detok_pending(d) <= 3);
        assert_int_equal(hy_tokbuf_put(&acc, s, l), 0);
    }
    const char *s;
    size_t l;
    assert_int_equal(hy_detok_flush(d, &s, &l, &err), 0);
    assert_true(hy_utf8_is_valid((const uint8_t *)s, l));
    assert_int_equal(hy_tokbuf_put(&acc, s, l), 0);
    assert_int_equal(hy_detok_pending(d), 0);
    char *full = NULL;
    size_t fl = 0;
    assert_int_equal(hy_tokenizer_decode(t, ids, n, skip, &full, &fl, &err), 0);
    assert_int_equal(acc.n, fl);
    if (fl) assert_memory_equal(acc.p, full, fl);
    free(full);
    free(acc.p);
    hy_detok_free(d);
}

/* hy_tokenizer_encode_marked: special tokens only inside the given ranges. */
static void test_encode_marked(void **st) {
    (void)st;
    const hy_tokenizer *t = g_qwen;
    const char *txt = "<|im_start|>user\nhi <|im_end|> <think>x<|im_end|>\n<|im_start|>assistant\n";
    size_t len = strlen(txt);
    const char *u = strstr(txt, "hi"), *e2 = strstr(txt, "x<|im_end|>") + 1;
    /* markup: "<|im_start|>user\n" and from the second <|im_end|> to the end */
    size_t mk[4] = {0, (size_t)(u - txt), (size_t)(e2 - txt), len};
    int32_t *ids = NULL, *a = NULL, *b = NULL;
    size_t n = 0, na = 0, nb = 0;
    hy_err err = {0};
    assert_int_equal(hy_tokenizer_encode_marked(t, txt, len, mk, 2, &ids, &n, &err), 0);
    size_t im_end = 0, im_start = 0, think = 0;
    for (size_t i = 0; i < n; i++) {
        im_end += ids[i] == 248046;
        im_start += ids[i] == 248045;
        think += ids[i] == 248068;
    }
    assert_int_equal(im_start, 2);
    assert_int_equal(im_end, 1); /* the user's copy stayed text */
    assert_int_equal(think, 1);  /* special:false tokens are matched everywhere, as HF does */
    assert_int_equal(ids[0], 248045);
    char *dec = NULL;
    size_t dl = 0;
    assert_int_equal(hy_tokenizer_decode(t, ids, n, false, &dec, &dl, &err), 0);
    assert_int_equal(dl, len);
    assert_memory_equal(dec, txt, len);
    free(dec);
    free(ids);
    /* one range over everything = parse_special on; no range = off */
    size_t all[2] = {0, len};
    assert_int_equal(hy_tokenizer_encode_marked(t, txt, len, all, 1, &ids, &n, &err), 0);
    assert_int_equal(hy_tokenizer_encode(t, txt, len, true, &a, &na, &err), 0);
    assert_int_equal(n, na);
    assert_memory_equal(ids, a, n * sizeof *ids);
    free(ids);
    assert_int_equal(hy_tokenizer_encode_marked(t, txt, len, NULL, 0, &ids, &n, &err), 0);
    assert_int_equal(hy_tokenizer_encode(t, txt, len, false, &b, &nb, &err), 0);
    assert_int_equal(n, nb);
    assert_memory_equal(ids, b, n * sizeof *ids);
    free(ids);
    free(a);
    free(b);
    /* a range that ends inside a special token's text does not make it special */
    size_t cut[2] = {0, 5};
    assert_int_equal(hy_tokenizer_encode_marked(t, txt, len, cut, 1, &ids, &n, &err), 0);
    assert_true(ids[0] != 248045);
    free(ids);
    /* bad ranges and invalid UTF-8 are errors, not guesses */
    size_t unsorted[4] = {10, 20, 5, 8}, past[2] = {0, len + 1};
    assert_int_equal(hy_tokenizer_encode_marked(t, txt, len, unsorted, 2, &ids, &n, &err), HY_E_INVALID);
    assert_null(ids);
    assert_int_equal(hy_tokenizer_encode_marked(t, txt, len, past, 1, &ids, &n, &err), HY_E_INVALID);
    assert_int_equal(hy_tokenizer_encode_marked(t, "a\xff", 2, all, 0, &ids, &n, &err), HY_E_INVALID);
    assert_non_null(strstr(err.msg, "UTF-8"));
}

static void test_detok_stream(void **st) {
    (void)st;
    const hy_tokenizer *t = g_qwen;
    static const uint32_t pool[] = {'a', 'Z', ' ', '\n', 0xE9, 0x4E2D, 0x6587, 0x1F600, 0x1F469, 0x200D, 0x1F4BB,
                                    0x1F3FD, 0x0627, 0x0650, 0x0915, 0x094D, 0x0E01, 0x0E48, 0xAC00, 0x10348, 0xFE0F};
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    hy_err err = {0};
    size_t total_ids = 0;
    for (int iter = 0; iter < 300; iter++) {
        hy_tokbuf txt = {0};
        int len = 1 + (int)(rng_next(&seed) % 40);
        for (int i = 0; i < len; i++) {
            char u[4];
            size_t l = hy_utf8_encode(pool[rng_next(&seed) % (sizeof pool / sizeof pool[0])], u);
            hy_tokbuf_put(&txt, u, l);
        }
        int32_t *ids = NULL;
        size_t n = 0;
        assert_int_equal(hy_tokenizer_encode(t, txt.p, txt.n, true, &ids, &n, &err), 0);
        total_ids += n;
        check_stream(t, ids, n, false);
        free(ids);
        free(txt.p);
    }
    /* random ids, many of them partial UTF-8 byte tokens, specials and unknown ids */
    for (int iter = 0; iter < 300; iter++) {
        int32_t ids[24];
        size_t n = 1 + rng_next(&seed) % 24;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&seed);
            ids[i] = (r & 3) == 0 ? (int32_t)(r >> 8) % 256 : (r & 3) == 1 ? 248040 + (int32_t)((r >> 8) % 45)
                                                                             : (int32_t)((r >> 8) % 248044);
        }
        check_stream(t, ids, n, iter & 1);
    }
    printf("[detok] 600 streams (%zu ids of random multi-byte text) matched full decode, never a partial sequence\n",
           total_ids);
}

/* ------------------------------------------------------------------ concurrency */

typedef struct {
    const hy_tokenizer *t;
    lines_t *L;
    size_t from, step;
    uint64_t sum;
} thr_arg;

static void *thr_encode(void *p) {
    thr_arg *a = p;
    hy_err err = {0};
    for (size_t i = a->from; i < a->L->n; i += a->step) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (hy_tokenizer_encode(a->t, a->L->s[i], a->L->len[i], true, &ids, &n, &err)) return NULL;
        for (size_t j = 0; j < n; j++) a->sum = a->sum * 31 + (uint64_t)ids[j] + i;
        free(ids);
    }
    return a;
}

static void test_concurrent_encode(void **st) {
    (void)st;
    lines_t L;
    read_lines("tokenizer/corpus.txt", &L);
    /* serial: each of 4 interleaved slices; then the same slices on 4 threads at once */
    thr_arg serial[4], par[4];
    for (int k = 0; k < 4; k++) {
        serial[k] = (thr_arg){g_qwen, &L, (size_t)k, 4, 0};
        assert_non_null(thr_encode(&serial[k]));
    }
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        par[k] = (thr_arg){g_qwen, &L, (size_t)k, 4, 0};
        assert_int_equal(pthread_create(&th[k], NULL, thr_encode, &par[k]), 0);
    }
    for (int k = 0; k < 4; k++) {
        void *r;
        pthread_join(th[k], &r);
        assert_non_null(r);
        assert_true(par[k].sum == serial[k].sum);
    }
    free_lines(&L);
}

/* ------------------------------------------------------------------ inline tokenizer.json */

/* A 3-letter byte-level BPE; merges spelled as "a b" strings or ["a", "b"] pairs. */
static char *inline_json(bool pair_merges, const char *normalizer, const char *pretok, const char *extra_added) {
    hy_tokbuf b = {0};
    char tmp[1024];
    hy_tokbuf_put(&b, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,", 50);
    const char *added = "\"added_tokens\":[{\"id\":262,\"content\":\"<|end|>\",\"single_word\":false,\"lstrip\":false,"
                        "\"rstrip\":false,\"normalized\":false,\"special\":true},"
                        "{\"id\":263,\"content\":\"<th>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
                        "\"normalized\":false,\"special\":false}";
    hy_tokbuf_put(&b, added, strlen(added));
    if (extra_added) hy_tokbuf_put(&b, extra_added, strlen(extra_added));
    hy_tokbuf_put(&b, "],", 2);
    snprintf(tmp, sizeof tmp, "\"normalizer\":%s,\"pre_tokenizer\":%s,", normalizer, pretok);
    hy_tokbuf_put(&b, tmp, strlen(tmp));
    const char *s = "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                    "\"trim_offsets\":false,\"use_regex\":false},\"model\":{\"type\":\"BPE\",\"dropout\":null,"
                    "\"unk_token\":null,\"continuing_subword_prefix\":\"\",\"end_of_word_suffix\":\"\","
                    "\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":false,\"vocab\":{";
    hy_tokbuf_put(&b, s, strlen(s));
    for (int i = 0; i < 256; i++) {
        char u[4];
        size_t l = hy_utf8_encode(hy_bytelevel_byte_to_cp((uint8_t)i), u);
        char e[32];
        int el = snprintf(e, sizeof e, "%s\"%.*s\":%d", i ? "," : "", (int)l, u, i);
        if (i == '"' || i == '\\') el = snprintf(e, sizeof e, ",\"\\%c\":%d", i, i);
        hy_tokbuf_put(&b, e, (size_t)el);
    }
    s = ",\"ab\":256,\"abc\":257,\"Ġa\":258,\"bc\":259,\"ĠĠ\":260,\"cc\":261},\"merges\":";
    hy_tokbuf_put(&b, s, strlen(s));
    s = pair_merges ? "[[\"a\",\"b\"],[\"ab\",\"c\"],[\"Ġ\",\"a\"],[\"b\",\"c\"],[\"Ġ\",\"Ġ\"],[\"c\",\"c\"]]}}"
                    : "[\"a b\",\"ab c\",\"Ġ a\",\"b c\",\"Ġ Ġ\",\"c c\"]}}";
    hy_tokbuf_put(&b, s, strlen(s) + 1);
    return b.p;
}

static const char *k_qwen_pretok =
    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
    "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"
    "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Isolated\",\"invert\":false},"
    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]}";

static hy_tokenizer *load_inline(const char *json, hy_err *err, int *rc) {
    hy_tokenizer *t = NULL;
    *rc = hy_tokenizer_load_json(&t, json, strlen(json), NULL, 0, "inline", err);
    return t;
}

static void test_merge_spellings(void **st) {
    (void)st;
    for (int pair = 0; pair < 2; pair++) {
        char *j = inline_json(pair, "{\"type\":\"NFC\"}", k_qwen_pretok, NULL);
        hy_err err = {0};
        int rc;
        hy_tokenizer *t = load_inline(j, &err, &rc);
        if (rc) fprintf(stderr, "%s\n", err.msg);
        assert_int_equal(rc, 0);
        const int32_t w1[] = {257};
        expect_ids(t, "abc", true, w1, 1);
        /* " abc": Ġ a b c: rank0 (a,b) -> Ġ ab c; rank1 (ab,c) -> Ġ abc */
        const int32_t w2[] = {hy_tokenizer_token_id(t, "Ġ"), 257};
        expect_ids(t, " abc", true, w2, 2);
        /* "bcc": (b,c) rank3 vs (c,c) rank5 -> bc c */
        const int32_t w3[] = {259, 'c'};
        expect_ids(t, "bcc", true, w3, 2);
        /* special and non-special added tokens */
        const int32_t w4[] = {'x', 262, 'y', 263};
        expect_ids(t, "x<|end|>y<th>", true, w4, 4);
        int32_t *ids = NULL;
        size_t n = 0;
        assert_int_equal(hy_tokenizer_encode(t, "x<|end|>y<th>", 13, false, &ids, &n, &err), 0);
        assert_true(n > 4 && ids[n - 1] == 263);
        for (size_t i = 0; i < n; i++) assert_true(ids[i] != 262);
        free(ids);
        hy_tokenizer_free(t);
        free(j);
    }
}

static void test_added_token_flags(void **st) {
    (void)st;
    const char *extra =
        ",{\"id\":264,\"content\":\"<L>\",\"single_word\":false,\"lstrip\":true,\"rstrip\":false,\"normalized\":false,\"special\":true}"
        ",{\"id\":265,\"content\":\"<R>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":true,\"normalized\":false,\"special\":true}"
        ",{\"id\":266,\"content\":\"cat\",\"single_word\":true,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false}"
        ",{\"id\":267,\"content\":\"<th>x\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false}"
        ",{\"id\":268,\"content\":\"é!\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":true,\"special\":false}";
    char *j = inline_json(true, "{\"type\":\"NFC\"}", k_qwen_pretok, extra);
    hy_err err = {0};
    int rc;
    hy_tokenizer *t = load_inline(j, &err, &rc);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    const int32_t sp = hy_tokenizer_token_id(t, "Ġ");
    const int32_t w1[] = {'a', 264};        /* lstrip eats the spaces before <L> */
    expect_ids(t, "a  <L>", true, w1, 2);
    const int32_t w2[] = {265, 'b'};        /* rstrip eats the spaces after <R> */
    expect_ids(t, "<R>  b", true, w2, 2);
    const int32_t w3[] = {266, sp, 'x'};    /* single word: "cat" alone matches ... */
    expect_ids(t, "cat x", true, w3, 3);
    const int32_t w4[] = {'c', 'a', 't', 's'}; /* ... not inside "cats" */
    expect_ids(t, "cats", true, w4, 4);
    const int32_t w5[] = {267, 'y'};        /* longest match wins over <th> */
    expect_ids(t, "<th>xy", true, w5, 2);
    const int32_t w6[] = {268};             /* normalized token matches after NFC of e + U+0301 */
    expect_ids(t, "e\xcc\x81!", true, w6, 1);
    hy_tokenizer_free(t);
    free(j);
}

static void expect_load_error(const char *json, int code, const char *needle) {
    hy_err err = {0};
    int rc;
    hy_tokenizer *t = load_inline(json, &err, &rc);
    if (rc != code || !strstr(err.msg, needle)) fprintf(stderr, "rc=%d msg=%s (wanted %s)\n", rc, err.msg, needle);
    assert_int_equal(rc, code);
    assert_null(t);
    assert_non_null(strstr(err.msg, needle));
}

static char *replace1(const char *s, const char *a, const char *b) {
    const char *p = strstr(s, a);
    assert_non_null(p);
    size_t n = strlen(s) - strlen(a) + strlen(b) + 1;
    char *r = malloc(n);
    snprintf(r, n, "%.*s%s%s", (int)(p - s), s, b, p + strlen(a));
    return r;
}

static void test_load_errors(void **st) {
    (void)st;
    char *j = inline_json(true, "{\"type\":\"NFC\"}", k_qwen_pretok, NULL);
    char *x;
    x = replace1(j, "{\"type\":\"NFC\"}", "{\"type\":\"NFKC\"}");
    expect_load_error(x, HY_E_UNSUPPORTED, "normalizer.type");
    free(x);
    x = replace1(j, "\"Isolated\"", "\"Removed\"");
    expect_load_error(x, HY_E_UNSUPPORTED, "pre_tokenizer.pretokenizers[0].behavior");
    free(x);
    x = replace1(j, "\"byte_fallback\":false", "\"byte_fallback\":true");
    expect_load_error(x, HY_E_UNSUPPORTED, "model.byte_fallback");
    free(x);
    x = replace1(j, "\"decoder\":{\"type\":\"ByteLevel\"", "\"decoder\":{\"type\":\"Metaspace\"");
    expect_load_error(x, HY_E_UNSUPPORTED, "decoder.type");
    free(x);
    x = replace1(j, "\"post_processor\":null", "\"post_processor\":{\"type\":\"TemplateProcessing\"}");
    expect_load_error(x, HY_E_UNSUPPORTED, "post_processor.type");
    free(x);
    x = replace1(j, "\"truncation\":null", "\"truncation\":{\"max_length\":5}");
    expect_load_error(x, HY_E_UNSUPPORTED, "truncation");
    free(x);
    x = replace1(j, "[\"c\",\"c\"]", "[\"c\",\"q\"]"); /* merged "cq" not in vocab */
    expect_load_error(x, HY_E_INVALID, "model.merges[5]");
    free(x);
    x = replace1(j, "[\"c\",\"c\"]", "[\"c\",\"c\",\"c\"]");
    expect_load_error(x, HY_E_INVALID, "model.merges[5]");
    free(x);
    x = replace1(j, "\"type\":\"BPE\"", "\"type\":\"WordPiece\"");
    expect_load_error(x, HY_E_UNSUPPORTED, "model.type");
    free(x);
    x = replace1(j, "(?i:", "(?i:[");
    expect_load_error(x, HY_E_INVALID, "regex");
    free(x);
    x = replace1(j, "\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]}",
                 "\"add_prefix_space\":true,\"trim_offsets\":false,\"use_regex\":false}]}");
    expect_load_error(x, HY_E_UNSUPPORTED, "add_prefix_space");
    free(x);
    expect_load_error("{\"model\":", HY_E_INVALID, "line 1");
    expect_load_error("[1,2]", HY_E_INVALID, "not a JSON object");
    free(j);
    hy_err err = {0};
    hy_tokenizer *t = NULL;
    assert_int_equal(hy_tokenizer_load(&t, "/nonexistent/dir", &err), HY_E_NOT_FOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/dir/tokenizer.json"));
}

/* ------------------------------------------------------------------ utf8 */

static void test_utf8_lossy(void **st) {
    (void)st;
    struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"a\x80" "b", 3, "a\xEF\xBF\xBD" "b"},
        {"\xE0\x80\xAF", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* E0 80: not a valid prefix */
        {"\xE4\xBD", 2, "\xEF\xBF\xBD"},                             /* truncated: one U+FFFD */
        {"\xF0\x9F\x98" "x", 4, "\xEF\xBF\xBD" "x"},
        {"\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* surrogate */
        {"\xF4\x90\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xC3\xC3\xA9", 3, "\xEF\xBF\xBD\xC3\xA9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hy_tokbuf out = {0};
        assert_int_equal(hy_utf8_lossy((const uint8_t *)cases[i].in, cases[i].n, true, &out), cases[i].n);
        assert_int_equal(out.n, strlen(cases[i].want));
        assert_memory_equal(out.p, cases[i].want, out.n);
        free(out.p);
    }
    hy_tokbuf out = {0};
    assert_int_equal(hy_utf8_lossy((const uint8_t *)"ab\xF0\x9F\x98", 5, false, &out), 2); /* held back */
    assert_int_equal(out.n, 2);
    free(out.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_lossy),
        cmocka_unit_test(test_merge_spellings),
        cmocka_unit_test(test_added_token_flags),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_tiny_golden),
        cmocka_unit_test(test_qwen_api),
        cmocka_unit_test(test_encode_marked),
        cmocka_unit_test(test_qwen_golden),
        cmocka_unit_test(test_qwen2_regex_golden),
        cmocka_unit_test(test_detok_stream),
        cmocka_unit_test(test_concurrent_encode),
    };
    return cmocka_run_group_tests(tests, setup_qwen, teardown_qwen);
}
