/*
 * Tokenizer: loading tokenizer.json / tokenizer_config.json, added-token matching, and the
 * encode/decode pipelines (see tokenizer.h for the semantics). Everything a loaded tokenizer
 * holds is immutable except the BPE cache (bpe.c, locked), so it can be shared by threads.
 * Loading validates the whole pipeline description and refuses what we do not implement,
 * naming the JSON path, because a silently different tokenizer is the worst failure mode
 * (e.g. engines that ignored pair-form merges and tokenized byte by byte).
 */
#include "tokenizer/tok_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

enum { TOKF_USED = 1, TOKF_ADDED = 2, TOKF_SPECIAL = 4 };
/* Ids are array indices; real vocabularies stay far below this (Qwen3.6: 248,077). */
#define MAX_ID (1 << 24)

typedef struct {
    int32_t id;
    uint32_t off, len; /* content (normalized with NFC when `normalized` and the model has NFC) */
    bool single_word, lstrip, rstrip, normalized, special;
} added_tok;

/* Literal matcher for one group of added tokens: sorted by first byte, then longest first. */
typedef struct {
    added_tok *toks;
    size_t n;
    uint32_t first[257]; /* toks with first byte c are [first[c], first[c+1]) */
} added_set;

struct hy_tokenizer {
    size_t n_ids;
    hy_tokbuf blob;       /* piece spellings and token bytes */
    uint32_t *piece_off;  /* [n_ids] */
    uint32_t *piece_len;  /* [n_ids] */
    uint32_t *bytes_off;  /* [n_ids] */
    uint32_t *bytes_len;  /* [n_ids] */
    uint8_t *flags;       /* [n_ids] TOKF_* */
    hy_strmap piece_map;  /* spelling -> id (vocab and added) */
    hy_strmap bytes_map;  /* raw bytes -> model vocab id (ignore_merges only) */
    hy_bpe *bpe;
    hy_pretok *pretok; /* NULL: no Split, one piece per segment */
    bool nfc, ignore_merges;
    added_set raw_set, norm_set; /* matched before / after normalization */
    int32_t eos_id, pad_id, bos_id;
    int64_t model_max_length;
};

/* ------------------------------------------------------------------ JSON helpers */

static int bad(hy_err *err, int code, const char *what, const char *path, const char *msg) {
    return hy_err_set(err, code, "%s: %s: %s", what, path, msg);
}

/* Optional bool field: absent/null -> dflt. */
static int get_bool(json_t *o, const char *k, bool dflt, bool *v, const char *what, const char *path, hy_err *err) {
    json_t *x = json_object_get(o, k);
    if (!x || json_is_null(x)) {
        *v = dflt;
        return 0;
    }
    if (!json_is_boolean(x)) {
        char p[256];
        snprintf(p, sizeof p, "%s.%s", path, k);
        return bad(err, HY_E_INVALID, what, p, "expected true or false");
    }
    *v = json_is_true(x);
    return 0;
}

static const char *type_of(json_t *o) {
    json_t *t = json_object_get(o, "type");
    return json_is_string(t) ? json_string_value(t) : NULL;
}

/* Field must be absent, null, or (when allow_empty_str) "". */
static int must_be_empty(json_t *o, const char *k, bool allow_empty_str, const char *what, const char *path,
                         hy_err *err) {
    json_t *x = json_object_get(o, k);
    if (!x || json_is_null(x)) return 0;
    if (allow_empty_str && json_is_string(x) && json_string_length(x) == 0) return 0;
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, k);
    return bad(err, HY_E_UNSUPPORTED, what, p, allow_empty_str ? "unsupported (only null or \"\")" : "unsupported (only null)");
}

/* ------------------------------------------------------------------ load */

static int put_blob(hy_tokenizer *t, const void *s, size_t n, uint32_t *off) {
    if (t->blob.n + n > UINT32_MAX) return HY_E_NOMEM;
    *off = (uint32_t)t->blob.n;
    return hy_tokbuf_put(&t->blob, s, n);
}

static int ensure_ids(hy_tokenizer *t, size_t n_ids) {
    if (n_ids <= t->n_ids) return 0;
    size_t old = t->n_ids;
#define GROW(f)                                                             \
    do {                                                                    \
        void *p_ = realloc(t->f, n_ids * sizeof *t->f);                     \
        if (!p_) return HY_E_NOMEM;                                         \
        t->f = p_;                                                          \
        memset(t->f + old, 0, (n_ids - old) * sizeof *t->f);                \
    } while (0)
    GROW(piece_off);
    GROW(piece_len);
    GROW(bytes_off);
    GROW(bytes_len);
    GROW(flags);
#undef GROW
    t->n_ids = n_ids;
    return 0;
}

static int set_token(hy_tokenizer *t, int32_t id, const char *s, size_t n, uint8_t flags) {
    int rc = ensure_ids(t, (size_t)id + 1);
    if (rc) return rc;
    uint32_t off;
    if ((rc = put_blob(t, s, n, &off))) return rc;
    t->piece_off[id] = off;
    t->piece_len[id] = (uint32_t)n;
    if ((rc = hy_tokbuf_put(&t->blob, "", 1))) return rc; /* pieces are NUL-terminated */
    size_t b0 = t->blob.n;
    if ((rc = hy_bytelevel_decode_piece(s, n, &t->blob))) return rc;
    if (t->blob.n > UINT32_MAX) return HY_E_NOMEM;
    t->bytes_off[id] = (uint32_t)b0;
    t->bytes_len[id] = (uint32_t)(t->blob.n - b0);
    t->flags[id] = flags;
    return 0;
}

