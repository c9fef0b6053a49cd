/*
 * Test-only helpers to write small safetensors files, checkpoint
 * directories and temp dirs from C, so the io/model tests build their own
 * inputs (header-only: static functions, included by the tests that need
 * them). Data bytes follow a pattern derived from the tensor's index so a
 * test can check that a view points at the right bytes.
 */
#ifndef HY_TESTS_ST_WRITER_H
#define HY_TESTS_ST_WRITER_H

#include "base/dtype.h"

#include <ftw.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct stw_tensor {
    char name[256];
    hy_dtype dtype;
    int ndim;
    int64_t shape[8];
} stw_tensor;

typedef struct stw {
    stw_tensor t[4096];
    int n;
} stw;

__attribute__((unused)) static stw *stw_new(void) { return calloc(1, sizeof(stw)); }

__attribute__((unused)) static void stw_add(stw *w, const char *name, hy_dtype dt, int ndim, const int64_t *shape) {
    if (w->n >= 4096) abort();
    stw_tensor *t = &w->t[w->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
}
/* STW_ADD(w, "a.weight", HY_DTYPE_F32, 3, 4): shape given inline */
#define STW_ADD(w, name, dt, ...)                                                                                      \
    stw_add((w), (name), (dt), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

__attribute__((unused)) static stw_tensor *stw_get(stw *w, const char *name) {
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name)) return &w->t[i];
    return NULL;
}

__attribute__((unused)) static void stw_remove(stw *w, const char *name) {
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name)) {
            memmove(&w->t[i], &w->t[i + 1], (size_t)(w->n - i - 1) * sizeof w->t[0]);
            w->n--;
            return;
        }
}

static uint64_t stw_nbytes(const stw_tensor *t) {
    uint64_t n = hy_dtype_size(t->dtype);
    for (int i = 0; i < t->ndim; i++) n *= (uint64_t)t->shape[i];
    return n;
}

/* Writes tensors [from, to) of w to path; data byte j of tensor i is
 * (i*31 + j) & 0xff. Header padded with spaces to a multiple of 8. */
__attribute__((unused)) static int stw_write_range(const stw *w, int from, int to, const char *path) {
    json_t *h = json_object();
    uint64_t off = 0;
    for (int i = from; i < to; i++) {
        const stw_tensor *t = &w->t[i];
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        uint64_t nb = stw_nbytes(t);
        json_object_set_new(h, t->name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", hy_dtype_name(t->dtype), "shape", shape,
                                      "data_offsets", (json_int_t)off, (json_int_t)(off + nb)));
        off += nb;
    }
    json_object_set_new(h, "__metadata__", json_pack("{s:s}", "format", "pt"));
    char *js = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(h);
    size_t hl = strlen(js), pad = (8 - hl % 8) % 8;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(js);
        return -1;
    }
    uint64_t n = hl + pad;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(n >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(js, 1, hl, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    free(js);
    for (int i = from; i < to; i++) {
        uint64_t nb = stw_nbytes(&w->t[i]);
        for (uint64_t j = 0; j < nb; j++) fputc((int)((i * 31 + j) & 0xff), f);
    }
    return fclose(f);
}

__attribute__((unused)) static int stw_write(const stw *w, const char *path) {
    return stw_write_range(w, 0, w->n, path);
}

/* Writes a whole file image from a header string (exact bytes, no padding)
 * and data_len zero bytes. */
__attribute__((unused)) static unsigned char *stw_image(const char *header, size_t data_len, size_t *len) {
    size_t hl = strlen(header);
    *len = 8 + hl + data_len;
    unsigned char *b = calloc(1, *len);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    return b;
}

__attribute__((unused)) static int stw_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

__attribute__((unused)) static int stw_write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(data, 1, n, f);
    return fclose(f);
}

__attribute__((unused)) static char *stw_tmpdir(void) {
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/hyla-test-XXXXXX", base && base[0] ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static int stw_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

__attribute__((unused)) static void stw_rmdir(char *dir) {
    if (dir) nftw(dir, stw_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* dir + "/" + name into a static-free malloc'd path */
__attribute__((unused)) static char *stw_path(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

#endif
