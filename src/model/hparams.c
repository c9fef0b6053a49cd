/*
 * Derived sizes of a qwen3_5 text model (spec §1.4), computed from the
 * hyper-parameters on demand so nothing is stored twice. All products go
 * through an overflow-checked accumulator: config.c asks hy_hp_sizes_fit()
 * before accepting a config, so a hostile config.json cannot make a later
 * size computation wrap around. Pure functions, thread-safe.
 */
#include "model/hparams.h"

#include <stdlib.h>

/* Checked int64 arithmetic: once a step overflows, `bad` sticks. */
typedef struct {
    bool bad;
} ck;

static int64_t ck_mul(ck *c, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        c->bad = true;
        return 0;
    }
    return r;
}

static int64_t ck_add(ck *c, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        c->bad = true;
        return 0;
    }
    return r;
}

static int64_t mul3(ck *c, int64_t a, int64_t b, int64_t d) { return ck_mul(c, ck_mul(c, a, b), d); }

void hy_hparams_release(hy_hparams *hp) {
    if (!hp) return;
    for (int i = 0; i < hp->quant.n_modules_to_not_convert; i++) free(hp->quant.modules_to_not_convert[i]);
    free(hp->quant.modules_to_not_convert);
    hp->quant.modules_to_not_convert = NULL;
    hp->quant.n_modules_to_not_convert = 0;
}

const char *hy_layer_type_name(hy_layer_type t) {
    return t == HY_LAYER_ATTN ? "full_attention" : "linear_attention";
}

int hy_hp_rotary_dim(const hy_hparams *hp) { return (int)((double)hp->head_dim * hp->partial_rotary_factor); }
int hy_hp_gdn_key_dim(const hy_hparams *hp) { return hp->linear_num_key_heads * hp->linear_key_head_dim; }
int hy_hp_gdn_value_dim(const hy_hparams *hp) { return hp->linear_num_value_heads * hp->linear_value_head_dim; }
int hy_hp_gdn_conv_dim(const hy_hparams *hp) { return 2 * hy_hp_gdn_key_dim(hp) + hy_hp_gdn_value_dim(hp); }

int hy_hp_n_attn_layers(const hy_hparams *hp) {
    int n = 0;
    for (int i = 0; i < hp->num_hidden_layers && i < HY_MAX_LAYERS; i++) n += hp->layer_types[i] == HY_LAYER_ATTN;
    return n;
}

int hy_hp_n_gdn_layers(const hy_hparams *hp) { return hp->num_hidden_layers - hy_hp_n_attn_layers(hp); }

static int64_t layer_params(ck *c, const hy_hparams *hp, hy_layer_type t) {
    int64_t D = hp->hidden_size, F = hp->intermediate_size;
    int64_t p = ck_add(c, mul3(c, 3, F, D), ck_mul(c, 2, D)); /* SwiGLU + two layer norms */
    if (t == HY_LAYER_ATTN) {
        int64_t Hq = hp->num_attention_heads, Hkv = hp->num_key_value_heads, Dh = hp->head_dim;
        p = ck_add(c, p, ck_mul(c, mul3(c, 2, Hq, Dh), D)); /* q_proj (query + gate) */
        p = ck_add(c, p, ck_mul(c, mul3(c, 2, Hkv, Dh), D)); /* k_proj, v_proj */
        p = ck_add(c, p, mul3(c, D, Hq, Dh));                 /* o_proj */
        p = ck_add(c, p, ck_mul(c, 2, Dh));                   /* q_norm, k_norm */
    } else {
        int64_t Hk = hp->linear_num_key_heads, Hv = hp->linear_num_value_heads;
        int64_t dk = hp->linear_key_head_dim, dv = hp->linear_value_head_dim, K = hp->linear_conv_kernel_dim;
        int64_t conv_dim = ck_add(c, mul3(c, 2, Hk, dk), ck_mul(c, Hv, dv));
        int64_t vdim = ck_mul(c, Hv, dv);
        p = ck_add(c, p, ck_mul(c, conv_dim, D)); /* in_proj_qkv */
        p = ck_add(c, p, ck_mul(c, vdim, D));     /* in_proj_z */
        p = ck_add(c, p, mul3(c, 2, Hv, D));      /* in_proj_b, in_proj_a */
        p = ck_add(c, p, ck_mul(c, conv_dim, K)); /* conv1d */
        p = ck_add(c, p, ck_mul(c, 2, Hv));       /* A_log, dt_bias */
        p = ck_add(c, p, dv);                     /* gated norm */
        p = ck_add(c, p, ck_mul(c, D, vdim));     /* out_proj */
    }
    return p;
}

