/*
 * safetensors files and shard sets (see safetensors.h). The header parser
 * works on an in-memory image of the whole file so the fuzzer exercises
 * exactly the code that validates mmapped checkpoints. Validation order:
 * length prefix, JSON syntax, per-entry fields, arithmetic, then ranges
 * (sorted by offset, so overlap is one linear pass).
 * The set keeps tensors in name order and a small open-addressing hash of
 * them (the 27B checkpoint has ~1,200 tensors over ~15 shards).
 */
#include "io/safetensors.h"

#include "io/json_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define KNOWN_DTYPES "F32, F16, BF16, F8_E4M3, F8_E5M2, F64, I8, U8, I16, I32, I64, BOOL"
#define INDEX_MAX_BYTES (64u << 20)
#define MAX_SHARDS 65536

/* ------------------------------------------------------------------------ */
/* header                                                                   */

void hy_st_header_release(hy_st_header *h) {
    if (!h) return;
    for (int i = 0; i < h->n_tensors; i++) free((char *)h->tensors[i].name);
    free(h->tensors);
    memset(h, 0, sizeof *h);
}

static int cmp_offset(const void *a, const void *b) {
    const hy_st_tensor *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

/* Validates one "name": {dtype, shape, data_offsets} entry into *t. */
static int parse_entry(hy_st_tensor *t, const char *tname, const json_t *v, uint64_t data_len, const char *file,
                       hy_err *err) {
    if (!json_is_object(v))
        return hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": expected an object, found %s", file, tname,
                          hy_json_type_name(v));
    if (!tname[0]) return hy_err_set(err, HY_E_INVALID, "%s: a tensor has an empty name", file);

    json_t *dt = json_object_get(v, "dtype");
    if (!json_is_string(dt))
        return hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": dtype: expected a string, found %s", file, tname,
                          hy_json_type_name(dt));
    int d = hy_dtype_parse(json_string_value(dt));
    if (d < 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor \"%.200s\": dtype \"%.32s\" is unknown (known: " KNOWN_DTYPES ")",
                          file, tname, json_string_value(dt));
    t->dtype = (hy_dtype)d;

    json_t *sh = json_object_get(v, "shape");
    if (!json_is_array(sh))
        return hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": shape: expected an array, found %s", file, tname,
                          hy_json_type_name(sh));
    size_t nd = json_array_size(sh);
    if (nd > HY_MAX_DIMS)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor \"%.200s\": shape has %zu dimensions (at most %d)", file,
                          tname, nd, HY_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t numel = 1;
    bool overflow = false;
    for (size_t i = 0; i < nd; i++) {
        json_t *e = json_array_get(sh, i);
        if (!json_is_integer(e))
            return hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": shape[%zu]: expected an integer, found %s",
                              file, tname, i, hy_json_type_name(e));
        json_int_t x = json_integer_value(e);
        if (x < 0)
            return hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": shape[%zu] is negative (%lld)", file, tname,
                              i, (long long)x);
        t->shape[i] = (int64_t)x;
        if (__builtin_mul_overflow(numel, (uint64_t)x, &numel)) overflow = true;
    }
    uint64_t nbytes = 0;
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)hy_dtype_size(t->dtype), &nbytes) ||
        nbytes > (uint64_t)INT64_MAX)
        return hy_err_set(err, HY_E_RANGE, "%s: tensor \"%.200s\": shape is too large (element count overflows)",
                          file, tname);

    json_t *off = json_object_get(v, "data_offsets");
    if (!json_is_array(off) || json_array_size(off) != 2)
        return hy_err_set(err, HY_E_INVALID,
                          "%s: tensor \"%.200s\": data_offsets: expected an array [begin, end], found %s", file, tname,
                          json_is_array(off) ? "an array of another length" : hy_json_type_name(off));
    json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 || json_integer_value(e) < 0)
        return hy_err_set(err, HY_E_INVALID,
                          "%s: tensor \"%.200s\": data_offsets: expected two non-negative integers", file, tname);
    uint64_t begin = (uint64_t)json_integer_value(b), end = (uint64_t)json_integer_value(e);
    if (end < begin)
        return hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\": data_offsets [%llu, %llu]: end is before begin",
                          file, tname, (unsigned long long)begin, (unsigned long long)end);
    if (end - begin != nbytes)
        return hy_err_set(err, HY_E_INVALID,
                          "%s: tensor \"%.200s\": data_offsets [%llu, %llu] span %llu bytes but %s x %llu elements "
                          "needs %llu",
                          file, tname, (unsigned long long)begin, (unsigned long long)end,
                          (unsigned long long)(end - begin), hy_dtype_name(t->dtype), (unsigned long long)numel,
                          (unsigned long long)nbytes);
    if (end > data_len)
        return hy_err_set(err, HY_E_RANGE,
                          "%s: tensor \"%.200s\": data_offsets [%llu, %llu] run past the end of the data (%llu bytes)",
                          file, tname, (unsigned long long)begin, (unsigned long long)end,
                          (unsigned long long)data_len);
    t->offset = begin;
    t->nbytes = nbytes;
    return 0;
}

