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

#include "base/error.h"
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

    /* fp8 checkpoints: the `<name>_scale_inv` views that slots' scale_inv
     * fields point to ([n_scale_views], owned, never reallocated after bind). */
    hy_tensor *scale_views;
    int n_scale_views;
} hy_weights;

typedef struct hy_st_set hy_st_set; /* io/safetensors.h */

/* Binds every tensor of a qwen3_5 checkpoint into w (views into st, which must
 * outlive w). Strict: the first missing, mis-shaped, wrongly typed or
 * unexpected tensor fails the call with a message naming the tensor, the
 * expected and the found shape/dtype. Vision tensors are skipped (one info
 * line); MTP tensors are bound when hp->mtp_num_hidden_layers == 1 and the
 * files carry them (has_mtp), skipped otherwise. */
int hy_weights_bind(hy_weights *w, const hy_hparams *hp, const hy_st_set *st, hy_err *err);
void hy_weights_release(hy_weights *w);

/* ---- audit (hyla inspect): every problem instead of the first ---- */
typedef enum hy_wprob_kind {
    HY_WPROB_MISSING = 0, /* expected tensor absent */
    HY_WPROB_UNEXPECTED,  /* tensor in the files that no slot takes */
    HY_WPROB_SHAPE,       /* present with another shape */
    HY_WPROB_DTYPE,       /* dtype not usable for this slot (or fp8 without usable scales) */
    HY_WPROB_LAYOUT,      /* data not aligned to its element size */
    HY_WPROB_COUNT
} hy_wprob_kind;

typedef struct hy_wprob {
    hy_wprob_kind kind;
    char *name;   /* tensor name (owned) */
    char *detail; /* "expected [96, 48], found [48, 96]" (owned) */
} hy_wprob;

typedef struct hy_weights_audit {
    char text_prefix[32];     /* "model.language_model." or "model." */
    char mtp_prefix[16];      /* "mtp." / "model.mtp." or "" when none in the files */
    bool lm_head_tied;
    bool mtp_bound;           /* MTP tensors were checked as slots */
    int n_files;              /* safetensors files (0: no weights at all) */
    int n_tensors;            /* tensors in the files */
    int n_expected, n_found;  /* text (+MTP when bound) slots; found = present, any shape */
    int n_visual;             /* skipped vision tensors */
    int n_mtp_skipped;        /* MTP tensors present but not bound */
    int n_scale_inv;          /* fp8 scale companions attached */
    int64_t numel_text;       /* elements of found text tensors (tied lm_head once) */
    int64_t numel_mtp;
    int64_t dtype_tensors[HY_DTYPE_COUNT]; /* over every tensor in the files */
    int64_t dtype_bytes[HY_DTYPE_COUNT];
    int n_kind[HY_WPROB_COUNT];
    hy_wprob *probs;
    int n_probs, cap_probs;
} hy_weights_audit;

/* Fills a (release with hy_weights_audit_release). st may be NULL (no weight
 * files): every expected tensor is then reported missing. Returns nonzero
 * only for allocation failure; problems are data, in a->probs. */
int hy_weights_audit_run(hy_weights_audit *a, const hy_hparams *hp, const hy_st_set *st, hy_err *err);
void hy_weights_audit_release(hy_weights_audit *a);
bool hy_weights_audit_ok(const hy_weights_audit *a);
const char *hy_wprob_kind_name(hy_wprob_kind k);

#endif