int64_t hy_hp_layer_params(const hy_hparams *hp, hy_layer_type t) {
    ck c = {false};
    int64_t p = layer_params(&c, hp, t);
    return c.bad ? -1 : p;
}

static int64_t text_params(ck *c, const hy_hparams *hp) {
    int64_t V = hp->vocab_size, D = hp->hidden_size;
    int64_t p = ck_mul(c, V, D);
    if (!hp->tie_word_embeddings) p = ck_add(c, p, ck_mul(c, V, D));
    p = ck_add(c, p, D);
    int64_t nA = hy_hp_n_attn_layers(hp), nG = hy_hp_n_gdn_layers(hp);
    p = ck_add(c, p, ck_mul(c, nA, layer_params(c, hp, HY_LAYER_ATTN)));
    p = ck_add(c, p, ck_mul(c, nG, layer_params(c, hp, HY_LAYER_GDN)));
    return p;
}

/* fc [D, 2D] + pre_fc_norm_embedding, pre_fc_norm_hidden, norm [D] + N
 * full-attention layers; embeddings and lm_head are shared with the trunk. */
static int64_t mtp_params(ck *c, const hy_hparams *hp) {
    if (hp->mtp_num_hidden_layers <= 0) return 0;
    int64_t D = hp->hidden_size;
    int64_t p = ck_add(c, mul3(c, 2, D, D), ck_mul(c, 3, D));
    return ck_add(c, p, ck_mul(c, hp->mtp_num_hidden_layers, layer_params(c, hp, HY_LAYER_ATTN)));
}

int64_t hy_hp_text_params(const hy_hparams *hp) {
    ck c = {false};
    int64_t p = text_params(&c, hp);
    return c.bad ? -1 : p;
}

int64_t hy_hp_mtp_params(const hy_hparams *hp) {
    ck c = {false};
    int64_t p = mtp_params(&c, hp);
    return c.bad ? -1 : p;
}

static int64_t kv_bytes(ck *c, const hy_hparams *hp, int elem) {
    return ck_mul(c, mul3(c, hy_hp_n_attn_layers(hp), 2, hp->num_key_value_heads), ck_mul(c, hp->head_dim, elem));
}

static int64_t gdn_state_bytes(ck *c, const hy_hparams *hp) {
    int64_t per = mul3(c, hp->linear_num_value_heads, hp->linear_key_head_dim, hp->linear_value_head_dim);
    return mul3(c, hy_hp_n_gdn_layers(hp), per, 4);
}

static int64_t gdn_conv_bytes(ck *c, const hy_hparams *hp, int elem) {
    int64_t Hk = hp->linear_num_key_heads, Hv = hp->linear_num_value_heads;
    int64_t conv_dim = ck_add(c, mul3(c, 2, Hk, hp->linear_key_head_dim), ck_mul(c, Hv, hp->linear_value_head_dim));
    return ck_mul(c, mul3(c, hy_hp_n_gdn_layers(hp), conv_dim, hp->linear_conv_kernel_dim - 1), elem);
}

int64_t hy_hp_kv_bytes_per_token(const hy_hparams *hp, int elem_bytes) {
    ck c = {false};
    int64_t r = kv_bytes(&c, hp, elem_bytes);
    return c.bad ? -1 : r;
}

int64_t hy_hp_gdn_state_bytes(const hy_hparams *hp) {
    ck c = {false};
    int64_t r = gdn_state_bytes(&c, hp);
    return c.bad ? -1 : r;
}

int64_t hy_hp_gdn_conv_bytes(const hy_hparams *hp, int elem_bytes) {
    ck c = {false};
    int64_t r = gdn_conv_bytes(&c, hp, elem_bytes);
    return c.bad ? -1 : r;
}

bool hy_hp_sizes_fit(const hy_hparams *hp) {
    ck c = {false};
    /* x16 headroom: callers multiply these by element sizes (at most 8 bytes)
     * or add a few of them together. */
    int64_t total = ck_add(&c, text_params(&c, hp), mtp_params(&c, hp));
    (void)ck_mul(&c, total, 16);
    (void)ck_mul(&c, kv_bytes(&c, hp, 8), 16);
    (void)ck_mul(&c, gdn_state_bytes(&c, hp), 16);
    (void)ck_mul(&c, gdn_conv_bytes(&c, hp, 8), 16);
    /* per-tensor element counts must fit the int-typed row/column helpers */
    int64_t conv_dim = ck_add(&c, mul3(&c, 2, hp->linear_num_key_heads, hp->linear_key_head_dim),
                              ck_mul(&c, hp->linear_num_value_heads, hp->linear_value_head_dim));
    int64_t qdim = mul3(&c, 2, hp->num_attention_heads, hp->head_dim);
    return !c.bad && conv_dim <= INT32_MAX && qdim <= INT32_MAX;
}
