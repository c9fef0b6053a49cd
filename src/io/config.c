/*
 * config.json parser for qwen3_5 (see config.h). Shaped as one pass over a
 * table of integer fields plus hand-written code for the fields with
 * structure (layer_types, rope, token ids, quantization). The defaults are
 * those of transformers' Qwen3_5TextConfig / RotaryEmbeddingConfigMixin:
 * what HF would build from the same file is what we build.
 * Every message starts with the file name, then the dotted field path.
 */
#include "io/config.h"

#include "io/json_util.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUPPORTED_TYPES "qwen3_5, qwen3_5_text"

/* Caps well above any real model, low enough that every product in
 * hparams.c stays far from int64 overflow and every row count fits an int. */
static const struct {
    const char *key;
    size_t off;
    int64_t def, lo, hi;
} k_int_fields[] = {
    {"vocab_size", offsetof(hy_hparams, vocab_size), 248320, 1, 1 << 26},
    {"hidden_size", offsetof(hy_hparams, hidden_size), 4096, 1, 1 << 20},
    {"intermediate_size", offsetof(hy_hparams, intermediate_size), 12288, 1, 1 << 22},
    {"num_hidden_layers", offsetof(hy_hparams, num_hidden_layers), 32, 1, HY_MAX_LAYERS},
    {"num_attention_heads", offsetof(hy_hparams, num_attention_heads), 16, 1, 1 << 14},
    {"num_key_value_heads", offsetof(hy_hparams, num_key_value_heads), 4, 1, 1 << 14},
    {"head_dim", offsetof(hy_hparams, head_dim), 256, 1, 1 << 14},
    {"max_position_embeddings", offsetof(hy_hparams, max_position_embeddings), 32768, 1, INT32_MAX},
    {"linear_conv_kernel_dim", offsetof(hy_hparams, linear_conv_kernel_dim), 4, 1, 256},
    {"linear_key_head_dim", offsetof(hy_hparams, linear_key_head_dim), 128, 1, 1 << 14},
    {"linear_value_head_dim", offsetof(hy_hparams, linear_value_head_dim), 128, 1, 1 << 14},
    {"linear_num_key_heads", offsetof(hy_hparams, linear_num_key_heads), 16, 1, 1 << 14},
    {"linear_num_value_heads", offsetof(hy_hparams, linear_num_value_heads), 32, 1, 1 << 14},
    {"mtp_num_hidden_layers", offsetof(hy_hparams, mtp_num_hidden_layers), 0, 0, 64},
};

/* A position in the document for messages. */
typedef struct {
    hy_jctx c;   /* prefix "" or "text_config." */
    hy_jctx top; /* always the root, prefix "" */
} ctx;

static int get_int_field(const hy_jctx *c, const json_t *obj, const char *key, int64_t lo, int64_t hi,
                         int64_t *out, bool *found) {
    json_t *v = json_object_get(obj, key);
    /* Friendlier than a bare range for the common "0 / -1" mistakes. */
    if (v && json_is_integer(v) && lo == 1 && json_integer_value(v) < 1)
        return hy_err_set(c->err, HY_E_RANGE, "%s: %s%s: must be a positive integer, found %lld", c->file, c->prefix,
                          key, (long long)json_integer_value(v));
    return hy_json_get_int(c, obj, key, lo, hi, out, found);
}

/* A token id: integer >= 0, null (-1), or a list whose first element is taken
 * (eos_token_id is often a list; the generation config carries the full set). */
static int get_token_id(const hy_jctx *c, const json_t *obj, const char *key, int *out) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 0;
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(v, i);
            if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > INT32_MAX)
                return hy_err_set(c->err, HY_E_INVALID, "%s: %s%s[%zu]: expected a token id (integer >= 0), found %s",
                                  c->file, c->prefix, key, i, hy_json_type_name(e));
        }
        *out = n ? (int)json_integer_value(json_array_get(v, 0)) : -1;
        return 0;
    }
    int64_t x = -1;
    int rc = hy_json_get_int(c, obj, key, 0, INT32_MAX, &x, NULL);
    if (rc) return rc;
    *out = (int)x;
    return 0;
}

