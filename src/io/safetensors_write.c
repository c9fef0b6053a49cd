/*
 * Streaming safetensors writer (see safetensors_write.h). The header JSON is built with
 * jansson (proper string escaping, insertion order kept); data goes through a stdio stream
 * with a large buffer. Every I/O failure reports the path and errno text.
 */
#include "io/safetensors_write.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hy_st_writer {
    FILE *f;
    char *path;
    uint64_t data_bytes; /* declared */
    uint64_t written;
    char *buf;           /* stdio buffer */
};

uint64_t hy_st_wtensor_bytes(const hy_st_wtensor *t) {
    const size_t es = hy_dtype_size(t->dtype);
    if (!es || t->ndim < 0 || t->ndim > HY_MAX_DIMS) return UINT64_MAX;
    uint64_t n = es;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) return UINT64_MAX;
        const uint64_t d = (uint64_t)t->shape[i];
        if (d && n > UINT64_MAX / 4 / d) return UINT64_MAX; /* keep offsets well inside int64 */
        n *= d;
    }
    return n;
}

void hy_st_sort_for_alignment(hy_st_wtensor *t, int n) {
    /* insertion sort: stable, and n is a few thousand at most */
    for (int i = 1; i < n; i++) {
        hy_st_wtensor x = t[i];
        const size_t sx = hy_dtype_size(x.dtype);
        int j = i - 1;
        while (j >= 0 && hy_dtype_size(t[j].dtype) < sx) {
            t[j + 1] = t[j];
            j--;
        }
        t[j + 1] = x;
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Duplicate names: sort a copy of the pointers. */
static int check_names(const hy_st_wtensor *t, int n, const char *path, hy_err *err) {
    const char **names = malloc((size_t)(n ? n : 1) * sizeof *names);
    if (!names) return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < n; i++) names[i] = t[i].name;
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 1; i < n; i++) {
        if (!strcmp(names[i - 1], names[i])) {
            int rc = hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\" is declared twice", path, names[i]);
            free(names);
            return rc;
        }
    }
    free(names);
    return 0;
}

static json_t *build_header(const hy_st_wtensor *t, int n, const char *const *metadata, uint64_t *data_bytes,
                            const char *path, hy_err *err) {
    json_t *root = json_object(), *meta = json_object();
    if (!root || !meta) goto oom;
    json_object_set_new(root, "__metadata__", meta);
    json_object_set_new(meta, "format", json_string("pt"));
    for (const char *const *m = metadata; m && m[0]; m += 2) {
        if (!m[1]) {
            hy_err_set(err, HY_E_INVALID, "%s: metadata key \"%.100s\" has no value", path, m[0]);
            goto fail;
        }
        if (json_object_set_new(meta, m[0], json_string(m[1]))) {
            hy_err_set(err, HY_E_INVALID, "%s: metadata \"%.100s\" is not valid UTF-8", path, m[0]);
            goto fail;
        }
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const hy_st_wtensor *x = &t[i];
        if (!x->name || !x->name[0] || !strcmp(x->name, "__metadata__")) {
            hy_err_set(err, HY_E_INVALID, "%s: tensor %d has an empty or reserved name", path, i);
            goto fail;
        }
        const uint64_t nb = hy_st_wtensor_bytes(x);
        if (nb == UINT64_MAX || off + nb < off || off + nb > (UINT64_MAX >> 2)) {
            hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": invalid dtype or shape (ndim %d)", path, x->name,
                       x->ndim);
            goto fail;
        }
        json_t *e = json_object(), *shape = json_array(), *offs = json_array();
        if (!e || !shape || !offs) {
            json_decref(e); json_decref(shape); json_decref(offs);
            goto oom;
        }
        for (int d = 0; d < x->ndim; d++) json_array_append_new(shape, json_integer((json_int_t)x->shape[d]));
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + nb)));
        json_object_set_new(e, "dtype", json_string(hy_dtype_name(x->dtype)));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", offs);
        if (json_object_set_new(root, x->name, e)) {
            hy_err_set(err, HY_E_INVALID, "%s: tensor name \"%.200s\" is not valid UTF-8", path, x->name);
            goto fail;
        }
        off += nb;
    }
    *data_bytes = off;
    return root;
oom:
    hy_err_set(err, HY_E_NOMEM, "%s: out of memory building the header", path);
fail:
    json_decref(root);
    return NULL;
}

static void writer_free(hy_st_writer *w) {
    if (!w) return;
    free(w->path);
    free(w->buf);
    free(w);
}

