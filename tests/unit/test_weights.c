/* model/weights + model/model: binding of a tiny qwen3_5 checkpoint that the
 * test writes itself (both prefixes, tied/untied, MTP, vision, fp8 scales),
 * one case per binding error, the audit, and every fixture model present
 * under tests/data/models/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "io/config.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/weights.h"
#include "st_writer.h"
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Tiny dims: D 16, F 24, vocab 64, 4 layers (G G G A), Hq 4 / Hkv 2 x 8,
 * Hk 2 / Hv 4 x 8 (conv_dim 64), K 4. */
enum { V = 64, D = 16, F = 24, L = 4, HQ = 4, HKV = 2, DH = 8, HK = 2, HV = 4, DK = 8, DV = 8, K = 4 };
#define CONV (2 * HK * DK + HV * DV)

typedef struct ckpt_opts {
    const char *prefix;     /* "model.language_model." or "model." */
    const char *mtp_prefix; /* NULL: no MTP tensors */
    bool lm_head;
    bool visual;
    hy_dtype dt;
} ckpt_opts;

static void add_layer(stw *w, const char *p, bool attn, hy_dtype dt) {
    char n[256];
#define N(s) (snprintf(n, sizeof n, "%s%s", p, s), n)
    STW_ADD(w, N("input_layernorm.weight"), dt, D);
    STW_ADD(w, N("post_attention_layernorm.weight"), dt, D);
    if (attn) {
        STW_ADD(w, N("self_attn.q_proj.weight"), dt, 2 * HQ * DH, D);
        STW_ADD(w, N("self_attn.k_proj.weight"), dt, HKV * DH, D);
        STW_ADD(w, N("self_attn.v_proj.weight"), dt, HKV * DH, D);
        STW_ADD(w, N("self_attn.o_proj.weight"), dt, D, HQ * DH);
        STW_ADD(w, N("self_attn.q_norm.weight"), dt, DH);
        STW_ADD(w, N("self_attn.k_norm.weight"), dt, DH);
    } else {
        STW_ADD(w, N("linear_attn.in_proj_qkv.weight"), dt, CONV, D);
        STW_ADD(w, N("linear_attn.in_proj_z.weight"), dt, HV * DV, D);
        STW_ADD(w, N("linear_attn.in_proj_b.weight"), dt, HV, D);
        STW_ADD(w, N("linear_attn.in_proj_a.weight"), dt, HV, D);
        STW_ADD(w, N("linear_attn.conv1d.weight"), dt, CONV, 1, K);
        STW_ADD(w, N("linear_attn.A_log"), HY_DTYPE_F32, HV);
        STW_ADD(w, N("linear_attn.dt_bias"), dt, HV);
        STW_ADD(w, N("linear_attn.norm.weight"), HY_DTYPE_F32, DV);
        STW_ADD(w, N("linear_attn.out_proj.weight"), dt, D, HV * DV);
    }
    STW_ADD(w, N("mlp.gate_proj.weight"), dt, F, D);
    STW_ADD(w, N("mlp.up_proj.weight"), dt, F, D);
    STW_ADD(w, N("mlp.down_proj.weight"), dt, D, F);
#undef N
}

static stw *make_ckpt(const ckpt_opts *o) {
    stw *w = stw_new();
    char n[256];
    snprintf(n, sizeof n, "%sembed_tokens.weight", o->prefix);
    STW_ADD(w, n, o->dt, V, D);
    for (int i = 0; i < L; i++) {
        char p[128];
        snprintf(p, sizeof p, "%slayers.%d.", o->prefix, i);
        add_layer(w, p, i == 3, o->dt);
    }
    snprintf(n, sizeof n, "%snorm.weight", o->prefix);
    STW_ADD(w, n, o->dt, D);
    if (o->lm_head) STW_ADD(w, "lm_head.weight", o->dt, V, D);
    if (o->mtp_prefix) {
        const char *m = o->mtp_prefix;
        snprintf(n, sizeof n, "%sfc.weight", m), STW_ADD(w, n, o->dt, D, 2 * D);
        snprintf(n, sizeof n, "%spre_fc_norm_embedding.weight", m), STW_ADD(w, n, o->dt, D);
        snprintf(n, sizeof n, "%spre_fc_norm_hidden.weight", m), STW_ADD(w, n, o->dt, D);
        snprintf(n, sizeof n, "%snorm.weight", m), STW_ADD(w, n, o->dt, D);
        char p[64];
        snprintf(p, sizeof p, "%slayers.0.", m);
        add_layer(w, p, true, o->dt);
    }
    if (o->visual) {
        STW_ADD(w, "model.visual.patch_embed.proj.weight", o->dt, 8, 3, 2, 2, 2);
        STW_ADD(w, "model.visual.blocks.0.norm1.weight", o->dt, 8);
    }
    return w;
}