static int parse_layer_types(const hy_jctx *c, const json_t *text, hy_hparams *hp) {
    json_t *lt = json_object_get(text, "layer_types");
    if (lt && !json_is_null(lt)) {
        if (!json_is_array(lt))
            return hy_err_set(c->err, HY_E_INVALID, "%s: %slayer_types: expected an array of strings, found %s",
                              c->file, c->prefix, hy_json_type_name(lt));
        size_t n = json_array_size(lt);
        if (n != (size_t)hp->num_hidden_layers)
            return hy_err_set(c->err, HY_E_INVALID,
                              "%s: %slayer_types: has %zu entries but num_hidden_layers is %d", c->file, c->prefix,
                              n, hp->num_hidden_layers);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(lt, i);
            const char *s = json_is_string(e) ? json_string_value(e) : NULL;
            if (s && !strcmp(s, "linear_attention")) hp->layer_types[i] = HY_LAYER_GDN;
            else if (s && !strcmp(s, "full_attention")) hp->layer_types[i] = HY_LAYER_ATTN;
            else if (s)
                return hy_err_set(c->err, HY_E_UNSUPPORTED,
                                  "%s: %slayer_types[%zu]: \"%.64s\" is not a known layer type "
                                  "(expected \"linear_attention\" or \"full_attention\")",
                                  c->file, c->prefix, i, s);
            else
                return hy_err_set(c->err, HY_E_INVALID, "%s: %slayer_types[%zu]: expected a string, found %s",
                                  c->file, c->prefix, i, hy_json_type_name(e));
        }
        /* HF keeps full_attention_interval only for the derivation; record
         * the explicit list's period when it has one, for display. */
        return 0;
    }
    for (int i = 0; i < hp->num_hidden_layers; i++)
        hp->layer_types[i] = (i + 1) % hp->full_attention_interval == 0 ? HY_LAYER_ATTN : HY_LAYER_GDN;
    return 0;
}

/* rope_parameters (or legacy rope_scaling) plus legacy top-level rope_theta /
 * partial_rotary_factor, with HF's priority: dict value > top-level key >
 * default (theta 10000, factor 0.25 as Qwen3_5TextConfig's BC default). */
static int parse_rope(const hy_jctx *c, const json_t *text, hy_hparams *hp) {
    int rc;
    json_t *rp = NULL, *rs = NULL;
    if ((rc = hy_json_get_obj(c, text, "rope_parameters", &rp))) return rc;
    if ((rc = hy_json_get_obj(c, text, "rope_scaling", &rs))) return rc;
    const char *dict_name = "rope_parameters";
    if (rs && json_object_size(rs) > 0) { /* HF: rope_scaling or rope_parameters */
        rp = rs;
        dict_name = "rope_scaling";
    }
    hp->rope_theta = 10000.0;
    hp->partial_rotary_factor = 0.25;
    strcpy(hp->rope_type, "default");
    hp->mrope_section[0] = 11, hp->mrope_section[1] = 11, hp->mrope_section[2] = 10;
    hp->mrope_interleaved = true; /* HF's Qwen3.5 rotary always interleaves */

    if ((rc = hy_json_get_num(c, text, "rope_theta", &hp->rope_theta, NULL))) return rc;
    if ((rc = hy_json_get_num(c, text, "partial_rotary_factor", &hp->partial_rotary_factor, NULL))) return rc;

    char pfx[96];
    snprintf(pfx, sizeof pfx, "%s%s.", c->prefix, dict_name);
    hy_jctx rc_ctx = {c->file, pfx, c->err};
    if (rp) {
        const hy_jctx *r = &rc_ctx;
        if ((rc = hy_json_get_num(r, rp, "rope_theta", &hp->rope_theta, NULL))) return rc;
        if ((rc = hy_json_get_num(r, rp, "partial_rotary_factor", &hp->partial_rotary_factor, NULL))) return rc;
        bool found = false;
        if ((rc = hy_json_get_str(r, rp, "rope_type", hp->rope_type, sizeof hp->rope_type, &found))) return rc;
        if (!found && (rc = hy_json_get_str(r, rp, "type", hp->rope_type, sizeof hp->rope_type, NULL))) return rc;
        if ((rc = hy_json_get_bool(r, rp, "mrope_interleaved", &hp->mrope_interleaved, NULL))) return rc;
        json_t *ms = json_object_get(rp, "mrope_section");
        if (ms && !json_is_null(ms)) {
            if (!json_is_array(ms) || json_array_size(ms) != 3)
                return hy_err_set(c->err, HY_E_INVALID,
                                  "%s: %smrope_section: expected an array of 3 integers, found %s", c->file, pfx,
                                  json_is_array(ms) ? "an array of another length" : hy_json_type_name(ms));
            for (int i = 0; i < 3; i++) {
                json_t *e = json_array_get(ms, (size_t)i);
                if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > (1 << 14))
                    return hy_err_set(c->err, HY_E_INVALID,
                                      "%s: %smrope_section[%d]: expected an integer in [0, 16384]", c->file, pfx, i);
                hp->mrope_section[i] = (int)json_integer_value(e);
            }
        }
    }
    if (strcmp(hp->rope_type, "default") != 0)
        return hy_err_set(c->err, HY_E_UNSUPPORTED, "%s: %srope_type: \"%s\" is not supported (supported: default)",
                          c->file, rp ? pfx : c->prefix, hp->rope_type);
    if (!(hp->rope_theta > 0))
        return hy_err_set(c->err, HY_E_RANGE, "%s: %srope_theta: must be positive, found %g", c->file,
                          rp ? pfx : c->prefix, hp->rope_theta);
    if (!(hp->partial_rotary_factor > 0 && hp->partial_rotary_factor <= 1))
        return hy_err_set(c->err, HY_E_RANGE, "%s: %spartial_rotary_factor: %g is outside (0, 1]", c->file,
                          rp ? pfx : c->prefix, hp->partial_rotary_factor);
    int rd = hy_hp_rotary_dim(hp);
    if (rd < 2 || rd % 2)
        return hy_err_set(c->err, HY_E_INVALID,
                          "%s: %spartial_rotary_factor: head_dim (%d) x %g = %d rotary dims, which must be even "
                          "and at least 2",
                          c->file, rp ? pfx : c->prefix, hp->head_dim, hp->partial_rotary_factor, rd);
    return 0;
}