int hy_st_writer_create(hy_st_writer **out, const char *path, const hy_st_wtensor *t, int n,
                        const char *const *metadata, hy_err *err) {
    *out = NULL;
    if (n < 0 || (n > 0 && !t)) return hy_err_set(err, HY_E_INVALID, "%s: invalid tensor list", path);
    int rc = check_names(t, n, path, err);
    if (rc) return rc;
    uint64_t data_bytes = 0;
    json_t *root = build_header(t, n, metadata, &data_bytes, path, err);
    if (!root) return err ? err->code : HY_E_INVALID;
    char *js = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!js) return hy_err_set(err, HY_E_NOMEM, "%s: out of memory serialising the header", path);
    size_t jl = strlen(js);
    const size_t pad = (8 - (8 + jl) % 8) % 8;

    hy_st_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path)) || !(w->buf = malloc(4u << 20))) {
        free(js);
        writer_free(w);
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    }
    w->data_bytes = data_bytes;
    w->f = fopen(path, "wb");
    if (!w->f) {
        rc = hy_err_set(err, HY_E_IO, "%s: cannot create: %s", path, strerror(errno));
        free(js);
        writer_free(w);
        return rc;
    }
    setvbuf(w->f, w->buf, _IOFBF, 4u << 20);
    uint8_t len8[8];
    const uint64_t hl = (uint64_t)(jl + pad);
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(hl >> (8 * i));
    int ok = fwrite(len8, 1, 8, w->f) == 8 && fwrite(js, 1, jl, w->f) == jl;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', w->f) != EOF;
    free(js);
    if (!ok) {
        rc = hy_err_set(err, HY_E_IO, "%s: write failed: %s", path, strerror(errno));
        hy_st_writer_abort(w);
        return rc;
    }
    *out = w;
    return 0;
}

int hy_st_writer_write(hy_st_writer *w, const void *data, size_t n, hy_err *err) {
    if (n > w->data_bytes - w->written)
        return hy_err_set(err, HY_E_RANGE, "%s: %zu more bytes written than the header declares", w->path,
                          (size_t)(n - (w->data_bytes - w->written)));
    if (n && fwrite(data, 1, n, w->f) != n)
        return hy_err_set(err, HY_E_IO, "%s: write failed: %s", w->path, strerror(errno));
    w->written += n;
    return 0;
}

uint64_t hy_st_writer_data_bytes(const hy_st_writer *w) { return w->data_bytes; }
uint64_t hy_st_writer_written(const hy_st_writer *w) { return w->written; }

int hy_st_writer_finish(hy_st_writer *w, hy_err *err) {
    int rc = 0;
    if (w->written != w->data_bytes) {
        rc = hy_err_set(err, HY_E_STATE, "%s: only %llu of %llu data bytes were written", w->path,
                        (unsigned long long)w->written, (unsigned long long)w->data_bytes);
        hy_st_writer_abort(w);
        return rc;
    }
    if (fflush(w->f) != 0 || ferror(w->f)) rc = hy_err_set(err, HY_E_IO, "%s: write failed: %s", w->path, strerror(errno));
    if (fclose(w->f) != 0 && !rc) rc = hy_err_set(err, HY_E_IO, "%s: close failed: %s", w->path, strerror(errno));
    w->f = NULL;
    if (rc) remove(w->path);
    writer_free(w);
    return rc;
}

void hy_st_writer_abort(hy_st_writer *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    remove(w->path);
    writer_free(w);
}

int hy_st_write_index(const char *path, const char *const *names, const char *const *files, int n,
                      uint64_t total_size, hy_err *err) {
    int rc = 0;
    json_t *root = json_object(), *meta = json_object(), *map = json_object();
    if (!root || !meta || !map) {
        json_decref(root); json_decref(meta); json_decref(map);
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    }
    json_object_set_new(meta, "total_size", json_integer((json_int_t)total_size));
    json_object_set_new(root, "metadata", meta);
    json_object_set_new(root, "weight_map", map);
    for (int i = 0; i < n; i++) {
        if (json_object_get(map, names[i])) {
            rc = hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\" listed twice", path, names[i]);
            goto done;
        }
        if (json_object_set_new(map, names[i], json_string(files[i]))) {
            rc = hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": invalid name or file", path, names[i]);
            goto done;
        }
    }
    if (json_dump_file(root, path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
        rc = hy_err_set(err, HY_E_IO, "%s: cannot write: %s", path, strerror(errno));
done:
    json_decref(root);
    return rc;
}