static int load_model(hy_tokenizer *t, json_t *model, const char *what, hy_err *err) {
    if (!json_is_object(model)) return bad(err, HY_E_INVALID, what, "model", "missing or not an object");
    const char *type = type_of(model);
    if (type && strcmp(type, "BPE")) {
        char m[160];
        snprintf(m, sizeof m, "unsupported model type \"%.100s\" (only BPE)", type);
        return bad(err, HY_E_UNSUPPORTED, what, "model.type", m);
    }
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0.0))
        return bad(err, HY_E_UNSUPPORTED, what, "model.dropout", "BPE dropout is unsupported (only null)");
    int rc;
    if ((rc = must_be_empty(model, "unk_token", false, what, "model", err))) return rc;
    if ((rc = must_be_empty(model, "continuing_subword_prefix", true, what, "model", err))) return rc;
    if ((rc = must_be_empty(model, "end_of_word_suffix", true, what, "model", err))) return rc;
    bool byte_fallback;
    if ((rc = get_bool(model, "byte_fallback", false, &byte_fallback, what, "model", err))) return rc;
    if (byte_fallback) return bad(err, HY_E_UNSUPPORTED, what, "model.byte_fallback", "unsupported (only false)");
    if ((rc = get_bool(model, "ignore_merges", false, &t->ignore_merges, what, "model", err))) return rc;

    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab)) return bad(err, HY_E_INVALID, what, "model.vocab", "missing or not an object");
    /* pass 1: size the id space */
    const char *key;
    json_t *val;
    int64_t max_id = -1;
    json_object_foreach(vocab, key, val) {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) >= MAX_ID) {
            char p[200];
            snprintf(p, sizeof p, "model.vocab[\"%.120s\"]", key);
            return bad(err, HY_E_INVALID, what, p, "id must be an integer in [0, 2^24)");
        }
        if (json_integer_value(val) > max_id) max_id = json_integer_value(val);
    }
    if (max_id < 0) return bad(err, HY_E_INVALID, what, "model.vocab", "empty vocabulary");
    if ((rc = ensure_ids(t, (size_t)max_id + 1))) return hy_err_set(err, rc, "out of memory");
    json_object_foreach(vocab, key, val) {
        int32_t id = (int32_t)json_integer_value(val);
        if (t->flags[id] & TOKF_USED) {
            char p[200];
            snprintf(p, sizeof p, "model.vocab[\"%.120s\"]", key);
            return bad(err, HY_E_INVALID, what, p, "id used twice");
        }
        /* jansson keys are NUL-terminated; keys with embedded NUL are not valid vocab spellings */
        if ((rc = set_token(t, id, key, strlen(key), TOKF_USED))) return hy_err_set(err, rc, "out of memory");
    }
    return 0;
}

/* Builds maps once the blob no longer moves. */
static int build_maps(hy_tokenizer *t) {
    size_t n_used = 0;
    for (size_t i = 0; i < t->n_ids; i++) n_used += (t->flags[i] & TOKF_USED) != 0;
    if (hy_strmap_init(&t->piece_map, n_used)) return HY_E_NOMEM;
    if (t->ignore_merges && hy_strmap_init(&t->bytes_map, n_used)) return HY_E_NOMEM;
    /* added tokens first: for a spelling present in both, HF's added vocabulary wins */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < t->n_ids; i++) {
            uint8_t f = t->flags[i];
            if (!(f & TOKF_USED) || ((f & TOKF_ADDED) != 0) != (pass == 0)) continue;
            int rc = hy_strmap_put(&t->piece_map, t->blob.p + t->piece_off[i], t->piece_len[i], (int32_t)i);
            if (rc < 0) return rc;
            if (t->ignore_merges && !(f & TOKF_ADDED)) {
                rc = hy_strmap_put(&t->bytes_map, t->blob.p + t->bytes_off[i], t->bytes_len[i], (int32_t)i);
                if (rc < 0) return rc;
            }
        }
    return 0;
}

static int32_t lookup_piece(const hy_tokenizer *t, const char *s, size_t n) {
    return hy_strmap_get(&t->piece_map, s, n);
}

