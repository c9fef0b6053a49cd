/*
 * Weight binding for qwen3_5 (spec §2): maps checkpoint tensor names to the
 * slots the forward pass reads. Accepts both prefixes (`model.language_model.*`
 * multimodal, `model.*` text-only), `lm_head.weight` or tied embeddings, keeps
 * `mtp.*` (and `model.mtp.*`), skips `model.visual.*` / `visual.*`.
 * Every expected tensor must be present with the spec's shape; otherwise
 * binding fails naming tensor, expected and found shape. The audit variant
 * collects every problem instead of stopping at the first (for `hyla inspect`).
 * Slots are views (hy_tensor) into the model's safetensors mmaps.
 */
#ifndef HY_MODEL_WEIGHTS_H
#define HY_MODEL_WEIGHTS_H

#include "base/tensor.h"
#include "model/hparams.h"

#include <stdbool.h>

typedef struct hy_layer_weights {
    hy_layer_type type;
    hy_tensor input_layernorm;          /* [D] zero-centred (1+w) */
    hy_tensor post_attention_layernorm; /* [D] zero-centred */

    /* full attention (type == HY_LAYER_ATTN) */
    hy_tensor q_proj; /* [2*Hq*Dh, D], per-head interleaved (query, gate) */
    hy_tensor k_proj; /* [Hkv*Dh, D] */
    hy_tensor v_proj; /* [Hkv*Dh, D] */
    hy_tensor o_proj; /* [D, Hq*Dh] */
    hy_tensor q_norm; /* [Dh] zero-centred */
    hy_tensor k_norm; /* [Dh] zero-centred */

    /* Gated DeltaNet (type == HY_LAYER_GDN) */
    hy_tensor in_proj_qkv; /* [2*Hk*dk + Hv*dv, D] rows q | k | v */
    hy_tensor in_proj_z;   /* [Hv*dv, D] */
    hy_tensor in_proj_b;   /* [Hv, D] */
    hy_tensor in_proj_a;   /* [Hv, D] */
    hy_tensor conv1d;      /* [conv_dim, 1, K] */
    hy_tensor A_log;       /* [Hv] */
    hy_tensor dt_bias;     /* [Hv] */
    hy_tensor norm;        /* [dv] plain scale (NOT 1+w) */
    hy_tensor out_proj;    /* [D, Hv*dv] */

    /* SwiGLU MLP */
    hy_tensor gate_proj; /* [F, D] */
    hy_tensor up_proj;   /* [F, D] */
    hy_tensor down_proj; /* [D, F] */
} hy_layer_weights;

typedef struct hy_weights {
    hy_tensor embed_tokens; /* [vocab, D] */
    hy_tensor norm;         /* [D] final norm, zero-centred */
    hy_tensor lm_head;      /* [vocab, D]; same view as embed_tokens when tied */
    bool lm_head_tied;
    hy_layer_weights *layers; /* [num_hidden_layers], owned by the model */

    bool has_mtp;
    hy_tensor mtp_fc;                     /* [D, 2D] */
    hy_tensor mtp_pre_fc_norm_embedding;  /* [D] */
    hy_tensor mtp_pre_fc_norm_hidden;     /* [D] */
    hy_tensor mtp_norm;                   /* [D] */
    hy_layer_weights mtp_layer;           /* full-attention layer */
} hy_weights;

#endif
