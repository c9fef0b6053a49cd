/* model/shapes + model/random_model: the shape table (real dims, slices keep the layer pattern,
 * errors), and synthetic checkpoints of the tiny shape written and then loaded by the real
 * loader (hy_model_load): bf16 single file and fp8 sharded, config round trip through
 * io/config, value ranges per tensor kind, determinism in the seed, refusal to overwrite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/fp.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/shapes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[256];

static int setup(void **st) {
    (void)st;
    snprintf(g_dir, sizeof g_dir, "/tmp/hyla_rm_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **st) {
    (void)st;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_shapes(void **st) {
    (void)st;
    hy_model_shape s;
    hy_err e = {0};
    assert_int_equal(hy_model_shape_get(&s, "qwen3.5-0.8b", &e), 0);
    assert_int_equal(s.hp.hidden_size, 1024);
    assert_int_equal(s.hp.num_hidden_layers, 24);
    assert_int_equal(hy_hp_n_attn_layers(&s.hp), 6);
    assert_int_equal(s.hp.num_attention_heads, 8);
    assert_int_equal(s.hp.num_key_value_heads, 2);
    assert_int_equal(s.hp.head_dim, 256);
    assert_int_equal(s.hp.intermediate_size, 3584);
    assert_int_equal(s.hp.linear_num_key_heads, 16);
    assert_int_equal(s.hp.linear_num_value_heads, 16);
    assert_int_equal(s.hp.vocab_size, 248320);
    assert_true(s.hp.tie_word_embeddings);

    assert_int_equal(hy_model_shape_get(&s, "qwen3.6-27b", &e), 0);
    assert_int_equal(hy_hp_text_params(&s.hp), 26895998464ll); /* spec §1.4 */
    assert_int_equal(hy_hp_mtp_params(&s.hp), 424699392ll);

    assert_int_equal(hy_model_shape_get(&s, "qwen3.6-27b-slice:4", &e), 0);
    assert_int_equal(s.hp.num_hidden_layers, 4);
    assert_int_equal(s.hp.hidden_size, 5120);
    assert_int_equal(s.hp.linear_num_value_heads, 48);
    const hy_layer_type want[4] = {HY_LAYER_GDN, HY_LAYER_GDN, HY_LAYER_GDN, HY_LAYER_ATTN};
    for (int i = 0; i < 4; i++) assert_int_equal(s.hp.layer_types[i], want[i]);
    assert_int_equal(hy_model_shape_get(&s, "qwen3.6-27b-slice:9", &e), 0);
    assert_int_equal(hy_hp_n_attn_layers(&s.hp), 2);

    const char *bad[] = {"qwen3.6-27b-slice:0", "qwen3.6-27b-slice:65", "qwen3.6-27b-slice:", "qwen3.6-27b-slice:4x",
                         "qwen9", "", NULL};
    for (int i = 0; bad[i]; i++) {
        assert_int_equal(hy_model_shape_get(&s, bad[i], &e), HY_E_INVALID);
        printf("shape \"%s\": %s\n", bad[i], e.msg);
    }
    assert_int_equal(hy_model_shape_get(&s, NULL, &e), HY_E_INVALID);
}

static int write_tiny(const char *sub, bool fp8, uint64_t seed, uint64_t max_shard, bool force,
                      hy_random_model_stats *stt, hy_err *e) {
    static hy_model_shape s;
    assert_int_equal(hy_model_shape_get(&s, "tiny", e), 0);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, sub);
    hy_random_model_opts o = {.out_dir = dir, .shape = &s, .fp8 = fp8, .seed = seed, .max_shard_bytes = max_shard,
                              .force = force};
    return hy_random_model_write(&o, stt, e);
}

static float tensor_f32(const hy_tensor *t, int64_t i) {
    switch (t->dtype) {
    case HY_DTYPE_F32: return ((const float *)t->data)[i];
    case HY_DTYPE_BF16: return hy_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case HY_DTYPE_F8_E4M3: return hy_fp8_e4m3_to_f32(((const uint8_t *)t->data)[i]);
    default: fail_msg("unexpected dtype %d", t->dtype);
    }
    return 0;
}

