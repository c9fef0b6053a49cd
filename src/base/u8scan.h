/*
 * UTF-8 scanning for streamed text: where a byte stream can be cut without
 * splitting a character, and lossy repair of invalid bytes (each maximal
 * invalid subpart becomes one U+FFFD, the Unicode-recommended practice that
 * Rust's from_utf8_lossy and Python's errors="replace" follow, so our text
 * matches what HF tokenizers' decode returns). Pure functions, thread-safe.
 */
#ifndef HY_BASE_U8SCAN_H
#define HY_BASE_U8SCAN_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the longest prefix of s[0..n) that does not end inside a
 * character that more bytes could still complete. */
size_t hy_u8_complete_len(const char *s, size_t n);
/* True if s[0..n) is entirely valid UTF-8. */
bool hy_u8_valid(const char *s, size_t n);
/* Writes s with invalid subparts replaced by U+FFFD into out (capacity >= 3*n)
 * and returns the bytes written. */
size_t hy_u8_repair(const char *s, size_t n, char *out);

#endif