static char *config_json(bool nested, bool tied, int mtp, const char *extra_top) {
    static const char *text_fmt =
        "\"vocab_size\": %d, \"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d,"
        " \"layer_types\": [\"linear_attention\", \"linear_attention\", \"linear_attention\", \"full_attention\"],"
        " \"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d,"
        " \"linear_num_key_heads\": %d, \"linear_num_value_heads\": %d, \"linear_key_head_dim\": %d,"
        " \"linear_value_head_dim\": %d, \"linear_conv_kernel_dim\": %d, \"mtp_num_hidden_layers\": %d,"
        " \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000, \"partial_rotary_factor\": 0.5}";
    char text[2048];
    snprintf(text, sizeof text, text_fmt, V, D, F, L, HQ, HKV, DH, HK, HV, DK, DV, K, mtp);
    char *out = malloc(4096);
    if (nested)
        snprintf(out, 4096,
                 "{\"model_type\": \"qwen3_5\", \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],"
                 " \"tie_word_embeddings\": %s%s, \"text_config\": {\"model_type\": \"qwen3_5_text\", %s},"
                 " \"vision_config\": {\"depth\": 1}}",
                 tied ? "true" : "false", extra_top ? extra_top : "", text);
    else
        snprintf(out, 4096, "{\"model_type\": \"qwen3_5_text\", \"tie_word_embeddings\": %s%s, %s}",
                 tied ? "true" : "false", extra_top ? extra_top : "", text);
    return out;
}

/* A checkpoint directory with config.json and model.safetensors. */
static char *write_dir(const stw *w, const char *config) {
    char *dir = stw_tmpdir();
    char *p = stw_path(dir, "config.json");
    assert_int_equal(stw_write_text(p, config), 0);
    free(p);
    p = stw_path(dir, "model.safetensors");
    assert_int_equal(stw_write(w, p), 0);
    free(p);
    return dir;
}

static int load(const stw *w, const char *config, hy_model **m, hy_err *err) {
    char *dir = write_dir(w, config);
    int rc = hy_model_load(m, dir, err);
    stw_rmdir(dir); /* mappings survive the unlink */
    return rc;
}

static void expect_load_error(const stw *w, const char *config, const char *want) {
    hy_model *m = NULL;
    hy_err err = {0};
    int rc = load(w, config, &m, &err);
    if (rc == 0 || !strstr(err.msg, want)) fprintf(stderr, "rc %d: \"%s\"\nwanted \"%s\"\n", rc, err.msg, want);
    assert_int_not_equal(rc, 0);
    assert_null(m);
    assert_non_null(strstr(err.msg, want));
    assert_null(strchr(err.msg, '\n'));
}

static void audit(const stw *w, const char *config, hy_weights_audit *a) {
    char *dir = write_dir(w, config);
    hy_hparams hp;
    hy_err err = {0};
    char *cp = stw_path(dir, "config.json");
    assert_int_equal(hy_config_load(&hp, cp, &err), 0);
    hy_st_set *s = NULL;
    assert_int_equal(hy_st_open_dir(&s, dir, &err), 0);
    assert_int_equal(hy_weights_audit_run(a, &hp, s, &err), 0);
    hy_st_free(s);
    hy_hparams_release(&hp);
    free(cp);
    stw_rmdir(dir);
}