static int parse_quant(const ctx *x, const json_t *root, hy_hparams *hp) {
    json_t *q = NULL;
    int rc = hy_json_get_obj(&x->top, root, "quantization_config", &q);
    if (rc || !q) return rc;
    hy_quant_config *qc = &hp->quant;
    qc->present = true;
    hy_jctx c = {x->top.file, "quantization_config.", x->top.err};
    if ((rc = hy_json_get_str(&c, q, "quant_method", qc->quant_method, sizeof qc->quant_method, NULL))) return rc;
    if ((rc = hy_json_get_str(&c, q, "fmt", qc->fmt, sizeof qc->fmt, NULL))) return rc;
    if ((rc = hy_json_get_str(&c, q, "activation_scheme", qc->activation_scheme, sizeof qc->activation_scheme, NULL)))
        return rc;
    if (strcmp(qc->quant_method, "fp8") != 0)
        return hy_err_set(c.err, HY_E_UNSUPPORTED,
                          "%s: quantization_config.quant_method: \"%s\" is not supported (supported: fp8)", c.file,
                          qc->quant_method);
    if (qc->fmt[0] && strcmp(qc->fmt, "e4m3") != 0)
        return hy_err_set(c.err, HY_E_UNSUPPORTED,
                          "%s: quantization_config.fmt: \"%s\" is not supported (supported: e4m3)", c.file, qc->fmt);
    json_t *bs = json_object_get(q, "weight_block_size");
    if (bs && !json_is_null(bs)) {
        if (!json_is_array(bs) || json_array_size(bs) != 2)
            return hy_err_set(c.err, HY_E_INVALID,
                              "%s: quantization_config.weight_block_size: expected an array of 2 positive integers",
                              c.file);
        for (int i = 0; i < 2; i++) {
            json_t *e = json_array_get(bs, (size_t)i);
            if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > (1 << 20))
                return hy_err_set(c.err, HY_E_INVALID,
                                  "%s: quantization_config.weight_block_size[%d]: expected a positive integer", c.file,
                                  i);
            qc->weight_block_size[i] = (int)json_integer_value(e);
        }
    }
    json_t *m = json_object_get(q, "modules_to_not_convert");
    if (m && !json_is_null(m)) {
        if (!json_is_array(m))
            return hy_err_set(c.err, HY_E_INVALID,
                              "%s: quantization_config.modules_to_not_convert: expected an array of strings, found %s",
                              c.file, hy_json_type_name(m));
        size_t n = json_array_size(m);
        if (n > 1000000)
            return hy_err_set(c.err, HY_E_RANGE, "%s: quantization_config.modules_to_not_convert: too many entries",
                              c.file);
        qc->modules_to_not_convert = calloc(n ? n : 1, sizeof(char *));
        if (!qc->modules_to_not_convert) return hy_err_set(c.err, HY_E_NOMEM, "%s: out of memory", c.file);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(m, i);
            if (!json_is_string(e))
                return hy_err_set(c.err, HY_E_INVALID,
                                  "%s: quantization_config.modules_to_not_convert[%zu]: expected a string, found %s",
                                  c.file, i, hy_json_type_name(e));
            qc->modules_to_not_convert[i] = strdup(json_string_value(e));
            if (!qc->modules_to_not_convert[i]) return hy_err_set(c.err, HY_E_NOMEM, "%s: out of memory", c.file);
            qc->n_modules_to_not_convert = (int)i + 1;
        }
    }
    return 0;
}

