/*
 * Copying one sequence's state out of and into a hy_seq, for the prefix cache
 * (memory/prefix_cache.h) and anything else that snapshots sequences.
 *
 * KV rows: the attention K and V of positions [pos0, pos0+n) of every
 * attention layer, packed as [n][layer][K row | V row] in the cache's element
 * type (hy_seq_kv_row_bytes bytes per position: fp32, or bf16 for a bf16 cache,
 * memory/kv_cache.h), so a run of positions is one contiguous buffer, a block of
 * the cache is a plain slice and a copy out and back in keeps the bits.
 * GDN state: the whole hy_gdn_state payload (every GDN layer's fp32 recurrent
 * state, then every conv state), hy_seq_gdn_bytes bytes; a checkpoint is an
 * exact byte copy, never a recomputation.
 *
 * Threading: like hy_forward, one caller at a time per sequence.
 */
#ifndef HY_MODEL_SEQ_IO_H
#define HY_MODEL_SEQ_IO_H

#include "base/error.h"
#include "model/forward.h"

#include <stddef.h>

/* Bytes per position of packed KV rows (every attention layer, K then V). */
size_t hy_seq_kv_row_bytes(const hy_seq *s);
/* Bytes of the GDN state snapshot (recurrent + conv of every GDN layer). */
size_t hy_seq_gdn_bytes(const hy_seq *s);

/* dst[n][row] <- KV of positions [pos0, pos0+n); requires pos0 + n <= hy_seq_pos(s). */
int hy_seq_kv_read(const hy_seq *s, int pos0, int n, void *dst, hy_err *err);
/* KV of positions [pos0, pos0+n) <- src; requires pos0 + n <= capacity. Does
 * not move the sequence position (hy_seq_restore does). */
int hy_seq_kv_write(hy_seq *s, int pos0, int n, const void *src, hy_err *err);
/* dst <- the GDN state (hy_seq_gdn_bytes bytes). */
void hy_seq_gdn_read(const hy_seq *s, void *dst);
/* GDN state <- src and position <- pos: the sequence continues from pos as if
 * it had computed [0, pos) itself. The caller must have written the KV of
 * [0, pos) with hy_seq_kv_write. */
int hy_seq_restore(hy_seq *s, const void *gdn, int pos, hy_err *err);

#endif
