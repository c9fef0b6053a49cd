/*
 * Named model shapes for synthetic checkpoints (`hyla random-model`, benchmarks): the exact
 * hyper-parameters of real Qwen3.5/3.6 releases (spec §1.2, §1.5) and of the test fixtures,
 * expressed as the hy_hparams the loader would produce from their config.json, plus the few
 * config.json facts hy_hparams does not carry (vision tower, Qwen3.6 extras, generation
 * defaults, which GDN parameters are stored in F32).
 * Names: "qwen3.5-0.8b", "qwen3.6-27b", "qwen3.6-27b-slice:N" (the first N layers of the 27B,
 * same layer pattern, N = 1..64) and "tiny" (the dims of tests/data/models/tiny-mm).
 * Pure data; no globals beyond const tables.
 */
#ifndef HY_MODEL_SHAPES_H
#define HY_MODEL_SHAPES_H

#include "base/error.h"
#include "model/hparams.h"

#include <stdbool.h>

typedef struct hy_vision_shape { /* config.json vision_config (the tower itself is not generated) */
    int depth, hidden_size, intermediate_size, num_heads, out_hidden_size, patch_size;
    int num_position_embeddings, spatial_merge_size, temporal_patch_size;
} hy_vision_shape;

typedef struct hy_model_shape {
    char name[64];              /* canonical name as given */
    hy_hparams hp;              /* text model; hp.quant is left empty */
    bool qwen36;                /* Qwen3.6 config: text_config.output_gate_type "swish" */
    bool gdn_f32_params;        /* A_log and linear_attn.norm.weight stored as F32 (Qwen3.5 files) */
    hy_vision_shape vision;
    char transformers_version[16];
    int gen_eos[2];             /* generation_config.json eos_token_id list */
    double gen_temperature;     /* generation_config.json temperature */
} hy_model_shape;

/* Fills *s for a shape name; unknown names and out-of-range slices are HY_E_INVALID with a
 * message listing the accepted names. */
int hy_model_shape_get(hy_model_shape *s, const char *name, hy_err *err);
/* Human-readable list of accepted names, for usage messages. */
const char *hy_model_shape_names(void);

#endif