static int load_merges(hy_tokenizer *t, json_t *model, const char *what, hy_err *err) {
    json_t *merges = json_object_get(model, "merges");
    if (!merges || json_is_null(merges)) merges = NULL;
    else if (!json_is_array(merges)) return bad(err, HY_E_INVALID, what, "model.merges", "not an array");
    size_t nm = merges ? json_array_size(merges) : 0;
    int32_t byte_ids[256];
    for (int b = 0; b < 256; b++) {
        char u[4];
        size_t l = hy_utf8_encode(hy_bytelevel_byte_to_cp((uint8_t)b), u);
        int32_t id = lookup_piece(t, u, l);
        byte_ids[b] = (id >= 0 && !(t->flags[id] & TOKF_ADDED)) ? id : -1;
    }
    if (hy_bpe_create(&t->bpe, nm, byte_ids)) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_tokbuf cat = {0};
    int rc = 0;
    for (size_t i = 0; i < nm && !rc; i++) {
        json_t *m = json_array_get(merges, i);
        const char *a, *b;
        size_t la, lb;
        if (json_is_string(m)) { /* legacy "a b" */
            a = json_string_value(m);
            const char *sp = memchr(a, ' ', json_string_length(m));
            if (!sp || memchr(sp + 1, ' ', json_string_length(m) - (size_t)(sp + 1 - a))) {
                char p[64];
                snprintf(p, sizeof p, "model.merges[%zu]", i);
                rc = bad(err, HY_E_INVALID, what, p, "a string merge must be two tokens separated by one space");
                break;
            }
            la = (size_t)(sp - a);
            b = sp + 1;
            lb = json_string_length(m) - la - 1;
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) { /* ["a", "b"] */
            a = json_string_value(json_array_get(m, 0));
            la = json_string_length(json_array_get(m, 0));
            b = json_string_value(json_array_get(m, 1));
            lb = json_string_length(json_array_get(m, 1));
        } else {
            char p[64];
            snprintf(p, sizeof p, "model.merges[%zu]", i);
            rc = bad(err, HY_E_INVALID, what, p, "expected \"a b\" or [\"a\", \"b\"]");
            break;
        }
        int32_t ia = lookup_piece(t, a, la), ib = lookup_piece(t, b, lb);
        cat.n = 0;
        if (hy_tokbuf_put(&cat, a, la) || hy_tokbuf_put(&cat, b, lb)) {
            rc = hy_err_set(err, HY_E_NOMEM, "out of memory");
            break;
        }
        int32_t ir = lookup_piece(t, cat.p, cat.n);
        if (ia < 0 || ib < 0 || ir < 0) {
            char p[64];
            snprintf(p, sizeof p, "model.merges[%zu]", i);
            rc = hy_err_set(err, HY_E_INVALID, "%s: %s: merge \"%.*s\" + \"%.*s\": %s is not in model.vocab", what, p,
                            (int)(la > 60 ? 60 : la), a, (int)(lb > 60 ? 60 : lb), b,
                            ia < 0 ? "the first token" : ib < 0 ? "the second token" : "the merged token");
            break;
        }
        int r = hy_bpe_add_merge(t->bpe, ia, ib, ir, (uint32_t)i);
        if (r < 0) rc = hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    free(cat.p);
    return rc;
}

static int load_added(hy_tokenizer *t, json_t *root, const char *what, hy_err *err, added_tok **out, size_t *nout) {
    json_t *arr = json_object_get(root, "added_tokens");
    *out = NULL;
    *nout = 0;
    if (!arr || json_is_null(arr)) return 0;
    if (!json_is_array(arr)) return bad(err, HY_E_INVALID, what, "added_tokens", "not an array");
    size_t n = json_array_size(arr);
    added_tok *v = calloc(n ? n : 1, sizeof *v);
    if (!v) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *o = json_array_get(arr, i);
        char path[64];
        snprintf(path, sizeof path, "added_tokens[%zu]", i);
        json_t *jid = json_object_get(o, "id"), *jc = json_object_get(o, "content");
        if (!json_is_object(o) || !json_is_integer(jid) || json_integer_value(jid) < 0 ||
            json_integer_value(jid) >= MAX_ID || !json_is_string(jc) || json_string_length(jc) == 0) {
            rc = bad(err, HY_E_INVALID, what, path, "expected {\"id\": integer in [0, 2^24), \"content\": non-empty string, ...}");
            break;
        }
        added_tok *a = &v[i];
        a->id = (int32_t)json_integer_value(jid);
        if ((rc = get_bool(o, "single_word", false, &a->single_word, what, path, err)) ||
            (rc = get_bool(o, "lstrip", false, &a->lstrip, what, path, err)) ||
            (rc = get_bool(o, "rstrip", false, &a->rstrip, what, path, err)) ||
            (rc = get_bool(o, "normalized", false, &a->normalized, what, path, err)) ||
            (rc = get_bool(o, "special", false, &a->special, what, path, err)))
            break;
        const char *c = json_string_value(jc);
        size_t cl = json_string_length(jc);
        uint8_t f = TOKF_USED | TOKF_ADDED | (a->special ? TOKF_SPECIAL : 0);
        if ((rc = set_token(t, a->id, c, cl, f))) {
            rc = hy_err_set(err, rc, "out of memory");
            break;
        }
        /* match text: the normalized form for normalized tokens (HF normalizes them too) */
        if (a->normalized && t->nfc) {
            hy_tokbuf nb = {0};
            rc = hy_nfc_append(c, cl, &nb);
            if (!rc) rc = put_blob(t, nb.p, nb.n, &a->off);
            a->len = (uint32_t)nb.n;
            free(nb.p);
        } else {
            rc = put_blob(t, c, cl, &a->off);
            a->len = (uint32_t)cl;
        }
        if (rc) rc = hy_err_set(err, rc, "out of memory");
    }
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *nout = n;
    return 0;
}

