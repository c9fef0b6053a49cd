/*
 * safetensors writer that streams tensor data: the header (names, dtypes, shapes, offsets) is
 * written first from the declared tensor list, then the caller appends the bytes of every
 * tensor in declaration order, in pieces of any size, so a multi-GiB checkpoint never has to
 * be held in memory. Plus the shard index (model.safetensors.index.json).
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON (padded with spaces so the
 * data starts 8-byte aligned), then the tensors back to back (no gaps, as the format requires).
 * Tensors should be declared in decreasing element size (F32/I32, then BF16, then F8) so each
 * one starts aligned to its element size; hy_st_sort_for_alignment does that.
 * One writer belongs to one thread.
 */
#ifndef HY_IO_SAFETENSORS_WRITE_H
#define HY_IO_SAFETENSORS_WRITE_H

#include "base/error.h"
#include "base/tensor.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hy_st_wtensor {
    const char *name; /* borrowed until hy_st_writer_create returns */
    hy_dtype dtype;
    int ndim;         /* 0 .. HY_MAX_DIMS */
    int64_t shape[HY_MAX_DIMS];
} hy_st_wtensor;

typedef struct hy_st_writer hy_st_writer;

/* Bytes of one tensor's data; UINT64_MAX if the shape is invalid or overflows. */
uint64_t hy_st_wtensor_bytes(const hy_st_wtensor *t);

/* Stable sort by decreasing element size (keeps the given order within one size). */
void hy_st_sort_for_alignment(hy_st_wtensor *t, int n);

/* Creates (truncates) path and writes the header for t[0..n). metadata: NULL or a NULL-
 * terminated list of key, value, key, value... strings stored in "__metadata__" (which always
 * gets "format": "pt"). Rejects empty or duplicate names, bad shapes, unknown dtypes. */
int hy_st_writer_create(hy_st_writer **out, const char *path, const hy_st_wtensor *t, int n,
                        const char *const *metadata, hy_err *err);
/* Appends n bytes of the data stream (all tensors' bytes concatenated in declared order).
 * Writing past the end is an error. */
int hy_st_writer_write(hy_st_writer *w, const void *data, size_t n, hy_err *err);
/* Total data bytes declared / already written. */
uint64_t hy_st_writer_data_bytes(const hy_st_writer *w);
uint64_t hy_st_writer_written(const hy_st_writer *w);
/* Checks that every declared byte was written, flushes and closes. Frees w in every case; on
 * failure the partial file is removed. */
int hy_st_writer_finish(hy_st_writer *w, hy_err *err);
/* Closes, removes the partial file, frees. NULL is a no-op. */
void hy_st_writer_abort(hy_st_writer *w);

/* Writes an HF shard index: {"metadata": {"total_size": total_size}, "weight_map": {name:
 * file}} with names sorted. names[i] lives in files[i]. */
int hy_st_write_index(const char *path, const char *const *names, const char *const *files, int n,
                      uint64_t total_size, hy_err *err);

#endif
