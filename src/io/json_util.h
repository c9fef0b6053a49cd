/*
 * Small typed accessors over jansson for the file parsers in src/io/
 * (config.json, safetensors headers, shard indexes). They exist so that every
 * parser reports the same kind of message: `<file>: <field path>: <what is
 * wrong> (expected <type>)`, and syntax errors with line and column.
 * Stateless and reentrant; the caller owns every json_t it loads.
 */
#ifndef HY_IO_JSON_UTIL_H
#define HY_IO_JSON_UTIL_H

#include "base/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a value sits, for messages: file name and dotted prefix of the
 * enclosing object ("" at the root, "text_config." inside text_config). */
typedef struct hy_jctx {
    const char *file;
    const char *prefix;
    hy_err *err;
} hy_jctx;

/* Parses len bytes as one JSON document (duplicate keys rejected, depth
 * bounded by jansson, UTF-8 checked). On failure: HY_E_INVALID and
 * "<name>: line L, column C: <reason>". */
int hy_json_parse(json_t **out, const char *buf, size_t len, const char *name, hy_err *err);
/* Reads a whole file (at most max_bytes) and parses it. Missing file:
 * HY_E_NOT_FOUND; other read errors HY_E_IO. */
int hy_json_load_file(json_t **out, const char *path, size_t max_bytes, hy_err *err);

/* jansson's name of a value's type ("object", "string", "integer"...). */
const char *hy_json_type_name(const json_t *v);

/* Field getters. Each returns 0 and sets *found (may be NULL) to whether the
 * key was present and non-null; absent or null leaves *out untouched. A value
 * of the wrong type or outside [lo, hi] gives HY_E_INVALID / HY_E_RANGE with a
 * message naming prefix+key and the expectation. */
int hy_json_get_int(const hy_jctx *c, const json_t *obj, const char *key, int64_t lo, int64_t hi,
                    int64_t *out, bool *found);
int hy_json_get_num(const hy_jctx *c, const json_t *obj, const char *key, double *out, bool *found);
int hy_json_get_bool(const hy_jctx *c, const json_t *obj, const char *key, bool *out, bool *found);
/* Copies the string into out[cap]; longer than cap-1 bytes is an error. */
int hy_json_get_str(const hy_jctx *c, const json_t *obj, const char *key, char *out, size_t cap,
                    bool *found);
/* Returns the value if it is an object (or NULL when absent/null); another
 * type is an error. */
int hy_json_get_obj(const hy_jctx *c, const json_t *obj, const char *key, json_t **out);

#endif