static int build_set(const hy_tokenizer *t, const added_tok *all, size_t n, bool normalized, added_set *set) {
    memset(set, 0, sizeof *set);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += all[i].normalized == normalized;
    set->toks = calloc(k ? k : 1, sizeof *set->toks);
    if (!set->toks) return HY_E_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (all[i].normalized == normalized) set->toks[set->n++] = all[i];
    /* insertion sort by (first byte, length desc); n is small (tens) */
    for (size_t i = 1; i < set->n; i++) {
        added_tok x = set->toks[i];
        uint8_t fx = (uint8_t)t->blob.p[x.off];
        size_t j = i;
        while (j > 0) {
            added_tok *y = &set->toks[j - 1];
            uint8_t fy = (uint8_t)t->blob.p[y->off];
            if (fy < fx || (fy == fx && y->len >= x.len)) break;
            set->toks[j] = *y;
            j--;
        }
        set->toks[j] = x;
    }
    size_t j = 0;
    for (int c = 0; c <= 256; c++) {
        while (j < set->n && (uint8_t)t->blob.p[set->toks[j].off] < c) j++;
        set->first[c] = (uint32_t)j;
    }
    set->first[256] = (uint32_t)set->n;
    return 0;
}

static int load_normalizer(hy_tokenizer *t, json_t *root, const char *what, hy_err *err) {
    json_t *n = json_object_get(root, "normalizer");
    t->nfc = false;
    if (!n || json_is_null(n)) return 0;
    const char *type = type_of(n);
    if (type && !strcmp(type, "NFC")) {
        t->nfc = true;
        return 0;
    }
    if (type && !strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(n, "normalizers");
        if (!json_is_array(arr)) return bad(err, HY_E_INVALID, what, "normalizer.normalizers", "not an array");
        for (size_t i = 0; i < json_array_size(arr); i++) {
            const char *ty = type_of(json_array_get(arr, i));
            if (!ty || strcmp(ty, "NFC")) {
                char p[64], m[160];
                snprintf(p, sizeof p, "normalizer.normalizers[%zu].type", i);
                snprintf(m, sizeof m, "unsupported normalizer \"%.100s\" (only NFC)", ty ? ty : "?");
                return bad(err, HY_E_UNSUPPORTED, what, p, m);
            }
            t->nfc = true;
        }
        return 0;
    }
    char m[160];
    snprintf(m, sizeof m, "unsupported normalizer \"%.100s\" (only NFC)", type ? type : "?");
    return bad(err, HY_E_UNSUPPORTED, what, "normalizer.type", m);
}

static int check_bytelevel(json_t *o, const char *what, const char *path, bool want_regex_false, hy_err *err) {
    bool aps = false, use_regex = true;
    int rc;
    if ((rc = get_bool(o, "add_prefix_space", false, &aps, what, path, err))) return rc;
    if ((rc = get_bool(o, "use_regex", true, &use_regex, what, path, err))) return rc;
    char p[128];
    if (aps) {
        snprintf(p, sizeof p, "%s.add_prefix_space", path);
        return bad(err, HY_E_UNSUPPORTED, what, p, "unsupported (only false)");
    }
    if (want_regex_false && use_regex) {
        snprintf(p, sizeof p, "%s.use_regex", path);
        return bad(err, HY_E_UNSUPPORTED, what, p, "unsupported (only false; put the regex in a Split)");
    }
    return 0;
}

static int load_split(hy_tokenizer *t, json_t *s, const char *what, const char *path, hy_err *err) {
    char p[128];
    json_t *beh = json_object_get(s, "behavior");
    if (!json_is_string(beh) || strcmp(json_string_value(beh), "Isolated")) {
        snprintf(p, sizeof p, "%s.behavior", path);
        return bad(err, HY_E_UNSUPPORTED, what, p, "unsupported Split behavior (only \"Isolated\")");
    }
    bool invert;
    int rc;
    if ((rc = get_bool(s, "invert", false, &invert, what, path, err))) return rc;
    if (invert) {
        snprintf(p, sizeof p, "%s.invert", path);
        return bad(err, HY_E_UNSUPPORTED, what, p, "unsupported (only false)");
    }
    json_t *pat = json_object_get(s, "pattern");
    json_t *re = json_object_get(pat, "Regex"), *lit = json_object_get(pat, "String");
    snprintf(p, sizeof p, "%s.pattern", path);
    if (json_is_string(re)) rc = hy_pretok_create(&t->pretok, json_string_value(re), json_string_length(re), false, err);
    else if (json_is_string(lit))
        rc = hy_pretok_create(&t->pretok, json_string_value(lit), json_string_length(lit), true, err);
    else return bad(err, HY_E_INVALID, what, p, "expected {\"Regex\": ...} or {\"String\": ...}");
    if (rc) hy_err_wrap(err, "%s: %s", what, p);
    return rc;
}

