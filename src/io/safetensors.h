/*
 * safetensors reader: one `model.safetensors` or a sharded set described by
 * `model.safetensors.index.json`. Every file is mmapped read-only and its
 * header validated before anything points into it (length bounds, JSON shape,
 * known dtypes, shape/offset arithmetic without overflow, ranges inside the
 * data area and non-overlapping). A hy_st_set owns all mappings; tensor
 * records and hy_tensor views stay valid until hy_st_free.
 * A set is immutable after opening and may be read from any thread.
 */
#ifndef HY_IO_SAFETENSORS_H
#define HY_IO_SAFETENSORS_H

#include "base/error.h"
#include "base/tensor.h"

#include <stddef.h>
#include <stdint.h>

/* Header JSON larger than this is refused (real headers are ~100 KiB). */
#define HY_ST_MAX_HEADER (100u << 20)

typedef struct hy_st_tensor {
    const char *name;  /* owned by the header */
    hy_dtype dtype;
    int ndim;
    int64_t shape[HY_MAX_DIMS];
    uint64_t offset;   /* from the start of the data area (after the header) */
    uint64_t nbytes;
    const void *data;  /* into the file bytes the header was parsed from */
    int file;          /* index of the file in its set (0 for a lone header) */
} hy_st_tensor;

typedef struct hy_st_header {
    hy_st_tensor *tensors; /* [n_tensors], sorted by offset */
    int n_tensors;
    int n_metadata;        /* entries of __metadata__ */
    uint64_t header_len;   /* bytes of JSON after the 8-byte length */
    uint64_t data_len;     /* bytes after the header */
} hy_st_header;

/* Parses and validates the header of a whole safetensors file held in
 * memory (file[0..len)). name is used in messages. Never reads outside the
 * buffer; on failure *h holds nothing to release. */
int hy_st_header_parse(hy_st_header *h, const uint8_t *file, size_t len, const char *name, hy_err *err);
void hy_st_header_release(hy_st_header *h);

typedef struct hy_st_set hy_st_set;

/* DIR/model.safetensors.index.json if present, else DIR/model.safetensors.
 * HY_E_NOT_FOUND (message says so) when the directory has neither. */
int hy_st_open_dir(hy_st_set **out, const char *dir, hy_err *err);
/* A single safetensors file. */
int hy_st_open_file(hy_st_set **out, const char *path, hy_err *err);
/* An index file; shard names are resolved relative to its directory. Every
 * tensor of weight_map must be in the shard it names; a tensor found in two
 * shards is an error. */
int hy_st_open_index(hy_st_set **out, const char *index_path, hy_err *err);
void hy_st_free(hy_st_set *s);

/* Tensors in name order (stable iteration for reports). */
int hy_st_count(const hy_st_set *s);
const hy_st_tensor *hy_st_at(const hy_st_set *s, int i);
/* Position in name order, or -1. Hash lookup. */
int hy_st_index_of(const hy_st_set *s, const char *name);
const hy_st_tensor *hy_st_find(const hy_st_set *s, const char *name);

int hy_st_n_files(const hy_st_set *s);
const char *hy_st_file_path(const hy_st_set *s, int i);
uint64_t hy_st_file_size(const hy_st_set *s, int i);

/* Lets the whole pages of [p, p + len) go from this process's memory when the range lies in
 * one of s's file mappings (read-only and private: touched again, they come back from the
 * file). Anything else, s NULL included, is left alone. For data copied elsewhere. */
void hy_st_drop_pages(const hy_st_set *s, const void *p, size_t len);

/* Fills a view (scale_inv NULL). */
void hy_st_view(const hy_st_tensor *t, hy_tensor *out);

#endif
