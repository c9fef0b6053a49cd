/*
 * Tokenizer: Hugging Face `tokenizer.json` byte-level BPE (Qwen2 / Qwen3.5 / Qwen3.6 family),
 * reproducing HF `tokenizers` ids exactly. Pipeline (what the file describes, checked at load):
 *   added tokens (leftmost-longest literal match, before normalization)
 *   -> normalizer NFC (or none) -> pre-tokenizer Split(regex from the file, Isolated) +
 *   ByteLevel(add_prefix_space=false, use_regex=false) -> BPE by merge rank
 *   decode: ByteLevel decoder, invalid UTF-8 replaced by U+FFFD (maximal subparts).
 * Anything else in a tokenizer.json (other normalizers, pre-tokenizers, decoders, truncation,
 * padding, BPE dropout, byte_fallback...) is rejected at load with the JSON path named.
 *
 * Input text that is not valid UTF-8: HF's Python API only takes str, so bytes reach it
 * decoded with errors="replace"; hy_tokenizer_encode does the same (each maximal ill-formed
 * subpart becomes U+FFFD, as Python and Rust's from_utf8_lossy do) before tokenizing.
 *
 * Special tokens and `parse_special`:
 *   parse_special = true   HF default (split_special_tokens=False): every added token's text
 *                          in the input becomes that token.
 *   parse_special = false  HF split_special_tokens=True / encode_special_tokens: tokens marked
 *                          "special": true (<|im_end|>, <|im_start|>, <|endoftext|>...) are not
 *                          matched and their text is tokenized as ordinary text; added tokens
 *                          with "special": false (<think>, </think>, <tool_call>...) are STILL
 *                          matched, exactly as HF does.
 *
 * Threading: a loaded hy_tokenizer is immutable except for its BPE cache, which is split into
 * shards, each behind its own mutex (chosen over per-thread caches so that HTTP threads need
 * no registration and memory stays bounded). Encode/decode/lookups may run concurrently from
 * any number of threads. A hy_detok belongs to one thread at a time.
 */
#ifndef HY_TOKENIZER_TOKENIZER_H
#define HY_TOKENIZER_TOKENIZER_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hy_tokenizer hy_tokenizer;

/* Loads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json. */
int hy_tokenizer_load(hy_tokenizer **out, const char *dir, hy_err *err);
/* Same from memory (config may be NULL). `what` names the source in error messages. */
int hy_tokenizer_load_json(hy_tokenizer **out, const char *json, size_t json_len, const char *config,
                           size_t config_len, const char *what, hy_err *err);
void hy_tokenizer_free(hy_tokenizer *t);

/* text: len bytes (need not be NUL-terminated, may be invalid UTF-8). On success *ids is a
 * malloc'd array of *n ids (caller frees; non-NULL even when *n == 0). No BOS is ever added. */
int hy_tokenizer_encode(const hy_tokenizer *t, const char *text, size_t len, bool parse_special,
                        int32_t **ids, size_t *n, hy_err *err);

/* As hy_tokenizer_encode with parse_special = true, except that a special token's text becomes
 * that token only when the match lies entirely inside one of the byte ranges special_ok
 * ([start, end) pairs, sorted, non-overlapping, within len); elsewhere it is ordinary text (and
 * tokens with "special": false are matched everywhere, as always). This is how a chat prompt
 * is tokenized: the template's own markup may produce <|im_start|> / <|im_end|>, text taken
 * from the request may not. text must be valid UTF-8 (HY_E_INVALID otherwise). */
int hy_tokenizer_encode_marked(const hy_tokenizer *t, const char *text, size_t len, const size_t *special_ok,
                               size_t n_special_ok, int32_t **ids, size_t *n, hy_err *err);

/* ids -> UTF-8 text, as HF `decode`: ids that name no token are skipped (HF does the same);
 * skip_special drops tokens marked special (not <think> etc.). *text is malloc'd and
 * NUL-terminated (*len excludes the NUL); caller frees. */
int hy_tokenizer_decode(const hy_tokenizer *t, const int32_t *ids, size_t n, bool skip_special, char **text,
                        size_t *len, hy_err *err);

/* HF convert_tokens_to_ids: token as spelled in tokenizer.json (byte-level alphabet for vocab
 * entries, e.g. "Ċ" for "\n"; literal content for added tokens). -1 if absent. */
int32_t hy_tokenizer_token_id(const hy_tokenizer *t, const char *token_text);
/* HF convert_ids_to_tokens: the tokenizer.json spelling, NUL-terminated; NULL if no such id. */
const char *hy_tokenizer_id_to_piece(const hy_tokenizer *t, int32_t id);
/* The raw bytes the token stands for when decoded (may be a partial UTF-8 sequence);
 * NULL if no such id. */
const uint8_t *hy_tokenizer_token_bytes(const hy_tokenizer *t, int32_t id, size_t *len);
/* 1 + the largest id (base vocab and added tokens), HF get_vocab_size(with_added_tokens). */
size_t hy_tokenizer_vocab_size(const hy_tokenizer *t);
bool hy_tokenizer_is_added(const hy_tokenizer *t, int32_t id);
bool hy_tokenizer_is_special(const hy_tokenizer *t, int32_t id); /* added with "special": true */

/* From tokenizer_config.json (-1 when absent or null): eos_token, pad_token, bos_token. */
int32_t hy_tokenizer_eos_id(const hy_tokenizer *t);
int32_t hy_tokenizer_pad_id(const hy_tokenizer *t);
int32_t hy_tokenizer_bos_id(const hy_tokenizer *t);
/* model_max_length from tokenizer_config.json, 0 when absent. */
int64_t hy_tokenizer_model_max_length(const hy_tokenizer *t);

/* Streaming detokenizer: push ids one at a time, get text that is always complete UTF-8.
 * Incomplete multi-byte sequences at the end are held back until the next token completes
 * them (or flush replaces them with U+FFFD, as full decoding would). The concatenation of all
 * outputs equals hy_tokenizer_decode of all pushed ids. */
typedef struct hy_detok hy_detok;
int hy_detok_create(hy_detok **out, const hy_tokenizer *t, bool skip_special, hy_err *err);
/* *text points into the detokenizer (valid until the next call), *len may be 0. */
int hy_detok_push(hy_detok *d, int32_t id, const char **text, size_t *len, hy_err *err);
int hy_detok_flush(hy_detok *d, const char **text, size_t *len, hy_err *err);
/* Bytes currently held back (0..3). */
size_t hy_detok_pending(const hy_detok *d);
void hy_detok_free(hy_detok *d);

#endif