static int load_pre_tokenizer(hy_tokenizer *t, json_t *root, const char *what, hy_err *err) {
    json_t *pt = json_object_get(root, "pre_tokenizer");
    if (!pt || json_is_null(pt))
        return bad(err, HY_E_UNSUPPORTED, what, "pre_tokenizer", "null pre-tokenizer unsupported (byte-level BPE needs ByteLevel)");
    const char *type = type_of(pt);
    if (type && !strcmp(type, "ByteLevel")) return check_bytelevel(pt, what, "pre_tokenizer", true, err);
    if (!type || strcmp(type, "Sequence")) {
        char m[256];
        snprintf(m, sizeof m, "unsupported pre-tokenizer \"%.100s\" (only Sequence[Split, ByteLevel] or ByteLevel)", type ? type : "?");
        return bad(err, HY_E_UNSUPPORTED, what, "pre_tokenizer.type", m);
    }
    json_t *arr = json_object_get(pt, "pretokenizers");
    if (!json_is_array(arr)) return bad(err, HY_E_INVALID, what, "pre_tokenizer.pretokenizers", "not an array");
    bool seen_bl = false, seen_split = false;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        const char *ty = type_of(e);
        char p[96];
        snprintf(p, sizeof p, "pre_tokenizer.pretokenizers[%zu]", i);
        int rc;
        if (ty && !strcmp(ty, "Split") && !seen_split && !seen_bl) {
            if ((rc = load_split(t, e, what, p, err))) return rc;
            seen_split = true;
        } else if (ty && !strcmp(ty, "ByteLevel") && !seen_bl) {
            if ((rc = check_bytelevel(e, what, p, true, err))) return rc;
            seen_bl = true;
        } else {
            char m[200];
            snprintf(m, sizeof m, "unsupported pre-tokenizer \"%.100s\" here (only one Split followed by one ByteLevel)",
                     ty ? ty : "?");
            strncat(p, ".type", sizeof p - strlen(p) - 1);
            return bad(err, HY_E_UNSUPPORTED, what, p, m);
        }
    }
    if (!seen_bl) return bad(err, HY_E_UNSUPPORTED, what, "pre_tokenizer.pretokenizers", "no ByteLevel step (unsupported)");
    return 0;
}

static int load_rest(json_t *root, const char *what, hy_err *err) {
    int rc;
    if ((rc = must_be_empty(root, "truncation", false, what, "tokenizer.json", err))) return rc;
    if ((rc = must_be_empty(root, "padding", false, what, "tokenizer.json", err))) return rc;
    json_t *dec = json_object_get(root, "decoder");
    const char *dt = type_of(dec);
    if (!dt || strcmp(dt, "ByteLevel")) {
        char m[160];
        snprintf(m, sizeof m, "unsupported decoder \"%.100s\" (only ByteLevel)", dt ? dt : "null");
        return bad(err, HY_E_UNSUPPORTED, what, "decoder.type", m);
    }
    json_t *pp = json_object_get(root, "post_processor");
    if (pp && !json_is_null(pp)) {
        const char *pt = type_of(pp);
        if (!pt || strcmp(pt, "ByteLevel")) { /* ByteLevel only adjusts offsets */
            char m[200];
            snprintf(m, sizeof m, "unsupported post-processor \"%.100s\" (only null or ByteLevel; we never add tokens)",
                     pt ? pt : "?");
            return bad(err, HY_E_UNSUPPORTED, what, "post_processor.type", m);
        }
    }
    return 0;
}

static int32_t config_token(const hy_tokenizer *t, json_t *cfg, const char *key) {
    json_t *x = json_object_get(cfg, key);
    if (json_is_object(x)) x = json_object_get(x, "content");
    if (!json_is_string(x)) return -1;
    return lookup_piece(t, json_string_value(x), json_string_length(x));
}

static int load_config(hy_tokenizer *t, const char *config, size_t len, const char *what, hy_err *err) {
    t->eos_id = t->pad_id = t->bos_id = -1;
    if (!config) return 0;
    json_error_t je;
    json_t *cfg = json_loadb(config, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!cfg) return hy_err_set(err, HY_E_INVALID, "%s tokenizer_config.json: line %d column %d: %s", what, je.line, je.column, je.text);
    int rc = 0;
    if (!json_is_object(cfg)) {
        rc = hy_err_set(err, HY_E_INVALID, "%s tokenizer_config.json: not a JSON object", what);
        goto done;
    }
    t->eos_id = config_token(t, cfg, "eos_token");
    t->pad_id = config_token(t, cfg, "pad_token");
    t->bos_id = config_token(t, cfg, "bos_token");
    json_t *mml = json_object_get(cfg, "model_max_length");
    if (json_is_integer(mml)) t->model_max_length = json_integer_value(mml);
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "add_eos_token" : "add_bos_token";
        if (json_is_true(json_object_get(cfg, key)) && config_token(t, cfg, k ? "eos_token" : "bos_token") >= 0) {
            rc = hy_err_set(err, HY_E_UNSUPPORTED, "%s tokenizer_config.json: %s: true is unsupported (hyla never adds tokens)",
                            what, key);
            goto done;
        }
    }
done:
    json_decref(cfg);
    return rc;
}

