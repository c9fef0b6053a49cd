/*
 * Internals shared by the tokenizer's files (not for other modules; use tokenizer.h).
 * Layout: tokenizer.c (load, added tokens, encode/decode orchestration), bpe.c (merge table,
 * BPE, sharded cache), pretok.c (NFC + Split regex), bytelevel.c (GPT-2 byte<->unicode map),
 * utf8.c (validation, lossy decoding), strmap.c (string -> id hash), detok.c (streaming).
 */
#ifndef HY_TOKENIZER_TOK_INTERNAL_H
#define HY_TOKENIZER_TOK_INTERNAL_H

#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable buffers (malloc'd; zero-initialise, free with free(b.p)) ---- */
typedef struct hy_tokbuf {
    char *p;
    size_t n, cap;
} hy_tokbuf;
int hy_tokbuf_reserve(hy_tokbuf *b, size_t extra); /* 0 or HY_E_NOMEM */
int hy_tokbuf_put(hy_tokbuf *b, const void *s, size_t n);

typedef struct hy_idvec {
    int32_t *p;
    size_t n, cap;
} hy_idvec;
int hy_idvec_reserve(hy_idvec *v, size_t extra);
int hy_idvec_push(hy_idvec *v, int32_t id);

/* ---- UTF-8 (utf8.c) ---- */
bool hy_utf8_is_valid(const uint8_t *s, size_t n);
/* Appends the lossy decoding of s[0..n) to out: each maximal subpart of an ill-formed sequence
 * becomes U+FFFD (Unicode "best practice", as Python errors="replace" and Rust
 * from_utf8_lossy). When !final, a trailing sequence that is a valid but incomplete prefix is
 * left unconsumed. Returns bytes consumed, or (size_t)-1 on allocation failure. */
size_t hy_utf8_lossy(const uint8_t *s, size_t n, bool final, hy_tokbuf *out);
/* Decodes one code point from valid UTF-8 at s (n >= 1 bytes available); sets *len. */
uint32_t hy_utf8_decode(const uint8_t *s, size_t n, size_t *len);
size_t hy_utf8_encode(uint32_t cp, char out[4]);

/* ---- GPT-2 byte-level alphabet (bytelevel.c) ---- */
uint32_t hy_bytelevel_byte_to_cp(uint8_t b);
int hy_bytelevel_cp_to_byte(uint32_t cp); /* -1 when cp is not in the alphabet */
/* ByteLevel decoder rule for one token string (valid UTF-8): if every code point is in the
 * alphabet, the mapped bytes; otherwise the string's own bytes (as HF does). */
int hy_bytelevel_decode_piece(const char *s, size_t n, hy_tokbuf *out);
/* Maps raw bytes to their alphabet spelling (UTF-8) */
int hy_bytelevel_encode_bytes(const uint8_t *s, size_t n, hy_tokbuf *out);

/* ---- string -> int32 hash map over caller-owned key bytes (strmap.c) ---- */
typedef struct hy_strmap {
    uint64_t *slots; /* (key index + 1) << 32 | hash32, 0 = empty */
    size_t cap, count;
    const char **keys;
    uint32_t *klen;
    int32_t *vals;
    size_t kcap;
} hy_strmap;
int hy_strmap_init(hy_strmap *m, size_t expected);
void hy_strmap_release(hy_strmap *m);
/* Key bytes must outlive the map. Returns 0, 1 if the key existed (value left unchanged),
 * or HY_E_NOMEM. */
int hy_strmap_put(hy_strmap *m, const char *key, size_t len, int32_t val);
int32_t hy_strmap_get(const hy_strmap *m, const char *key, size_t len); /* -1 if absent */

/* ---- normalizer + pre-tokenizer (pretok.c) ---- */
/* Appends NFC(s) as HF tokenizers computes it (utf8proc + the HF-compatibility exceptions). */
int hy_nfc_append(const char *s, size_t n, hy_tokbuf *out);
typedef struct hy_pretok hy_pretok;
/* pattern is an Oniguruma regex (HF Split {"Regex": ...}) or, when literal, a plain string. */
int hy_pretok_create(hy_pretok **out, const char *pattern, size_t len, bool literal, hy_err *err);
void hy_pretok_free(hy_pretok *p);
typedef int (*hy_pretok_cb)(const char *s, size_t n, void *ctx);
/* Split with behaviour Isolated: every match and every gap between matches is one piece, in
 * order; empty pieces are dropped. Stops at the first non-zero callback result. */
int hy_pretok_split(const hy_pretok *p, const char *s, size_t n, hy_pretok_cb cb, void *ctx, hy_err *err);

/* ---- BPE (bpe.c) ---- */
typedef struct hy_bpe hy_bpe;
int hy_bpe_create(hy_bpe **out, size_t n_merges, const int32_t byte_ids[256]);
void hy_bpe_free(hy_bpe *b);
/* Adds merge (left, right) -> result with the given rank. Returns 1 if the pair was already
 * present (the first one is kept, as HF keeps the lowest rank), 0, or HY_E_NOMEM. */
int hy_bpe_add_merge(hy_bpe *b, int32_t left, int32_t right, int32_t result, uint32_t rank);
/* Appends the BPE ids of raw bytes s[0..n) (one pre-tokenized piece) to out. */
int hy_bpe_encode(hy_bpe *b, const uint8_t *s, size_t n, hy_idvec *out);

#endif