/* Settings HF's qwen3_5 code reads but which we only implement one way. */
static int check_fixed_fields(const hy_jctx *c, const json_t *text) {
    bool b = false, found = false;
    int rc = hy_json_get_bool(c, text, "attention_bias", &b, NULL);
    if (rc) return rc;
    if (b)
        return hy_err_set(c->err, HY_E_UNSUPPORTED, "%s: %sattention_bias: true is not supported (qwen3_5 has none)",
                          c->file, c->prefix);
    char act[32] = "";
    if ((rc = hy_json_get_str(c, text, "hidden_act", act, sizeof act, &found))) return rc;
    if (found && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
        return hy_err_set(c->err, HY_E_UNSUPPORTED, "%s: %shidden_act: \"%s\" is not supported (supported: silu)",
                          c->file, c->prefix, act);
    return 0;
}

static int check_consistency(const hy_jctx *c, hy_hparams *hp) {
    if (hp->num_attention_heads % hp->num_key_value_heads)
        return hy_err_set(c->err, HY_E_INVALID, "%s: %snum_attention_heads: %d is not a multiple of num_key_value_heads (%d)",
                          c->file, c->prefix, hp->num_attention_heads, hp->num_key_value_heads);
    if (hp->linear_num_value_heads % hp->linear_num_key_heads)
        return hy_err_set(c->err, HY_E_INVALID,
                          "%s: %slinear_num_value_heads: %d is not a multiple of linear_num_key_heads (%d)", c->file,
                          c->prefix, hp->linear_num_value_heads, hp->linear_num_key_heads);
    if (!(hp->rms_norm_eps > 0 && hp->rms_norm_eps < 1))
        return hy_err_set(c->err, HY_E_RANGE, "%s: %srms_norm_eps: %g is outside (0, 1)", c->file, c->prefix,
                          (double)hp->rms_norm_eps);
    if (!hy_hp_sizes_fit(hp))
        return hy_err_set(c->err, HY_E_RANGE,
                          "%s: %shidden_size/intermediate_size/heads: the model's sizes overflow 64-bit arithmetic",
                          c->file, c->prefix);
    return 0;
}

static int parse_root(hy_hparams *hp, const json_t *root, const char *name, hy_err *err) {
    ctx x = {{name, "", err}, {name, "", err}};
    int rc;
    if (!json_is_object(root))
        return hy_err_set(err, HY_E_INVALID, "%s: expected a JSON object at the top level, found %s", name,
                          hy_json_type_name(root));
    bool found = false;
    if ((rc = hy_json_get_str(&x.top, root, "model_type", hp->model_type, sizeof hp->model_type, &found))) return rc;
    if (!found)
        return hy_err_set(err, HY_E_INVALID, "%s: model_type: missing (supported: " SUPPORTED_TYPES ")", name);
    if (strcmp(hp->model_type, "qwen3_5") && strcmp(hp->model_type, "qwen3_5_text"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: model_type: \"%s\" is not supported (supported: " SUPPORTED_TYPES
                          ")", name, hp->model_type);

    json_t *arch = json_object_get(root, "architectures");
    if (arch && !json_is_null(arch)) {
        if (!json_is_array(arch))
            return hy_err_set(err, HY_E_INVALID, "%s: architectures: expected an array of strings, found %s", name,
                              hy_json_type_name(arch));
        json_t *a0 = json_array_get(arch, 0);
        if (a0 && !json_is_string(a0))
            return hy_err_set(err, HY_E_INVALID, "%s: architectures[0]: expected a string, found %s", name,
                              hy_json_type_name(a0));
        if (a0) snprintf(hp->architecture, sizeof hp->architecture, "%s", json_string_value(a0));
    }

    const json_t *text = root;
    json_t *tc = NULL;
    if (!strcmp(hp->model_type, "qwen3_5")) {
        if ((rc = hy_json_get_obj(&x.top, root, "text_config", &tc))) return rc;
    }
    if (tc) {
        text = tc;
        hp->nested = true;
        x.c.prefix = "text_config.";
        char sub[32] = "";
        if ((rc = hy_json_get_str(&x.c, tc, "model_type", sub, sizeof sub, &found))) return rc;
        if (found && strcmp(sub, "qwen3_5_text") != 0)
            return hy_err_set(err, HY_E_UNSUPPORTED,
                              "%s: text_config.model_type: \"%s\" is not supported (supported: qwen3_5_text)", name,
                              sub);
    }
    const hy_jctx *c = &x.c;

    for (size_t i = 0; i < sizeof k_int_fields / sizeof k_int_fields[0]; i++) {
        int64_t v = k_int_fields[i].def;
        if ((rc = get_int_field(c, text, k_int_fields[i].key, k_int_fields[i].lo, k_int_fields[i].hi, &v, NULL)))
            return rc;
        *(int *)((char *)hp + k_int_fields[i].off) = (int)v;
    }
    int64_t fai = 4;
    if ((rc = get_int_field(c, text, "full_attention_interval", 1, HY_MAX_LAYERS, &fai, NULL))) return rc;
    hp->full_attention_interval = (int)fai;
    if ((rc = parse_layer_types(c, text, hp))) return rc;

    hp->attn_output_gate = true;
    if ((rc = hy_json_get_bool(c, text, "attn_output_gate", &hp->attn_output_gate, NULL))) return rc;
    double eps = 1e-6;
    if ((rc = hy_json_get_num(c, text, "rms_norm_eps", &eps, NULL))) return rc;
    hp->rms_norm_eps = (float)eps;
    if ((rc = hy_json_get_bool(c, text, "mtp_use_dedicated_embeddings", &hp->mtp_use_dedicated_embeddings, NULL)))
        return rc;
    if ((rc = check_fixed_fields(c, text))) return rc;
    if ((rc = parse_rope(c, text, hp))) return rc;

    /* HF ties by the config of the model class it instantiates: the wrapper's
     * top-level key for the multimodal form. Fall back to text_config's copy
     * only when the top level does not say. */
    hp->tie_word_embeddings = false;
    if ((rc = hy_json_get_bool(&x.top, root, "tie_word_embeddings", &hp->tie_word_embeddings, &found))) return rc;
    if (!found && tc && (rc = hy_json_get_bool(c, tc, "tie_word_embeddings", &hp->tie_word_embeddings, NULL)))
        return rc;

    hp->bos_token_id = hp->eos_token_id = hp->pad_token_id = -1;
    static const char *const id_keys[3] = {"bos_token_id", "eos_token_id", "pad_token_id"};
    int *id_slots[3] = {&hp->bos_token_id, &hp->eos_token_id, &hp->pad_token_id};
    for (int i = 0; i < 3; i++) {
        /* the text config's value wins; the wrapper's is a fallback */
        if (tc && json_object_get(tc, id_keys[i])) rc = get_token_id(c, tc, id_keys[i], id_slots[i]);
        else rc = get_token_id(&x.top, root, id_keys[i], id_slots[i]);
        if (rc) return rc;
    }

    if ((rc = hy_json_get_str(c, text, "dtype", hp->dtype, sizeof hp->dtype, &found))) return rc;
    if (!found && tc && (rc = hy_json_get_str(&x.top, root, "dtype", hp->dtype, sizeof hp->dtype, &found))) return rc;
    if (!found && (rc = hy_json_get_str(&x.top, root, "torch_dtype", hp->dtype, sizeof hp->dtype, &found))) return rc;

    if ((rc = parse_quant(&x, root, hp))) return rc;
    return check_consistency(c, hp);
}

int hy_config_parse(hy_hparams *hp, const char *buf, size_t len, const char *name, hy_err *err) {
    memset(hp, 0, sizeof *hp);
    json_t *root = NULL;
    int rc = hy_json_parse(&root, buf, len, name, err);
    if (rc) return rc;
    rc = parse_root(hp, root, name, err);
    json_decref(root);
    if (rc) {
        hy_hparams_release(hp);
        memset(hp, 0, sizeof *hp);
    }
    return rc;
}

int hy_config_load(hy_hparams *hp, const char *path, hy_err *err) {
    memset(hp, 0, sizeof *hp);
    json_t *root = NULL;
    int rc = hy_json_load_file(&root, path, HY_CONFIG_MAX_BYTES, err);
    if (rc) return rc;
    rc = parse_root(hp, root, path, err);
    json_decref(root);
    if (rc) {
        hy_hparams_release(hp);
        memset(hp, 0, sizeof *hp);
    }
    return rc;
}