int hy_tokenizer_load_json(hy_tokenizer **out, const char *json, size_t json_len, const char *config,
                           size_t config_len, const char *what, hy_err *err) {
    *out = NULL;
    if (!what) what = "tokenizer.json";
    json_error_t je;
    json_t *root = json_loadb(json, json_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!root) return hy_err_set(err, HY_E_INVALID, "%s: line %d column %d: %s", what, je.line, je.column, je.text);
    hy_tokenizer *t = calloc(1, sizeof *t);
    added_tok *added = NULL;
    size_t n_added = 0;
    int rc = 0;
    if (!t) {
        rc = hy_err_set(err, HY_E_NOMEM, "out of memory");
        goto done;
    }
    if (!json_is_object(root)) {
        rc = hy_err_set(err, HY_E_INVALID, "%s: not a JSON object", what);
        goto done;
    }
    json_t *model = json_object_get(root, "model");
    if ((rc = load_rest(root, what, err)) || (rc = load_normalizer(t, root, what, err)) ||
        (rc = load_pre_tokenizer(t, root, what, err)) || (rc = load_model(t, model, what, err)) ||
        (rc = load_added(t, root, what, err, &added, &n_added)))
        goto done;
    if ((rc = build_maps(t))) {
        rc = hy_err_set(err, rc, "out of memory");
        goto done;
    }
    if ((rc = load_merges(t, model, what, err))) goto done;
    if ((rc = build_set(t, added, n_added, false, &t->raw_set)) || (rc = build_set(t, added, n_added, true, &t->norm_set))) {
        rc = hy_err_set(err, rc, "out of memory");
        goto done;
    }
    if ((rc = load_config(t, config, config_len, what, err))) goto done;
done:
    free(added);
    json_decref(root);
    if (rc) {
        hy_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

static int read_file(const char *path, char **buf, size_t *len, hy_err *err) {
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return hy_err_set(err, errno == ENOENT ? HY_E_NOT_FOUND : HY_E_IO, "%s: %s", path, strerror(errno));
    int rc = 0;
    if (fseek(f, 0, SEEK_END) != 0) rc = HY_E_IO;
    long sz = rc ? -1 : ftell(f);
    if (sz < 0) rc = HY_E_IO;
    else rewind(f);
    char *b = rc ? NULL : malloc((size_t)sz + 1);
    if (!rc && !b) rc = HY_E_NOMEM;
    if (!rc && fread(b, 1, (size_t)sz, f) != (size_t)sz) rc = HY_E_IO;
    fclose(f);
    if (rc) {
        free(b);
        return hy_err_set(err, rc, "%s: read failed", path);
    }
    b[sz] = 0;
    *buf = b;
    *len = (size_t)sz;
    return 0;
}

int hy_tokenizer_load(hy_tokenizer **out, const char *dir, hy_err *err) {
    *out = NULL;
    size_t dl = strlen(dir);
    char *p1 = malloc(dl + 32), *p2 = malloc(dl + 32);
    char *json = NULL, *cfg = NULL;
    size_t jl = 0, cl = 0;
    int rc = 0;
    if (!p1 || !p2) {
        rc = hy_err_set(err, HY_E_NOMEM, "out of memory");
        goto done;
    }
    snprintf(p1, dl + 32, "%s/tokenizer.json", dir);
    snprintf(p2, dl + 32, "%s/tokenizer_config.json", dir);
    if ((rc = read_file(p1, &json, &jl, err))) goto done;
    if (read_file(p2, &cfg, &cl, NULL)) cfg = NULL; /* optional */
    rc = hy_tokenizer_load_json(out, json, jl, cfg, cl, p1, err);
done:
    free(p1);
    free(p2);
    free(json);
    free(cfg);
    return rc;
}

void hy_tokenizer_free(hy_tokenizer *t) {
    if (!t) return;
    free(t->blob.p);
    free(t->piece_off);
    free(t->piece_len);
    free(t->bytes_off);
    free(t->bytes_len);
    free(t->flags);
    hy_strmap_release(&t->piece_map);
    hy_strmap_release(&t->bytes_map);
    hy_bpe_free(t->bpe);
    hy_pretok_free(t->pretok);
    free(t->raw_set.toks);
    free(t->norm_set.toks);
    free(t);
}

/* ------------------------------------------------------------------ encode */

static bool is_white_space(uint32_t c) { /* Unicode White_Space (Rust char::is_whitespace) */
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static bool is_word_char(uint32_t c) { /* regex \w: letters, marks, digits, connector punctuation */
    if (c == '_' || c == 0x200C || c == 0x200D) return true;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC: return true;
    default: return false;
    }
}

/* Last code point before s+pos (valid UTF-8); *start gets its offset. */
static uint32_t prev_cp(const char *s, size_t pos, size_t *start) {
    size_t i = pos - 1;
    while (i > 0 && ((uint8_t)s[i] & 0xC0) == 0x80) i--;
    size_t l;
    *start = i;
    return hy_utf8_decode((const uint8_t *)s + i, pos - i, &l);
}

typedef struct {
    const hy_tokenizer *t;
    hy_idvec *ids;
    hy_err *err;
    bool parse_special;
    /* Optional: special tokens only where they lie inside one of these raw-text byte ranges
     * (sorted [start, end) pairs); see hy_tokenizer_encode_marked. */
    const size_t *allow;
    size_t n_allow;
    const char *raw;          /* the raw text the ranges refer to */
    size_t seg_lo, seg_hi;    /* raw range of the segment being normalized (NFC case) */
    bool in_nfc;              /* split_added runs on NFC output: offsets are not raw offsets */
} enc_ctx;

/* True when a special token matched at raw bytes [lo, hi) may become that token. */
static bool special_allowed(const enc_ctx *c, size_t lo, size_t hi) {
    if (!c->parse_special) return false;
    if (!c->allow) return true;
    size_t a = 0, b = c->n_allow; /* first range whose end is > lo */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (c->allow[2 * m + 1] <= lo) a = m + 1;
        else b = m;
    }
    return a < c->n_allow && c->allow[2 * a] <= lo && hi <= c->allow[2 * a + 1];
}

static int on_piece(const char *s, size_t n, void *vctx) {
    enc_ctx *c = vctx;
    if (c->t->ignore_merges) {
        int32_t id = hy_strmap_get(&c->t->bytes_map, s, n);
        if (id >= 0) return hy_idvec_push(c->ids, id) ? hy_err_set(c->err, HY_E_NOMEM, "out of memory") : 0;
    }
    int rc = hy_bpe_encode(c->t->bpe, (const uint8_t *)s, n, c->ids);
    return rc ? hy_err_set(c->err, rc, "out of memory") : 0;
}

static int pretokenize(enc_ctx *c, const char *s, size_t n) {
    if (!n) return 0;
    if (!c->t->pretok) return on_piece(s, n, c);
    return hy_pretok_split(c->t->pretok, s, n, on_piece, c, c->err);
}

typedef int (*segment_fn)(enc_ctx *c, const char *s, size_t n);

/* HF AddedVocabulary::find_matches: leftmost-longest literal matches, non-overlapping; a match
 * that is skipped (special token with parse_special off, or single_word failing) still
 * consumes its text, which then stays ordinary text. */
static int split_added(enc_ctx *c, const added_set *set, const char *s, size_t n, segment_fn text_fn) {
    const hy_tokenizer *t = c->t;
    size_t start_off = 0, i = 0;
    int rc;
    if (set->n == 0) return text_fn(c, s, n);
    while (i < n) {
        uint8_t b = (uint8_t)s[i];
        uint32_t lo = set->first[b], hi = set->first[b + 1];
        const added_tok *hit = NULL;
        for (uint32_t k = lo; k < hi; k++) {
            const added_tok *a = &set->toks[k];
            if (a->len <= n - i && !memcmp(s + i, t->blob.p + a->off, a->len)) {
                hit = a;
                break;
            }
        }
        if (!hit) {
            i++;
            continue;
        }
        size_t ms = i, me = i + hit->len;
        i = me;
        if (hit->special) {
            /* raw offsets of the match: s is the raw text itself, a raw slice of it (no NFC), or
             * NFC output, where only the raw segment as a whole is known */
            size_t r0 = c->in_nfc ? c->seg_lo : (size_t)(s - c->raw) + ms;
            size_t r1 = c->in_nfc ? c->seg_hi : (size_t)(s - c->raw) + me;
            if (!special_allowed(c, r0, r1)) continue;
        }
        if (hit->single_word) {
            size_t st;
            bool left_ok = ms == 0 || !is_word_char(prev_cp(s, ms, &st));
            size_t l;
            bool right_ok = me == n || !is_word_char(hy_utf8_decode((const uint8_t *)s + me, n - me, &l));
            if (!left_ok || !right_ok) continue;
        }
        if (hit->lstrip) {
            size_t ns = ms, st;
            while (ns > start_off && is_white_space(prev_cp(s, ns, &st))) ns = st;
            ms = ns;
        }
        if (hit->rstrip) {
            size_t l;
            while (me < n && is_white_space(hy_utf8_decode((const uint8_t *)s + me, n - me, &l))) me += l;
            i = me;
        }
        if (ms > start_off && (rc = text_fn(c, s + start_off, ms - start_off))) return rc;
        if (hy_idvec_push(c->ids, hit->id)) return hy_err_set(c->err, HY_E_NOMEM, "out of memory");
        start_off = me;
    }
    return start_off < n ? text_fn(c, s + start_off, n - start_off) : 0;
}

static int normalized_segment(enc_ctx *c, const char *s, size_t n) {
    const hy_tokenizer *t = c->t;
    if (!t->nfc) return split_added(c, &t->norm_set, s, n, pretokenize);
    hy_tokbuf nb = {0};
    int rc = hy_nfc_append(s, n, &nb);
    if (rc) rc = hy_err_set(c->err, rc, "out of memory");
    /* normalized added tokens are matched in the normalized text, as HF does */
    c->in_nfc = true;
    c->seg_lo = (size_t)(s - c->raw);
    c->seg_hi = c->seg_lo + n;
    if (!rc) rc = split_added(c, &t->norm_set, nb.p, nb.n, pretokenize);
    c->in_nfc = false;
    free(nb.p);
    return rc;
}

static int encode(const hy_tokenizer *t, const char *text, size_t len, bool parse_special, const size_t *allow,
                  size_t n_allow, int32_t **ids, size_t *n, hy_err *err) {
    *ids = NULL;
    *n = 0;
    hy_idvec v = {0};
    hy_tokbuf clean = {0};
    enc_ctx c = {.t = t, .ids = &v, .err = err, .parse_special = parse_special, .allow = allow, .n_allow = n_allow};
    int rc = 0;
    if (hy_idvec_reserve(&v, len / 3 + 8)) {
        rc = hy_err_set(err, HY_E_NOMEM, "out of memory");
        goto done;
    }
    const char *s = text ? text : "";
    if (!text) len = 0;
    if (!hy_utf8_is_valid((const uint8_t *)s, len)) {
        if (allow) { /* the repair moves bytes: the ranges would no longer mean anything */
            rc = hy_err_set(err, HY_E_INVALID, "text with marked special-token ranges must be valid UTF-8");
            goto done;
        }
        if (hy_utf8_lossy((const uint8_t *)s, len, true, &clean) == (size_t)-1) {
            rc = hy_err_set(err, HY_E_NOMEM, "out of memory");
            goto done;
        }
        s = clean.p;
        len = clean.n;
    }
    c.raw = s;
    rc = split_added(&c, &t->raw_set, s, len, normalized_segment);
done:
    free(clean.p);
    if (rc) {
        free(v.p);
        return rc;
    }
    *ids = v.p ? v.p : malloc(sizeof(int32_t));
    if (!*ids) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    *n = v.n;
    return 0;
}

int hy_tokenizer_encode(const hy_tokenizer *t, const char *text, size_t len, bool parse_special, int32_t **ids,
                        size_t *n, hy_err *err) {
    return encode(t, text, len, parse_special, NULL, 0, ids, n, err);
}

int hy_tokenizer_encode_marked(const hy_tokenizer *t, const char *text, size_t len, const size_t *special_ok,
                               size_t n_special_ok, int32_t **ids, size_t *n, hy_err *err) {
    for (size_t i = 0; i < n_special_ok; i++)
        if (special_ok[2 * i] > special_ok[2 * i + 1] || special_ok[2 * i + 1] > len ||
            (i && special_ok[2 * i] < special_ok[2 * i - 1])) {
            *ids = NULL;
            *n = 0;
            return hy_err_set(err, HY_E_INVALID, "special-token range %zu [%zu, %zu) is not sorted inside the text (%zu bytes)",
                              i, special_ok[2 * i], special_ok[2 * i + 1], len);
        }
    static const size_t none[2] = {0, 0};
    return encode(t, text, len, true, n_special_ok ? special_ok : none, n_special_ok, ids, n, err);
}

/* ------------------------------------------------------------------ decode + lookups */

int hy_tokenizer_decode(const hy_tokenizer *t, const int32_t *ids, size_t n, bool skip_special, char **text,
                        size_t *len, hy_err *err) {
    *text = NULL;
    *len = 0;
    hy_tokbuf raw = {0}, out = {0};
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= t->n_ids || !(t->flags[id] & TOKF_USED)) continue;
        if (skip_special && (t->flags[id] & TOKF_SPECIAL)) continue;
        rc = hy_tokbuf_put(&raw, t->blob.p + t->bytes_off[id], t->bytes_len[id]);
    }
    if (!rc && hy_utf8_lossy((const uint8_t *)raw.p, raw.n, true, &out) == (size_t)-1) rc = HY_E_NOMEM;
    if (!rc) rc = hy_tokbuf_put(&out, "", 1);
    free(raw.p);
    if (rc) {
        free(out.p);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    *text = out.p;
    *len = out.n - 1;
    return 0;
}