static void test_multimodal_untied_mtp_visual(void **st) {
    (void)st;
    ckpt_opts o = {"model.language_model.", "mtp.", true, true, HY_DTYPE_BF16};
    stw *w = make_ckpt(&o);
    char *cfg = config_json(true, false, 1, NULL);
    hy_model *m = NULL;
    hy_err err = {0};
    int rc = load(w, cfg, &m, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    const hy_weights *ww = &m->w;
    assert_string_equal(ww->embed_tokens.name, "model.language_model.embed_tokens.weight");
    assert_int_equal(ww->embed_tokens.shape[0], V);
    assert_false(ww->lm_head_tied);
    assert_string_equal(ww->lm_head.name, "lm_head.weight");
    assert_ptr_not_equal(ww->lm_head.data, ww->embed_tokens.data);
    assert_int_equal(ww->layers[0].type, HY_LAYER_GDN);
    assert_int_equal(ww->layers[3].type, HY_LAYER_ATTN);
    assert_int_equal(ww->layers[3].q_proj.shape[0], 2 * HQ * DH);
    assert_int_equal(ww->layers[1].conv1d.ndim, 3);
    assert_int_equal(ww->layers[1].conv1d.shape[0], CONV);
    assert_int_equal(ww->layers[1].conv1d.shape[1], 1);
    assert_int_equal(ww->layers[1].conv1d.shape[2], K);
    assert_int_equal(ww->layers[2].A_log.dtype, HY_DTYPE_F32);
    assert_int_equal(ww->layers[2].in_proj_b.dtype, HY_DTYPE_BF16);
    assert_null(ww->layers[3].in_proj_qkv.data); /* attention layer has no GDN slots */
    assert_true(ww->has_mtp);
    assert_string_equal(ww->mtp_fc.name, "mtp.fc.weight");
    assert_int_equal(ww->mtp_fc.shape[1], 2 * D);
    assert_string_equal(ww->mtp_layer.o_proj.name, "mtp.layers.0.self_attn.o_proj.weight");
    assert_int_equal(ww->mtp_layer.type, HY_LAYER_ATTN);
    /* the view points at the bytes written for that tensor */
    const stw_tensor *t = stw_get(w, "model.language_model.layers.2.mlp.up_proj.weight");
    int idx = (int)(t - w->t);
    const unsigned char *d = ww->layers[2].up_proj.data;
    for (int j = 0; j < 16; j++) assert_int_equal(d[j], (idx * 31 + j) & 0xff);
    hy_model_free(m);

    hy_weights_audit a;
    audit(w, cfg, &a);
    assert_true(hy_weights_audit_ok(&a));
    assert_int_equal(a.n_visual, 2);
    assert_true(a.mtp_bound);
    assert_int_equal(a.n_expected, 1 + 3 * 14 + 11 + 1 + 1 + 4 + 11);
    assert_int_equal(a.n_found, a.n_expected);
    assert_int_equal(a.n_tensors, w->n);
    assert_string_equal(a.text_prefix, "model.language_model.");
    hy_hparams hp;
    assert_int_equal(hy_config_parse(&hp, cfg, strlen(cfg), "config.json", &err), 0);
    assert_true(a.numel_text == hy_hp_text_params(&hp));
    assert_true(a.numel_mtp == hy_hp_mtp_params(&hp));
    assert_int_equal(a.dtype_tensors[HY_DTYPE_F32], 6); /* A_log + norm of 3 GDN layers */
    assert_int_equal(a.dtype_tensors[HY_DTYPE_BF16], w->n - 6);
    hy_hparams_release(&hp);
    hy_weights_audit_release(&a);
    free(cfg);
    free(w);
}

static void test_text_tied(void **st) {
    (void)st;
    ckpt_opts o = {"model.", NULL, false, false, HY_DTYPE_F32};
    stw *w = make_ckpt(&o);
    char *cfg = config_json(false, true, 1, NULL); /* MTP declared but not shipped: fine */
    hy_model *m = NULL;
    hy_err err = {0};
    assert_int_equal(load(w, cfg, &m, &err), 0);
    assert_true(m->w.lm_head_tied);
    assert_ptr_equal(m->w.lm_head.data, m->w.embed_tokens.data);
    assert_int_equal(m->w.lm_head.shape[0], V);
    assert_false(m->w.has_mtp);
    assert_string_equal(m->w.layers[0].input_layernorm.name, "model.layers.0.input_layernorm.weight");
    hy_model_free(m);
    /* tied, but the file also has lm_head.weight: HF ties anyway */
    STW_ADD(w, "lm_head.weight", HY_DTYPE_F32, V, D);
    assert_int_equal(load(w, cfg, &m, &err), 0);
    assert_ptr_equal(m->w.lm_head.data, m->w.embed_tokens.data);
    hy_model_free(m);
    free(cfg);
    /* untied without lm_head.weight */
    stw_remove(w, "lm_head.weight");
    cfg = config_json(false, false, 0, NULL);
    expect_load_error(w, cfg, "tensor \"lm_head.weight\" is missing (tie_word_embeddings is false; expected shape [64, 16])");
    free(cfg);
    free(w);
}

static void test_binding_errors(void **st) {
    (void)st;
    ckpt_opts o = {"model.language_model.", "mtp.", true, true, HY_DTYPE_BF16};
    char *cfg = config_json(true, false, 1, NULL);
    stw *w;

    w = make_ckpt(&o);
    stw_remove(w, "model.language_model.layers.1.linear_attn.in_proj_z.weight");
    expect_load_error(w, cfg,
                      "tensor \"model.language_model.layers.1.linear_attn.in_proj_z.weight\" is missing (expected shape [32, 16])");
    free(w);

    w = make_ckpt(&o);
    stw_tensor *t = stw_get(w, "model.language_model.layers.3.mlp.up_proj.weight");
    t->shape[0] = D, t->shape[1] = F;
    expect_load_error(w, cfg,
                      "tensor \"model.language_model.layers.3.mlp.up_proj.weight\": expected shape [24, 16], found [16, 24]");
    free(w);

    w = make_ckpt(&o);
    t = stw_get(w, "model.language_model.layers.0.linear_attn.conv1d.weight");
    t->ndim = 2, t->shape[1] = K;
    expect_load_error(w, cfg, "conv1d.weight\": expected shape [64, 1, 4], found [64, 4]");
    free(w);

    w = make_ckpt(&o);
    stw_get(w, "model.language_model.layers.2.linear_attn.A_log")->dtype = HY_DTYPE_I32;
    expect_load_error(w, cfg, "A_log\": dtype I32 is not usable for weights");
    free(w);

    w = make_ckpt(&o);
    STW_ADD(w, "model.language_model.layers.0.mystery.weight", HY_DTYPE_BF16, 4);
    expect_load_error(w, cfg, "tensor \"model.language_model.layers.0.mystery.weight\" is unexpected");
    free(w);

    /* the text-only prefix mixed into a multimodal file is unexpected too */
    w = make_ckpt(&o);
    STW_ADD(w, "model.layers.0.input_layernorm.weight", HY_DTYPE_BF16, D);
    expect_load_error(w, cfg, "tensor \"model.layers.0.input_layernorm.weight\" is unexpected");
    free(w);

    /* a 1-byte tensor first shifts every later one off its element alignment */
    w = make_ckpt(&o);
    memmove(&w->t[1], &w->t[0], (size_t)w->n * sizeof w->t[0]);
    w->n++;
    memset(&w->t[0], 0, sizeof w->t[0]);
    snprintf(w->t[0].name, sizeof w->t[0].name, "model.visual.pad");
    w->t[0].dtype = HY_DTYPE_U8, w->t[0].ndim = 1, w->t[0].shape[0] = 1;
    expect_load_error(w, cfg, "embed_tokens.weight\": data is not aligned to its element size");
    free(w);

    /* incomplete MTP head */
    w = make_ckpt(&o);
    stw_remove(w, "mtp.norm.weight");
    expect_load_error(w, cfg, "tensor \"mtp.norm.weight\" is missing (expected shape [16])");
    free(w);
    w = make_ckpt(&o);
    STW_ADD(w, "mtp.layers.1.input_layernorm.weight", HY_DTYPE_BF16, D);
    expect_load_error(w, cfg, "\"mtp.layers.1.input_layernorm.weight\" is unexpected (not part of a one-layer MTP head)");
    free(w);

    /* model.mtp.* prefix is recognised */
    ckpt_opts o2 = o;
    o2.mtp_prefix = "model.mtp.";
    w = make_ckpt(&o2);
    hy_model *m = NULL;
    hy_err err = {0};
    assert_int_equal(load(w, cfg, &m, &err), 0);
    assert_true(m->w.has_mtp);
    assert_string_equal(m->w.mtp_norm.name, "model.mtp.norm.weight");
    hy_model_free(m);
    free(w);
    free(cfg);

    /* MTP tensors with mtp_num_hidden_layers 0: skipped, not bound */
    cfg = config_json(true, false, 0, NULL);
    w = make_ckpt(&o);
    assert_int_equal(load(w, cfg, &m, &err), 0);
    assert_false(m->w.has_mtp);
    hy_model_free(m);
    hy_weights_audit a;
    audit(w, cfg, &a);
    assert_true(hy_weights_audit_ok(&a));
    assert_int_equal(a.n_mtp_skipped, 15);
    hy_weights_audit_release(&a);
    free(w);
    free(cfg);

    /* a broken config is reported with its file name */
    w = make_ckpt(&o);
    expect_load_error(w, "{\"model_type\": \"qwen3_5\", \"text_config\": {\"hidden_size\": -1}}",
                      "config.json: text_config.hidden_size: must be a positive integer, found -1");
    free(w);
}

static void test_fp8(void **st) {
    (void)st;
    ckpt_opts o = {"model.language_model.", NULL, true, false, HY_DTYPE_BF16};
    const char *q = ", \"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", "
                    "\"activation_scheme\": \"dynamic\", \"weight_block_size\": [8, 8]}";
    char *cfg = config_json(true, false, 0, q);
    stw *w = make_ckpt(&o);
    /* q_proj [64, 16] -> scales [8, 2]; up_proj of layer 0 [24, 16] -> [3, 2] */
    stw_get(w, "model.language_model.layers.3.self_attn.q_proj.weight")->dtype = HY_DTYPE_F8_E4M3;
    STW_ADD(w, "model.language_model.layers.3.self_attn.q_proj.weight_scale_inv", HY_DTYPE_F32, 8, 2);
    stw_get(w, "model.language_model.layers.0.mlp.up_proj.weight")->dtype = HY_DTYPE_F8_E4M3;
    STW_ADD(w, "model.language_model.layers.0.mlp.up_proj.weight_scale_inv", HY_DTYPE_BF16, 3, 2);
    hy_model *m = NULL;
    hy_err err = {0};
    int rc = load(w, cfg, &m, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    const hy_tensor *qp = &m->w.layers[3].q_proj;
    assert_int_equal(qp->dtype, HY_DTYPE_F8_E4M3);
    assert_non_null(qp->scale_inv);
    assert_int_equal(qp->scale_inv->shape[0], 8);
    assert_int_equal(qp->scale_inv->shape[1], 2);
    assert_string_equal(qp->scale_inv->name, "model.language_model.layers.3.self_attn.q_proj.weight_scale_inv");
    assert_non_null(m->w.layers[0].up_proj.scale_inv);
    assert_null(m->w.layers[0].down_proj.scale_inv);
    hy_model_free(m);

    /* wrong scale shape */
    stw_get(w, "model.language_model.layers.0.mlp.up_proj.weight_scale_inv")->shape[0] = 4;
    expect_load_error(w, cfg, "up_proj.weight_scale_inv\": expected shape [3, 2] (blocks of 8x8), found [4, 2]");
    /* missing scale */
    stw_remove(w, "model.language_model.layers.0.mlp.up_proj.weight_scale_inv");
    expect_load_error(w, cfg, "tensor \"model.language_model.layers.0.mlp.up_proj.weight_scale_inv\" is missing");
    free(cfg);
    /* fp8 weights without a block size in the config */
    cfg = config_json(true, false, 0, NULL);
    expect_load_error(w, cfg, "no quantization_config.weight_block_size");
    free(cfg);
    free(w);
}

static void test_audit_collects_everything(void **st) {
    (void)st;
    ckpt_opts o = {"model.language_model.", NULL, true, false, HY_DTYPE_BF16};
    char *cfg = config_json(true, false, 0, NULL);
    stw *w = make_ckpt(&o);
    stw_remove(w, "model.language_model.norm.weight");
    stw_remove(w, "lm_head.weight");
    stw_get(w, "model.language_model.layers.0.mlp.down_proj.weight")->shape[0] = 3;
    stw_get(w, "model.language_model.layers.1.linear_attn.dt_bias")->dtype = HY_DTYPE_I64;
    STW_ADD(w, "extra.a", HY_DTYPE_U8, 1);
    STW_ADD(w, "extra.b", HY_DTYPE_U8, 1);
    hy_weights_audit a;
    audit(w, cfg, &a);
    assert_false(hy_weights_audit_ok(&a));
    assert_int_equal(a.n_kind[HY_WPROB_MISSING], 2);
    assert_int_equal(a.n_kind[HY_WPROB_SHAPE], 1);
    assert_int_equal(a.n_kind[HY_WPROB_DTYPE], 1);
    assert_int_equal(a.n_kind[HY_WPROB_UNEXPECTED], 2);
    assert_int_equal(a.n_probs, 6);
    bool saw = false;
    for (int i = 0; i < a.n_probs; i++)
        if (a.probs[i].kind == HY_WPROB_SHAPE) {
            assert_string_equal(a.probs[i].name, "model.language_model.layers.0.mlp.down_proj.weight");
            assert_string_equal(a.probs[i].detail, "expected shape [16, 24], found [3, 24]");
            saw = true;
        }
    assert_true(saw);
    assert_int_equal(a.dtype_tensors[HY_DTYPE_U8], 2);
    hy_weights_audit_release(&a);

    /* no weight files at all: everything missing */
    hy_hparams hp;
    hy_err err = {0};
    assert_int_equal(hy_config_parse(&hp, cfg, strlen(cfg), "config.json", &err), 0);
    assert_int_equal(hy_weights_audit_run(&a, &hp, NULL, &err), 0);
    assert_false(hy_weights_audit_ok(&a));
    assert_int_equal(a.n_files, 0);
    assert_int_equal(a.n_kind[HY_WPROB_MISSING], a.n_expected);
    assert_int_equal(a.n_expected, 1 + 3 * 14 + 11 + 1 + 1);
    hy_weights_audit_release(&a);
    hy_hparams_release(&hp);
    free(cfg);
    free(w);
}

/* Every fixture checkpoint the ref helper produced (tests/data/models/ *)
 * must load and audit clean. Nothing to do while there are none. */
static void test_fixture_models(void **st) {
    (void)st;
    char *root = hy_test_data_path("models");
    DIR *d = opendir(root);
    int n = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char *dir = stw_path(root, e->d_name);
            char *cfgp = stw_path(dir, "config.json");
            struct stat sb;
            if (stat(cfgp, &sb) == 0) {
                hy_model *m = NULL;
                hy_err err = {0};
                int rc = hy_model_load(&m, dir, &err);
                if (rc) fprintf(stderr, "%s: %s\n", e->d_name, err.msg);
                assert_int_equal(rc, 0);
                hy_weights_audit a;
                assert_int_equal(hy_weights_audit_run(&a, &m->hp, m->st, &err), 0);
                if (!hy_weights_audit_ok(&a)) fprintf(stderr, "%s: %s %s\n", e->d_name, a.probs[0].name, a.probs[0].detail);
                assert_true(hy_weights_audit_ok(&a));
                assert_true(a.numel_text == hy_hp_text_params(&m->hp));
                printf("fixture %s: %d tensors, text params %lld, mtp %s\n", e->d_name, a.n_tensors,
                       (long long)a.numel_text, m->w.has_mtp ? "bound" : "none");
                hy_weights_audit_release(&a);
                hy_model_free(m);
                n++;
            }
            free(cfgp);
            free(dir);
        }
        closedir(d);
    }
    printf("fixture models checked: %d\n", n);
    free(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multimodal_untied_mtp_visual),
        cmocka_unit_test(test_text_tied),
        cmocka_unit_test(test_binding_errors),
        cmocka_unit_test(test_fp8),
        cmocka_unit_test(test_audit_collects_everything),
        cmocka_unit_test(test_fixture_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
