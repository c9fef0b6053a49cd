/*
 * Synthetic checkpoints with real shapes: writes a complete HF checkpoint directory
 * (config.json in the real nested Qwen3.5/3.6 form, generation_config.json, model.safetensors
 * or shards + model.safetensors.index.json) filled with seeded random weights of realistic
 * scale, streaming tensor data to disk so memory stays small whatever the model size.
 *
 * Values (per tensor, from a counter-based generator keyed on seed and tensor name, so a
 * tensor's contents do not depend on sharding or order): linear and embedding weights
 * ~N(0, 0.02) (sum-of-4-uniforms approximation), zero-centred (1+w) norms ~N(0, 0.1), the
 * plain GDN output norm ~1+N(0, 0.1), A_log = log(U(1,16)), dt_bias ~ U(-1,1), conv1d
 * ~N(0, 0.3). FP8 mode: the big linear weights (GDN in_proj_qkv/in_proj_z/out_proj,
 * attention q/k/v/o, MLP gate/up/down, and those of the MTP layer) are F8_E4M3 with a
 * `<name>_scale_inv` F32 tensor per 128x128 block, as the official Qwen FP8 releases; the
 * embedding, lm_head, conv1d, in_proj_a/b, A_log, dt_bias, norms and mtp.fc stay BF16/F32
 * (listed in quantization_config.modules_to_not_convert). The vision tower and tokenizer
 * files are not written.
 * Single-threaded; no globals.
 */
#ifndef HY_MODEL_RANDOM_MODEL_H
#define HY_MODEL_RANDOM_MODEL_H

#include "base/error.h"
#include "model/shapes.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct hy_random_model_opts {
    const char *out_dir;           /* created if missing (one level of parents too) */
    const hy_model_shape *shape;
    bool fp8;                      /* block-FP8 big linears (else BF16 everywhere) */
    uint64_t seed;
    uint64_t max_shard_bytes;      /* 0: 2 GiB. Data bytes per shard before starting a new one */
    bool config_only;              /* write only config.json and generation_config.json */
    bool force;                    /* overwrite an existing checkpoint in out_dir */
    /* optional progress callback: data bytes written so far of total */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} hy_random_model_opts;

typedef struct hy_random_model_stats {
    int n_tensors;
    int n_shards;          /* 0 with config_only */
    uint64_t data_bytes;   /* sum of tensor bytes */
    int64_t n_params;      /* elements of every tensor except fp8 scales */
} hy_random_model_stats;

int hy_random_model_write(const hy_random_model_opts *o, hy_random_model_stats *st, hy_err *err);

#endif