int32_t hy_tokenizer_token_id(const hy_tokenizer *t, const char *token_text) {
    return lookup_piece(t, token_text, strlen(token_text));
}

const char *hy_tokenizer_id_to_piece(const hy_tokenizer *t, int32_t id) {
    if (id < 0 || (size_t)id >= t->n_ids || !(t->flags[id] & TOKF_USED)) return NULL;
    return t->blob.p + t->piece_off[id];
}

const uint8_t *hy_tokenizer_token_bytes(const hy_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || (size_t)id >= t->n_ids || !(t->flags[id] & TOKF_USED)) return NULL;
    *len = t->bytes_len[id];
    return (const uint8_t *)t->blob.p + t->bytes_off[id];
}

size_t hy_tokenizer_vocab_size(const hy_tokenizer *t) { return t->n_ids; }
bool hy_tokenizer_is_added(const hy_tokenizer *t, int32_t id) {
    return id >= 0 && (size_t)id < t->n_ids && (t->flags[id] & TOKF_ADDED);
}
bool hy_tokenizer_is_special(const hy_tokenizer *t, int32_t id) {
    return id >= 0 && (size_t)id < t->n_ids && (t->flags[id] & TOKF_SPECIAL);
}
int32_t hy_tokenizer_eos_id(const hy_tokenizer *t) { return t->eos_id; }
int32_t hy_tokenizer_pad_id(const hy_tokenizer *t) { return t->pad_id; }
int32_t hy_tokenizer_bos_id(const hy_tokenizer *t) { return t->bos_id; }
int64_t hy_tokenizer_model_max_length(const hy_tokenizer *t) { return t->model_max_length; }
