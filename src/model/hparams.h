/*
 * Text-model hyper-parameters of a qwen3_5 checkpoint, named as in HF's
 * config.json (text_config) so readers can cross-check the spec (§1).
 * Filled by io/config.c from config.json (nested multimodal or flat form);
 * immutable after load. Derived sizes are functions, never stored twice.
 */
#ifndef HY_MODEL_HPARAMS_H
#define HY_MODEL_HPARAMS_H

#include <stdbool.h>
#include <stdint.h>

#define HY_MAX_LAYERS 512

typedef enum hy_layer_type { HY_LAYER_GDN = 0, HY_LAYER_ATTN = 1 } hy_layer_type;

typedef struct hy_quant_config {
    bool present;               /* quantization_config found */
    char quant_method[32];      /* "fp8" for the official block-FP8 checkpoints */
    char fmt[32];               /* "e4m3" */
    char activation_scheme[32]; /* "dynamic" */
    int weight_block_size[2];   /* [128, 128]; 0 when absent */
    int n_modules_to_not_convert;
    char **modules_to_not_convert; /* owned; freed by hy_hparams_release */
} hy_quant_config;

typedef struct hy_hparams {
    char model_type[32];      /* top-level model_type: "qwen3_5" (or "qwen3_5_text" when flat) */
    char architecture[64];    /* architectures[0], "" if absent */
    bool nested;              /* dims came from text_config */
    char dtype[16];           /* "bfloat16" etc., "" if absent */

    int vocab_size;           /* embed/lm_head rows (padded) */
    int hidden_size;          /* D */
    int intermediate_size;    /* F */
    int num_hidden_layers;    /* L */
    hy_layer_type layer_types[HY_MAX_LAYERS]; /* [L] explicit list or derived from full_attention_interval */
    int full_attention_interval;

    /* gated full attention */
    int num_attention_heads;  /* Hq */
    int num_key_value_heads;  /* Hkv */
    int head_dim;             /* Dh */
    bool attn_output_gate;
    double rope_theta;
    double partial_rotary_factor; /* double as in Python, so int(Dh*factor) rounds the same way */
    char rope_type[32];
    int mrope_section[3];
    bool mrope_interleaved;
    int max_position_embeddings;

    /* Gated DeltaNet */
    int linear_conv_kernel_dim; /* K */
    int linear_key_head_dim;    /* dk */
    int linear_value_head_dim;  /* dv */
    int linear_num_key_heads;   /* Hk */
    int linear_num_value_heads; /* Hv */

    float rms_norm_eps;
    bool tie_word_embeddings;
    int bos_token_id, eos_token_id, pad_token_id; /* -1 when null/absent */

    int mtp_num_hidden_layers;
    bool mtp_use_dedicated_embeddings;

    hy_quant_config quant;
} hy_hparams;

void hy_hparams_release(hy_hparams *hp);

/* Derived sizes (spec §1.4). */
int hy_hp_rotary_dim(const hy_hparams *hp);     /* int(Dh * partial_rotary_factor) */
int hy_hp_gdn_key_dim(const hy_hparams *hp);    /* Hk*dk */
int hy_hp_gdn_value_dim(const hy_hparams *hp);  /* Hv*dv */
int hy_hp_gdn_conv_dim(const hy_hparams *hp);   /* 2*key_dim + value_dim */
int hy_hp_n_attn_layers(const hy_hparams *hp);
int hy_hp_n_gdn_layers(const hy_hparams *hp);
/* Text parameters (no MTP, no vision), counting lm_head once when tied. */
int64_t hy_hp_text_params(const hy_hparams *hp);
int64_t hy_hp_mtp_params(const hy_hparams *hp);
/* KV bytes per token over all attention layers for an element size (2 = bf16). */
int64_t hy_hp_kv_bytes_per_token(const hy_hparams *hp, int elem_bytes);
/* fp32 recurrent state bytes per sequence over all GDN layers. */
int64_t hy_hp_gdn_state_bytes(const hy_hparams *hp);
/* conv state bytes per sequence over all GDN layers for an element size. */
int64_t hy_hp_gdn_conv_bytes(const hy_hparams *hp, int elem_bytes);
/* Parameters of one decoder layer of the given type (norms included). */
int64_t hy_hp_layer_params(const hy_hparams *hp, hy_layer_type t);
/* True when every derived size above fits in int64 with room to spare
 * (config.c rejects configs for which this is false, so the functions above
 * never overflow on a loaded config). */
bool hy_hp_sizes_fit(const hy_hparams *hp);
/* "linear_attention" / "full_attention" (HF spelling). */
const char *hy_layer_type_name(hy_layer_type t);

#endif