static void stats(const hy_tensor *t, double *mean, double *sd, double *mn, double *mx) {
    const int64_t n = hy_tensor_numel(t);
    double s = 0, s2 = 0;
    *mn = INFINITY, *mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = tensor_f32(t, i);
        s += v, s2 += v * v;
        if (v < *mn) *mn = v;
        if (v > *mx) *mx = v;
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

static void test_tiny_bf16_loads(void **st) {
    (void)st;
    hy_err e = {0};
    hy_random_model_stats stt;
    assert_int_equal(write_tiny("bf16", false, 1, 0, false, &stt, &e), 0);
    assert_int_equal(stt.n_shards, 1);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/bf16", g_dir);
    hy_model *m;
    assert_int_equal(hy_model_load(&m, dir, &e), 0);
    hy_model_shape s;
    assert_int_equal(hy_model_shape_get(&s, "tiny", &e), 0);
    /* config.json round trip through the real parser */
    assert_int_equal(m->hp.hidden_size, s.hp.hidden_size);
    assert_int_equal(m->hp.num_hidden_layers, 8);
    for (int i = 0; i < 8; i++) assert_int_equal(m->hp.layer_types[i], s.hp.layer_types[i]);
    assert_int_equal(m->hp.linear_num_value_heads, 6);
    assert_int_equal(m->hp.mrope_section[0], 2);
    assert_true(m->hp.rope_theta == 1e7 && m->hp.partial_rotary_factor == 0.25 && m->hp.rms_norm_eps == 1e-6f);
    assert_false(m->hp.tie_word_embeddings);
    assert_true(m->w.has_mtp);
    assert_int_equal(hy_hp_text_params(&m->hp) + hy_hp_mtp_params(&m->hp), stt.n_params);

    double mean, sd, mn, mx;
    stats(&m->w.embed_tokens, &mean, &sd, &mn, &mx);
    printf("embed_tokens: mean %.4f sd %.4f [%.3f, %.3f]\n", mean, sd, mn, mx);
    assert_true(fabs(mean) < 0.002 && fabs(sd - 0.02) < 0.002 && mx < 0.08 && mn > -0.08);
    const hy_layer_weights *L = &m->w.layers[0];
    assert_int_equal(L->A_log.dtype, HY_DTYPE_F32);
    assert_int_equal(L->norm.dtype, HY_DTYPE_F32);
    stats(&L->A_log, &mean, &sd, &mn, &mx);
    assert_true(mn >= 0.0 && mx <= log(16.0));
    stats(&L->norm, &mean, &sd, &mn, &mx);
    printf("linear_attn.norm (plain): mean %.3f sd %.3f\n", mean, sd);
    assert_true(fabs(mean - 1.0) < 0.1 && sd > 0.03);
    stats(&L->input_layernorm, &mean, &sd, &mn, &mx);
    printf("input_layernorm (1+w): mean %.3f sd %.3f\n", mean, sd);
    assert_true(fabs(mean) < 0.1 && sd > 0.03);
    stats(&L->dt_bias, &mean, &sd, &mn, &mx);
    assert_true(mn >= -1.0 && mx <= 1.0);
    stats(&L->conv1d, &mean, &sd, &mn, &mx);
    printf("conv1d: sd %.3f\n", sd);
    assert_true(fabs(sd - 0.3) < 0.03);
    hy_model_free(m);
}

static void test_tiny_fp8_sharded_loads(void **st) {
    (void)st;
    hy_err e = {0};
    hy_random_model_stats stt;
    assert_int_equal(write_tiny("fp8", true, 5, 60000, false, &stt, &e), 0);
    printf("fp8 tiny: %d tensors in %d shards\n", stt.n_tensors, stt.n_shards);
    assert_true(stt.n_shards > 3);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/fp8", g_dir);
    hy_model *m;
    assert_int_equal(hy_model_load(&m, dir, &e), 0);
    assert_true(m->hp.quant.present);
    assert_string_equal(m->hp.quant.quant_method, "fp8");
    assert_int_equal(m->hp.quant.weight_block_size[0], 128);
    const hy_layer_weights *L = &m->w.layers[0];
    assert_int_equal(L->in_proj_qkv.dtype, HY_DTYPE_F8_E4M3);
    assert_non_null(L->in_proj_qkv.scale_inv);
    assert_int_equal(L->in_proj_a.dtype, HY_DTYPE_BF16);
    assert_null(L->in_proj_a.scale_inv);
    assert_int_equal(m->w.embed_tokens.dtype, HY_DTYPE_BF16);
    assert_int_equal(m->w.lm_head.dtype, HY_DTYPE_BF16);
    assert_int_equal(m->w.layers[3].q_proj.dtype, HY_DTYPE_F8_E4M3);
    /* dequantised weights have the bf16 model's scale */
    const hy_tensor *w = &m->w.layers[0].gate_proj, *sc = w->scale_inv;
    assert_int_equal(sc->ndim, 2);
    assert_int_equal(sc->shape[0], (w->shape[0] + 127) / 128);
    assert_int_equal(sc->shape[1], (w->shape[1] + 127) / 128);
    const int64_t n = hy_tensor_numel(w);
    double s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = i / w->shape[1], c = i % w->shape[1];
        const float v = tensor_f32(w, i) * ((const float *)sc->data)[(r / 128) * sc->shape[1] + c / 128];
        s2 += (double)v * v;
    }
    printf("fp8 gate_proj dequantised sd %.4f\n", sqrt(s2 / (double)n));
    assert_true(fabs(sqrt(s2 / (double)n) - 0.02) < 0.002);
    int n_skip_a = 0;
    for (int i = 0; i < m->hp.quant.n_modules_to_not_convert; i++)
        n_skip_a += strstr(m->hp.quant.modules_to_not_convert[i], "linear_attn.in_proj_a") != NULL;
    assert_int_equal(n_skip_a, 6);
    hy_model_free(m);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void test_determinism_and_overwrite(void **st) {
    (void)st;
    hy_err e = {0};
    hy_random_model_stats stt;
    assert_int_equal(write_tiny("d1", false, 9, 0, false, &stt, &e), 0);
    assert_int_equal(write_tiny("d2", false, 9, 0, false, &stt, &e), 0);
    assert_int_equal(write_tiny("d3", false, 10, 0, false, &stt, &e), 0);
    char p1[512], p2[512], p3[512];
    snprintf(p1, sizeof p1, "%s/d1/model.safetensors", g_dir);
    snprintf(p2, sizeof p2, "%s/d2/model.safetensors", g_dir);
    snprintf(p3, sizeof p3, "%s/d3/model.safetensors", g_dir);
    size_t n1, n2, n3;
    unsigned char *a = slurp(p1, &n1), *b = slurp(p2, &n2), *c = slurp(p3, &n3);
    assert_non_null(a); assert_non_null(b); assert_non_null(c);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a); free(b); free(c);
    /* another seed: other values (the header differs too: the seed is in __metadata__) */
    hy_st_set *s1, *s3;
    assert_int_equal(hy_st_open_file(&s1, p1, &e), 0);
    assert_int_equal(hy_st_open_file(&s3, p3, &e), 0);
    const hy_st_tensor *t1 = hy_st_find(s1, "model.language_model.embed_tokens.weight");
    const hy_st_tensor *t3 = hy_st_find(s3, "model.language_model.embed_tokens.weight");
    assert_non_null(t1); assert_non_null(t3);
    assert_int_equal(t1->nbytes, t3->nbytes);
    assert_memory_not_equal(t1->data, t3->data, t1->nbytes);
    hy_st_free(s1);
    hy_st_free(s3);
    /* an existing checkpoint is not overwritten without force; with force, stale shards go */
    assert_int_equal(write_tiny("d1", false, 9, 0, false, &stt, &e), HY_E_STATE);
    printf("overwrite: %s\n", e.msg);
    assert_int_equal(write_tiny("d1", false, 9, 100000, true, &stt, &e), 0);
    assert_true(stt.n_shards > 1);
    assert_int_equal(access(p1, F_OK), -1); /* the single file was removed */
    assert_int_equal(write_tiny("d1", false, 9, 0, true, &stt, &e), 0);
    char idx[512];
    snprintf(idx, sizeof idx, "%s/d1/model.safetensors.index.json", g_dir);
    assert_int_equal(access(idx, F_OK), -1); /* and back: the index and shards were removed */
    hy_st_set *set;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/d1", g_dir);
    assert_int_equal(hy_st_open_dir(&set, dir, &e), 0);
    assert_int_equal(hy_st_n_files(set), 1);
    hy_st_free(set);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_tiny_bf16_loads),
        cmocka_unit_test(test_tiny_fp8_sharded_loads),
        cmocka_unit_test(test_determinism_and_overwrite),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
