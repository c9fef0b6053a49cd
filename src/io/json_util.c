/* Typed jansson accessors with uniform error messages; see json_util.h. */
#include "io/json_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int hy_json_parse(json_t **out, const char *buf, size_t len, const char *name, hy_err *err) {
    *out = NULL;
    json_error_t je;
    /* JSON_REJECT_DUPLICATES: a config with two "hidden_size" keys is
     * ambiguous, and Python's json silently keeps the last one. jansson also
     * bounds nesting depth (JSON_PARSER_MAX_DEPTH) and rejects NaN/Infinity,
     * invalid UTF-8, embedded NULs and trailing garbage. */
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (je.line > 0)
            return hy_err_set(err, HY_E_INVALID, "%s: line %d, column %d: %s", name, je.line, je.column, je.text);
        return hy_err_set(err, HY_E_INVALID, "%s: %s", name, je.text);
    }
    *out = root;
    return 0;
}

int hy_json_load_file(json_t **out, const char *path, size_t max_bytes, hy_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        return hy_err_set(err, e == ENOENT ? HY_E_NOT_FOUND : HY_E_IO, "%s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return hy_err_set(err, HY_E_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > max_bytes) {
        fclose(f);
        return hy_err_set(err, HY_E_RANGE, "%s: %lld bytes, more than the %zu allowed for this file", path,
                          (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return hy_err_set(err, HY_E_NOMEM, "%s: cannot allocate %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    int rerr = ferror(f);
    fclose(f);
    if (got != n || rerr) {
        free(buf);
        return hy_err_set(err, HY_E_IO, "%s: short read (%zu of %zu bytes)", path, got, n);
    }
    int rc = hy_json_parse(out, buf, n, path, err);
    free(buf);
    return rc;
}

const char *hy_json_type_name(const json_t *v) {
    if (!v) return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

static int type_error(const hy_jctx *c, const char *key, const json_t *v, const char *want) {
    return hy_err_set(c->err, HY_E_INVALID, "%s: %s%s: expected %s, found %s", c->file, c->prefix, key, want,
                      hy_json_type_name(v));
}

/* Fetches obj[key]; returns NULL for absent or null. */
static json_t *lookup(const json_t *obj, const char *key, bool *found) {
    json_t *v = json_object_get(obj, key);
    if (v && json_is_null(v)) v = NULL;
    if (found) *found = v != NULL;
    return v;
}

int hy_json_get_int(const hy_jctx *c, const json_t *obj, const char *key, int64_t lo, int64_t hi,
                    int64_t *out, bool *found) {
    json_t *v = lookup(obj, key, found);
    if (!v) return 0;
    if (!json_is_integer(v)) return type_error(c, key, v, "an integer");
    int64_t x = (int64_t)json_integer_value(v);
    if (x < lo || x > hi)
        return hy_err_set(c->err, HY_E_RANGE, "%s: %s%s: %lld is out of range [%lld, %lld]", c->file, c->prefix,
                          key, (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

int hy_json_get_num(const hy_jctx *c, const json_t *obj, const char *key, double *out, bool *found) {
    json_t *v = lookup(obj, key, found);
    if (!v) return 0;
    if (!json_is_number(v)) return type_error(c, key, v, "a number");
    double x = json_number_value(v);
    if (!isfinite(x)) /* jansson turns 1e999 into an overflow error, but be explicit */
        return hy_err_set(c->err, HY_E_RANGE, "%s: %s%s: not a finite number", c->file, c->prefix, key);
    *out = x;
    return 0;
}

int hy_json_get_bool(const hy_jctx *c, const json_t *obj, const char *key, bool *out, bool *found) {
    json_t *v = lookup(obj, key, found);
    if (!v) return 0;
    if (!json_is_boolean(v)) return type_error(c, key, v, "true or false");
    *out = json_is_true(v);
    return 0;
}

int hy_json_get_str(const hy_jctx *c, const json_t *obj, const char *key, char *out, size_t cap, bool *found) {
    json_t *v = lookup(obj, key, found);
    if (!v) return 0;
    if (!json_is_string(v)) return type_error(c, key, v, "a string");
    size_t n = json_string_length(v);
    if (n + 1 > cap)
        return hy_err_set(c->err, HY_E_RANGE, "%s: %s%s: string of %zu bytes is longer than the %zu allowed",
                          c->file, c->prefix, key, n, cap - 1);
    memcpy(out, json_string_value(v), n);
    out[n] = 0;
    return 0;
}

int hy_json_get_obj(const hy_jctx *c, const json_t *obj, const char *key, json_t **out) {
    *out = NULL;
    json_t *v = lookup(obj, key, NULL);
    if (!v) return 0;
    if (!json_is_object(v)) return type_error(c, key, v, "an object");
    *out = v;
    return 0;
}
