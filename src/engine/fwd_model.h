/*
 * The engine's model seam (hy_engine_model) bound to the CPU forward pass:
 * one hy_ctx (thread pool + scratch) used only by the engine thread, one
 * hy_seq per state slot. The step's items are run one after another through
 * hy_forward (the scheduler already hands over one batch per step, so a
 * batched forward replaces forward_items() alone).
 * seq_copy duplicates a sequence's GDN state and the used part of its KV
 * cache, which lets n > 1 choices share one prefill.
 */
#ifndef HY_ENGINE_FWD_MODEL_H
#define HY_ENGINE_FWD_MODEL_H

#include "engine/engine.h"
#include "model/forward.h"

typedef struct hy_fwd_model hy_fwd_model;

/* max_model_len: capacity of every sequence; max_chunk: tokens per internal
 * forward step (<= 0: default). The model must outlive the adapter. */
int hy_fwd_model_create(hy_fwd_model **out, const hy_model *m, int n_threads, int max_chunk, int max_model_len,
                        hy_err *err);
/* The same with every forward-context option (weight formats, kernel tier...). */
int hy_fwd_model_create_opts(hy_fwd_model **out, const hy_model *m, const hy_ctx_opts *o, int max_model_len,
                             hy_err *err);
void hy_fwd_model_free(hy_fwd_model *fm);
/* Fills the vtable (ctx = fm). */
void hy_fwd_model_vtable(hy_fwd_model *fm, hy_engine_model *out);
int hy_fwd_model_threads(const hy_fwd_model *fm);

#endif