static int parse_metadata(const json_t *v, const char *file, hy_err *err, int *count) {
    if (!json_is_object(v))
        return hy_err_set(err, HY_E_INVALID, "%s: __metadata__: expected an object of strings, found %s", file,
                          hy_json_type_name(v));
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (!json_is_string(x))
            return hy_err_set(err, HY_E_INVALID, "%s: __metadata__.%.200s: expected a string, found %s", file, k,
                              hy_json_type_name(x));
    }
    *count = (int)json_object_size(v);
    return 0;
}

static int header_parse(hy_st_header *h, const uint8_t *file, size_t len, const char *name, hy_err *err) {
    if (len < 8)
        return hy_err_set(err, HY_E_INVALID, "%s: file is %zu bytes, too short for the 8-byte header length", name,
                          len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | file[i]; /* little-endian u64 */
    if (n < 2) return hy_err_set(err, HY_E_INVALID, "%s: header length %llu is too small", name, (unsigned long long)n);
    if (n > HY_ST_MAX_HEADER)
        return hy_err_set(err, HY_E_RANGE, "%s: header length %llu is more than the %u MiB allowed", name,
                          (unsigned long long)n, HY_ST_MAX_HEADER >> 20);
    if (n > len - 8)
        return hy_err_set(err, HY_E_RANGE, "%s: header length %llu runs past the end of the file (%zu bytes)", name,
                          (unsigned long long)n, len);
    h->header_len = n;
    h->data_len = len - 8 - n;

    char jname[512];
    snprintf(jname, sizeof jname, "%s: header", name);
    json_t *root = NULL;
    int rc = hy_json_parse(&root, (const char *)file + 8, (size_t)n, jname, err);
    if (rc) return rc;
    if (!json_is_object(root)) {
        rc = hy_err_set(err, HY_E_INVALID, "%s: header: expected a JSON object, found %s", name,
                        hy_json_type_name(root));
        goto out;
    }
    size_t cap = json_object_size(root);
    h->tensors = calloc(cap ? cap : 1, sizeof *h->tensors);
    if (!h->tensors) {
        rc = hy_err_set(err, HY_E_NOMEM, "%s: out of memory for %zu tensor records", name, cap);
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        if (!strcmp(k, "__metadata__")) {
            if ((rc = parse_metadata(v, name, err, &h->n_metadata))) goto out;
            continue;
        }
        hy_st_tensor *t = &h->tensors[h->n_tensors];
        memset(t, 0, sizeof *t);
        if ((rc = parse_entry(t, k, v, h->data_len, name, err))) goto out;
        t->name = strdup(k);
        if (!t->name) {
            rc = hy_err_set(err, HY_E_NOMEM, "%s: out of memory", name);
            goto out;
        }
        t->data = file + 8 + n + t->offset;
        h->n_tensors++;
    }
    qsort(h->tensors, (size_t)h->n_tensors, sizeof *h->tensors, cmp_offset);
    for (int i = 1; i < h->n_tensors; i++) {
        const hy_st_tensor *a = &h->tensors[i - 1], *b = &h->tensors[i];
        if (b->offset < a->offset + a->nbytes) {
            rc = hy_err_set(err, HY_E_INVALID,
                            "%s: tensors \"%.200s\" [%llu, %llu) and \"%.200s\" [%llu, %llu) overlap", name, a->name,
                            (unsigned long long)a->offset, (unsigned long long)(a->offset + a->nbytes), b->name,
                            (unsigned long long)b->offset, (unsigned long long)(b->offset + b->nbytes));
            goto out;
        }
    }
out:
    json_decref(root);
    return rc;
}

int hy_st_header_parse(hy_st_header *h, const uint8_t *file, size_t len, const char *name, hy_err *err) {
    memset(h, 0, sizeof *h);
    int rc = header_parse(h, file, len, name, err);
    if (rc) hy_st_header_release(h);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* sets                                                                     */

typedef struct st_file {
    char *path;
    const uint8_t *base; /* mmap of the whole file */
    size_t size;
    hy_st_header hdr;
} st_file;

struct hy_st_set {
    st_file *files;
    int n_files;
    const hy_st_tensor **by_name; /* [n], sorted by name */
    int n;
    int *table; /* open addressing: index into by_name, -1 empty */
    size_t table_mask;
};

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void hy_st_free(hy_st_set *s) {
    if (!s) return;
    for (int i = 0; i < s->n_files; i++) {
        hy_st_header_release(&s->files[i].hdr);
        if (s->files[i].base) munmap((void *)s->files[i].base, s->files[i].size);
        free(s->files[i].path);
    }
    free(s->files);
    free(s->by_name);
    free(s->table);
    free(s);
}

/* mmaps path and validates its header into f. */
static int map_file(st_file *f, const char *path, hy_err *err) {
    f->path = strdup(path);
    if (!f->path) return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return hy_err_set(err, e == ENOENT ? HY_E_NOT_FOUND : HY_E_IO, "%s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return hy_err_set(err, HY_E_IO, "%s: not a regular file", path);
    }
    if (st.st_size < 8) {
        close(fd);
        return hy_err_set(err, HY_E_INVALID, "%s: file is %lld bytes, too short for the 8-byte header length", path,
                          (long long)st.st_size);
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps the file alive */
    if (p == MAP_FAILED) return hy_err_set(err, HY_E_IO, "%s: mmap failed: %s", path, strerror(e));
    f->base = p;
    f->size = (size_t)st.st_size;
    return hy_st_header_parse(&f->hdr, f->base, f->size, path, err);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp((*(const hy_st_tensor *const *)a)->name, (*(const hy_st_tensor *const *)b)->name);
}

/* Builds the name-ordered list and hash over every file; a name found twice
 * is an error naming both files. */
static int build_index(hy_st_set *s, hy_err *err) {
    size_t total = 0;
    for (int i = 0; i < s->n_files; i++) {
        for (int j = 0; j < s->files[i].hdr.n_tensors; j++) s->files[i].hdr.tensors[j].file = i;
        total += (size_t)s->files[i].hdr.n_tensors;
    }
    if (total > INT32_MAX / 4) return hy_err_set(err, HY_E_RANGE, "safetensors: too many tensors (%zu)", total);
    s->by_name = calloc(total ? total : 1, sizeof *s->by_name);
    size_t cap = 16;
    while (cap < 2 * total) cap <<= 1;
    s->table = malloc(cap * sizeof *s->table);
    if (!s->by_name || !s->table) return hy_err_set(err, HY_E_NOMEM, "safetensors: out of memory");
    s->table_mask = cap - 1;
    for (size_t i = 0; i < cap; i++) s->table[i] = -1;
    for (int i = 0; i < s->n_files; i++)
        for (int j = 0; j < s->files[i].hdr.n_tensors; j++) s->by_name[s->n++] = &s->files[i].hdr.tensors[j];
    qsort(s->by_name, (size_t)s->n, sizeof *s->by_name, cmp_name);
    for (int i = 0; i < s->n; i++) {
        if (i > 0 && !strcmp(s->by_name[i - 1]->name, s->by_name[i]->name)) {
            const hy_st_tensor *a = s->by_name[i - 1], *b = s->by_name[i];
            if (a->file == b->file) /* jansson rejects duplicate keys, so this cannot happen */
                return hy_err_set(err, HY_E_INTERNAL, "%s: tensor \"%.200s\" listed twice", s->files[a->file].path,
                                  a->name);
            return hy_err_set(err, HY_E_INVALID, "tensor \"%.200s\" is present in two shards: %s and %s", a->name,
                              s->files[a->file].path, s->files[b->file].path);
        }
        size_t h = hash_str(s->by_name[i]->name) & s->table_mask;
        while (s->table[h] >= 0) h = (h + 1) & s->table_mask;
        s->table[h] = i;
    }
    return 0;
}

int hy_st_open_file(hy_st_set **out, const char *path, hy_err *err) {
    *out = NULL;
    hy_st_set *s = calloc(1, sizeof *s);
    if (!s) return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    s->files = calloc(1, sizeof *s->files);
    if (!s->files) {
        free(s);
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    }
    s->n_files = 1;
    int rc = map_file(&s->files[0], path, err);
    if (!rc) rc = build_index(s, err);
    if (rc) {
        hy_st_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* Shard names come from the index file: keep them inside its directory. */
static bool shard_name_ok(const char *f) {
    size_t n = strlen(f);
    return n > 0 && n < 256 && !strchr(f, '/') && strcmp(f, ".") && strcmp(f, "..");
}

int hy_st_open_index(hy_st_set **out, const char *index_path, hy_err *err) {
    *out = NULL;
    json_t *root = NULL;
    int rc = hy_json_load_file(&root, index_path, INDEX_MAX_BYTES, err);
    if (rc) return rc;
    hy_st_set *s = NULL;
    const char **names = NULL; /* unique shard file names, borrowed from root */
    int n_names = 0;
    char *dir = NULL;

    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(root)) {
        rc = hy_err_set(err, HY_E_INVALID, "%s: expected a JSON object, found %s", index_path, hy_json_type_name(root));
        goto out;
    }
    if (!json_is_object(wm)) {
        rc = hy_err_set(err, HY_E_INVALID, "%s: weight_map: expected an object, found %s", index_path,
                        hy_json_type_name(wm));
        goto out;
    }
    size_t n_map = json_object_size(wm);
    names = calloc(n_map ? n_map : 1, sizeof *names);
    if (!names) {
        rc = hy_err_set(err, HY_E_NOMEM, "%s: out of memory", index_path);
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(wm, k, v) {
        if (!json_is_string(v)) {
            rc = hy_err_set(err, HY_E_INVALID, "%s: weight_map.%.200s: expected a file name string, found %s",
                            index_path, k, hy_json_type_name(v));
            goto out;
        }
        const char *f = json_string_value(v);
        if (!shard_name_ok(f)) {
            rc = hy_err_set(err, HY_E_INVALID,
                            "%s: weight_map.%.200s: \"%.200s\" is not a plain file name in the index's directory",
                            index_path, k, f);
            goto out;
        }
        int j = 0;
        while (j < n_names && strcmp(names[j], f)) j++; /* few shards: linear is fine */
        if (j == n_names) {
            if (n_names == MAX_SHARDS) {
                rc = hy_err_set(err, HY_E_RANGE, "%s: more than %d shard files", index_path, MAX_SHARDS);
                goto out;
            }
            names[n_names++] = f;
        }
    }
    if (n_names == 0) {
        rc = hy_err_set(err, HY_E_INVALID, "%s: weight_map is empty", index_path);
        goto out;
    }

    dir = strdup(index_path);
    if (!dir) {
        rc = hy_err_set(err, HY_E_NOMEM, "%s: out of memory", index_path);
        goto out;
    }
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = 0;
    else dir[0] = 0;

    s = calloc(1, sizeof *s);
    if (s) s->files = calloc((size_t)n_names, sizeof *s->files);
    if (!s || !s->files) {
        rc = hy_err_set(err, HY_E_NOMEM, "%s: out of memory", index_path);
        goto out;
    }
    for (int i = 0; i < n_names; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 1;
        char *p = malloc(plen);
        if (!p) {
            rc = hy_err_set(err, HY_E_NOMEM, "%s: out of memory", index_path);
            goto out;
        }
        snprintf(p, plen, "%s%s", dir, names[i]);
        s->n_files = i + 1;
        rc = map_file(&s->files[i], p, err);
        free(p);
        if (rc) {
            if (rc == HY_E_NOT_FOUND) hy_err_wrap(err, "%s names a shard that is missing", index_path);
            goto out;
        }
    }
    if ((rc = build_index(s, err))) goto out;
    json_object_foreach(wm, k, v) {
        const hy_st_tensor *t = hy_st_find(s, k);
        const char *f = json_string_value(v);
        if (!t) {
            rc = hy_err_set(err, HY_E_NOT_FOUND, "%s: tensor \"%.200s\" is mapped to %s but is not in that file",
                            index_path, k, f);
            goto out;
        }
        const char *actual = s->files[t->file].path + strlen(dir);
        if (strcmp(actual, f) != 0) {
            rc = hy_err_set(err, HY_E_INVALID, "%s: tensor \"%.200s\" is mapped to %s but is in %s", index_path, k, f,
                            actual);
            goto out;
        }
    }
out:
    if (rc) {
        hy_st_free(s);
        s = NULL;
    }
    free(dir);
    free(names);
    json_decref(root);
    *out = s;
    return rc;
}

int hy_st_open_dir(hy_st_set **out, const char *dir, hy_err *err) {
    *out = NULL;
    size_t n = strlen(dir) + 64;
    char *p = malloc(n);
    if (!p) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    struct stat st;
    int rc;
    snprintf(p, n, "%s/model.safetensors.index.json", dir);
    if (stat(p, &st) == 0) {
        rc = hy_st_open_index(out, p, err);
    } else {
        snprintf(p, n, "%s/model.safetensors", dir);
        if (stat(p, &st) == 0) rc = hy_st_open_file(out, p, err);
        else
            rc = hy_err_set(err, HY_E_NOT_FOUND, "%s: no weights (neither model.safetensors nor "
                                                 "model.safetensors.index.json)", dir);
    }
    free(p);
    return rc;
}

int hy_st_count(const hy_st_set *s) { return s ? s->n : 0; }
const hy_st_tensor *hy_st_at(const hy_st_set *s, int i) { return s && i >= 0 && i < s->n ? s->by_name[i] : NULL; }

int hy_st_index_of(const hy_st_set *s, const char *name) {
    if (!s || !s->table) return -1;
    size_t h = hash_str(name) & s->table_mask;
    while (s->table[h] >= 0) {
        if (!strcmp(s->by_name[s->table[h]]->name, name)) return s->table[h];
        h = (h + 1) & s->table_mask;
    }
    return -1;
}

const hy_st_tensor *hy_st_find(const hy_st_set *s, const char *name) {
    int i = hy_st_index_of(s, name);
    return i < 0 ? NULL : s->by_name[i];
}

int hy_st_n_files(const hy_st_set *s) { return s ? s->n_files : 0; }
const char *hy_st_file_path(const hy_st_set *s, int i) { return s && i >= 0 && i < s->n_files ? s->files[i].path : NULL; }
uint64_t hy_st_file_size(const hy_st_set *s, int i) { return s && i >= 0 && i < s->n_files ? s->files[i].size : 0; }

void hy_st_drop_pages(const hy_st_set *s, const void *p, size_t len) {
    const uintptr_t a = (uintptr_t)p, pg = 4096;
    for (int i = 0; s && i < s->n_files; i++) {
        const uintptr_t base = (uintptr_t)s->files[i].base;
        if (a < base || a - base > s->files[i].size || len > s->files[i].size - (a - base)) continue;
        const uintptr_t lo = (a + pg - 1) & ~(pg - 1), hi = (a + len) & ~(pg - 1);
        if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
        return;
    }
}

void hy_st_view(const hy_st_tensor *t, hy_tensor *out) {
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    for (int i = 0; i < t->ndim; i++) out->shape[i] = t->shape[i];
    out->data = t->data;
    out->nbytes = (size_t)t->nbytes;
    out->scale_inv = NULL;
}
