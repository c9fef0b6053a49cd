/*
 * Python's text forms of JSON values, as the chat template and vLLM produce them.
 * Owns: nothing (pure functions over jansson values and byte ranges).
 * Threading: reentrant.
 * Why: the official chat template runs in Python/Jinja. Its `tojson` filter (as
 * Hugging Face installs it) is json.dumps(ensure_ascii=False) with the default
 * ", " / ": " separators and no key sorting; `{{ v }}` and `v|string` print
 * Python's str(v) (True/False/None, repr of floats and strings inside
 * containers); `|trim` is str.strip() with Python's Unicode whitespace set.
 * vLLM's tool parser serializes arguments with json.dumps and falls back to
 * ast.literal_eval. Byte-identical prompts need these exact spellings.
 */
#ifndef HY_CHAT_PYJSON_H
#define HY_CHAT_PYJSON_H

#include "chat/strbuf.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* json.dumps(v, ensure_ascii=False): keys in the object's (insertion) order. Returns 0 or
 * HY_E_NOMEM; a value json.dumps cannot represent (non-finite real) gives HY_E_INVALID. */
int hy_pyjson_dumps(hy_chat_buf *b, const json_t *v);

/* str(v): strings verbatim, 5, 1.5, True, False, None, and repr() forms for arrays/objects
 * (['a', 1], {'k': "it's"}). Returns 0 or HY_E_NOMEM. */
int hy_pyjson_str(hy_chat_buf *b, const json_t *v);

/* repr(float) / json.dumps(float): shortest round-trip digits, "1.0", "1e+16", "1e-05",
 * "inf"/"nan" (json.dumps would print Infinity/NaN; callers never pass those). */
void hy_pyjson_float_repr(double d, char out[40]);

/* Python str.isspace() for one code point. */
int hy_py_isspace(uint32_t cp);

/* Python str.strip() on UTF-8 bytes: sets [*b, *e) to the stripped range. Invalid UTF-8
 * bytes count as non-space. */
void hy_py_strip(const char *s, size_t n, size_t *b, size_t *e);

/* A subset of Python's ast.literal_eval: None/True/False, int (decimal, 0x, 0o, 0b, '_'
 * separators), float, quoted strings (single/double/triple quotes, r prefix, common
 * escapes), lists, tuples (become arrays), dicts with string keys, unary +/-. Leading spaces
 * and tabs and surrounding whitespace are allowed. Returns a new reference, or NULL when the
 * text is not such a literal (or an int does not fit in 64 bits). */
json_t *hy_pyjson_literal_eval(const char *s, size_t n);

/* Appends s[0..n) with every invalid UTF-8 byte replaced by U+FFFD. Returns 0 or HY_E_NOMEM. */
int hy_utf8_append_lossy(hy_chat_buf *b, const char *s, size_t n);

/* A JSON string from bytes that may not be valid UTF-8: invalid bytes become U+FFFD
 * (jansson refuses invalid UTF-8). NULL only on out-of-memory. */
json_t *hy_pyjson_string_lossy(const char *s, size_t n);

/* Decodes one UTF-8 code point at s[0..n); returns its length (1..4) and sets *cp, or 0
 * for an invalid/truncated sequence. */
size_t hy_pyjson_utf8_decode(const char *s, size_t n, uint32_t *cp);

#endif
