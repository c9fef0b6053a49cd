/* io/config: nested/flat forms, HF defaults, derived layer types, legacy rope
 * fields, quantization, and one test per error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "io/config.h"
#include "model/hparams.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(hy_hparams *hp, const char *json, hy_err *err) {
    return hy_config_parse(hp, json, strlen(json), "config.json", err);
}

static void load_data_config(hy_hparams *hp, const char *rel) {
    char *p = hy_test_data_path(rel);
    hy_err err = {0};
    int rc = hy_config_load(hp, p, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    free(p);
}

static void test_qwen36_27b(void **st) {
    (void)st;
    hy_hparams hp;
    load_data_config(&hp, "configs/qwen3.6-27b/config.json");
    assert_true(hp.nested);
    assert_string_equal(hp.model_type, "qwen3_5");
    assert_string_equal(hp.architecture, "Qwen3_5ForConditionalGeneration");
    assert_string_equal(hp.dtype, "bfloat16");
    assert_int_equal(hp.vocab_size, 248320);
    assert_int_equal(hp.hidden_size, 5120);
    assert_int_equal(hp.intermediate_size, 17408);
    assert_int_equal(hp.num_hidden_layers, 64);
    for (int i = 0; i < 64; i++) assert_int_equal(hp.layer_types[i], (i % 4 == 3) ? HY_LAYER_ATTN : HY_LAYER_GDN);
    assert_int_equal(hp.num_attention_heads, 24);
    assert_int_equal(hp.num_key_value_heads, 4);
    assert_int_equal(hp.head_dim, 256);
    assert_true(hp.attn_output_gate);
    assert_true(hp.rope_theta == 1e7);
    assert_true(hp.partial_rotary_factor == 0.25);
    assert_string_equal(hp.rope_type, "default");
    assert_int_equal(hp.mrope_section[0], 11);
    assert_int_equal(hp.mrope_section[2], 10);
    assert_true(hp.mrope_interleaved);
    assert_int_equal(hp.max_position_embeddings, 262144);
    assert_int_equal(hp.linear_conv_kernel_dim, 4);
    assert_int_equal(hp.linear_num_key_heads, 16);
    assert_int_equal(hp.linear_num_value_heads, 48);
    assert_true(hp.rms_norm_eps == 1e-6f);
    assert_false(hp.tie_word_embeddings);
    assert_int_equal(hp.bos_token_id, 248044);
    assert_int_equal(hp.eos_token_id, 248044);
    assert_int_equal(hp.pad_token_id, -1);
    assert_int_equal(hp.mtp_num_hidden_layers, 1);
    assert_false(hp.mtp_use_dedicated_embeddings);
    assert_false(hp.quant.present);
    /* spec §1.4 */
    assert_int_equal(hy_hp_rotary_dim(&hp), 64);
    assert_int_equal(hy_hp_gdn_conv_dim(&hp), 10240);
    assert_int_equal(hy_hp_n_attn_layers(&hp), 16);
    assert_int_equal(hy_hp_n_gdn_layers(&hp), 48);
    assert_true(hy_hp_text_params(&hp) == 26895998464LL);
    assert_true(hy_hp_mtp_params(&hp) == 424699392LL);
    assert_true(hy_hp_kv_bytes_per_token(&hp, 2) == 65536);
    assert_true(hy_hp_gdn_state_bytes(&hp) == 144LL << 20);
    assert_true(hy_hp_gdn_conv_bytes(&hp, 2) == 48LL * 10240 * 3 * 2);
    hy_hparams_release(&hp);
}

/* Qwen3.5-0.8B, tied embeddings: text params from the shapes of spec §2.2
 * (computed independently: 248320*1024 + 1024 + 18 GDN + 6 attention layers;
 * also what HF's Qwen3_5ForCausalLM reports as unique parameters). */
static void test_qwen35_08b(void **st) {
    (void)st;
    hy_hparams hp;
    load_data_config(&hp, "configs/qwen3.5-0.8b/config.json");
    assert_true(hp.tie_word_embeddings);
    int64_t V = 248320, D = 1024, F = 3584, conv = 2 * 16 * 128 + 16 * 128;
    int64_t gdn = conv * D + 2048 * D + 2 * 16 * D + conv * 4 + 2 * 16 + 128 + D * 2048 + 2 * D + 3 * F * D;
    int64_t att = 2 * 8 * 256 * D + 2 * 2 * 256 * D + D * 8 * 256 + 2 * 256 + 2 * D + 3 * F * D;
    int64_t expect = V * D + D + 18 * gdn + 6 * att;
    assert_true(expect == 752393024LL);
    assert_true(hy_hp_text_params(&hp) == expect);
    assert_true(hy_hp_layer_params(&hp, HY_LAYER_GDN) == gdn);
    assert_true(hy_hp_layer_params(&hp, HY_LAYER_ATTN) == att);
    assert_true(hy_hp_kv_bytes_per_token(&hp, 2) == 6 * 2 * 2 * 256 * 2);
    hy_hparams_release(&hp);
}

/* An empty text config gets every HF default (Qwen3_5TextConfig). */
static void test_defaults(void **st) {
    (void)st;
    hy_hparams hp;
    hy_err err = {0};
    assert_int_equal(parse(&hp, "{\"model_type\": \"qwen3_5_text\"}", &err), 0);
    assert_false(hp.nested);
    assert_int_equal(hp.vocab_size, 248320);
    assert_int_equal(hp.hidden_size, 4096);
    assert_int_equal(hp.intermediate_size, 12288);
    assert_int_equal(hp.num_hidden_layers, 32);
    assert_int_equal(hp.num_attention_heads, 16);
    assert_int_equal(hp.num_key_value_heads, 4);
    assert_int_equal(hp.head_dim, 256);
    assert_int_equal(hp.max_position_embeddings, 32768);
    assert_int_equal(hp.linear_num_value_heads, 32);
    assert_int_equal(hp.linear_num_key_heads, 16);
    assert_int_equal(hp.full_attention_interval, 4);
    assert_int_equal(hy_hp_n_attn_layers(&hp), 8);
    assert_int_equal(hp.layer_types[3], HY_LAYER_ATTN);
    assert_int_equal(hp.layer_types[4], HY_LAYER_GDN);
    assert_true(hp.rope_theta == 10000.0);
    assert_true(hp.partial_rotary_factor == 0.25);
    assert_string_equal(hp.rope_type, "default");
    assert_int_equal(hp.mrope_section[0], 11);
    assert_false(hp.tie_word_embeddings);
    assert_int_equal(hp.bos_token_id, -1);
    assert_int_equal(hp.eos_token_id, -1);
    assert_int_equal(hp.mtp_num_hidden_layers, 0);
    assert_true(hp.rms_norm_eps == 1e-6f);
    assert_string_equal(hp.dtype, "");
    hy_hparams_release(&hp);
}

static void test_flat_forms_and_derived_layers(void **st) {
    (void)st;
    hy_hparams hp;
    hy_err err = {0};
    /* "qwen3_5" without text_config: dimensions at the top level */
    assert_int_equal(parse(&hp,
                           "{\"model_type\": \"qwen3_5\", \"hidden_size\": 48, \"num_hidden_layers\": 6,"
                           " \"full_attention_interval\": 2, \"tie_word_embeddings\": true,"
                           " \"eos_token_id\": [7, 8], \"bos_token_id\": null}",
                           &err),
                     0);
    assert_false(hp.nested);
    assert_int_equal(hp.hidden_size, 48);
    for (int i = 0; i < 6; i++) assert_int_equal(hp.layer_types[i], i % 2 ? HY_LAYER_ATTN : HY_LAYER_GDN);
    assert_true(hp.tie_word_embeddings);
    assert_int_equal(hp.eos_token_id, 7);
    assert_int_equal(hp.bos_token_id, -1);
    hy_hparams_release(&hp);

    /* explicit layer_types win over the interval */
    assert_int_equal(parse(&hp,
                           "{\"model_type\": \"qwen3_5_text\", \"num_hidden_layers\": 3, \"full_attention_interval\": 1,"
                           " \"layer_types\": [\"full_attention\", \"linear_attention\", \"linear_attention\"],"
                           " \"eos_token_id\": []}",
                           &err),
                     0);
    assert_int_equal(hp.layer_types[0], HY_LAYER_ATTN);
    assert_int_equal(hp.layer_types[1], HY_LAYER_GDN);
    assert_int_equal(hp.eos_token_id, -1);
    hy_hparams_release(&hp);

    /* nested: top-level tie_word_embeddings wins; text_config ids win */
    assert_int_equal(parse(&hp,
                           "{\"model_type\": \"qwen3_5\", \"tie_word_embeddings\": true, \"eos_token_id\": 1,"
                           " \"torch_dtype\": \"float32\","
                           " \"text_config\": {\"tie_word_embeddings\": false, \"eos_token_id\": 2, \"hidden_size\": 64}}",
                           &err),
                     0);
    assert_true(hp.nested);
    assert_true(hp.tie_word_embeddings);
    assert_int_equal(hp.eos_token_id, 2);
    assert_int_equal(hp.hidden_size, 64);
    assert_string_equal(hp.dtype, "float32");
    hy_hparams_release(&hp);

    /* nested without a top-level tie: text_config's value */
    assert_int_equal(parse(&hp, "{\"model_type\": \"qwen3_5\", \"text_config\": {\"tie_word_embeddings\": true}}", &err), 0);
    assert_true(hp.tie_word_embeddings);
    hy_hparams_release(&hp);
}

static void test_rope_variants(void **st) {
    (void)st;
    hy_hparams hp;
    hy_err err = {0};
    /* legacy top-level fields only */
    assert_int_equal(parse(&hp, "{\"model_type\": \"qwen3_5_text\", \"rope_theta\": 1000000, \"partial_rotary_factor\": 0.5}", &err), 0);
    assert_true(hp.rope_theta == 1e6);
    assert_true(hp.partial_rotary_factor == 0.5);
    assert_int_equal(hy_hp_rotary_dim(&hp), 128);
    hy_hparams_release(&hp);
    /* rope_parameters values win over the legacy copies */
    assert_int_equal(parse(&hp,
                           "{\"model_type\": \"qwen3_5_text\", \"rope_theta\": 5, \"partial_rotary_factor\": 0.5,"
                           " \"rope_parameters\": {\"rope_theta\": 7, \"partial_rotary_factor\": 0.125,"
                           " \"mrope_section\": [2, 1, 1], \"mrope_interleaved\": false}}",
                           &err),
                     0);
    assert_true(hp.rope_theta == 7);
    assert_true(hp.partial_rotary_factor == 0.125);
    assert_int_equal(hp.mrope_section[0], 2);
    assert_false(hp.mrope_interleaved);
    hy_hparams_release(&hp);
    /* rope_parameters without theta: the top-level one fills in */
    assert_int_equal(parse(&hp, "{\"model_type\": \"qwen3_5_text\", \"rope_theta\": 123, \"rope_parameters\": {\"rope_type\": \"default\"}}", &err), 0);
    assert_true(hp.rope_theta == 123);
    hy_hparams_release(&hp);
    /* legacy rope_scaling dict with "type" */
    assert_int_equal(parse(&hp,
                           "{\"model_type\": \"qwen3_5_text\", \"rope_scaling\": {\"type\": \"default\","
                           " \"mrope_section\": [16, 8, 8], \"rope_theta\": 99}}",
                           &err),
                     0);
    assert_true(hp.rope_theta == 99);
    assert_int_equal(hp.mrope_section[0], 16);
    hy_hparams_release(&hp);
}

static void test_quantization(void **st) {
    (void)st;
    hy_hparams hp;
    hy_err err = {0};
    assert_int_equal(parse(&hp,
                           "{\"model_type\": \"qwen3_5\", \"text_config\": {},"
                           " \"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"e4m3\","
                           " \"activation_scheme\": \"dynamic\", \"weight_block_size\": [128, 128],"
                           " \"modules_to_not_convert\": [\"lm_head\", \"model.visual.blocks.0\"]}}",
                           &err),
                     0);
    assert_true(hp.quant.present);
    assert_string_equal(hp.quant.quant_method, "fp8");
    assert_string_equal(hp.quant.fmt, "e4m3");
    assert_string_equal(hp.quant.activation_scheme, "dynamic");
    assert_int_equal(hp.quant.weight_block_size[0], 128);
    assert_int_equal(hp.quant.weight_block_size[1], 128);
    assert_int_equal(hp.quant.n_modules_to_not_convert, 2);
    assert_string_equal(hp.quant.modules_to_not_convert[1], "model.visual.blocks.0");
    hy_hparams_release(&hp);
}

/* Each malformed config must fail with a message containing `want`. */
static const struct {
    const char *json, *want;
} k_bad[] = {
    {"{\"model_type\": \"qwen3_5\", \"text_config\": {\"linear_num_key_heads\": 2, \"linear_num_value_heads\": 7}}",
     "config.json: text_config.linear_num_value_heads: 7 is not a multiple of linear_num_key_heads (2)"},
    {"{\"model_type\": \"qwen3_5_text\", \"num_attention_heads\": 6, \"num_key_value_heads\": 4}",
     "config.json: num_attention_heads: 6 is not a multiple of num_key_value_heads (4)"},
    {"{\"model_type\": \"qwen3_5_text\", \"num_hidden_layers\": 4, \"layer_types\": [\"full_attention\"]}",
     "config.json: layer_types: has 1 entries but num_hidden_layers is 4"},
    {"{\"model_type\": \"qwen3_5_text\", \"num_hidden_layers\": 1, \"layer_types\": [\"sliding_attention\"]}",
     "layer_types[0]: \"sliding_attention\" is not a known layer type"},
    {"{\"model_type\": \"qwen3_5_text\", \"num_hidden_layers\": 1, \"layer_types\": [3]}",
     "layer_types[0]: expected a string, found integer"},
    {"{\"model_type\": \"qwen3_5_text\", \"layer_types\": \"full\"}", "layer_types: expected an array of strings, found string"},
    {"{\"model_type\": \"qwen3_5_text\", \"hidden_size\": 0}", "config.json: hidden_size: must be a positive integer, found 0"},
    {"{\"model_type\": \"qwen3_5_text\", \"linear_num_key_heads\": -2}", "linear_num_key_heads: must be a positive integer, found -2"},
    {"{\"model_type\": \"qwen3_5_text\", \"hidden_size\": \"4096\"}", "config.json: hidden_size: expected an integer, found string"},
    {"{\"model_type\": \"qwen3_5_text\", \"hidden_size\": 4096.5}", "hidden_size: expected an integer, found number"},
    {"{\"model_type\": \"qwen3_5_text\", \"vocab_size\": 1000000000000}", "vocab_size: 1000000000000 is out of range"},
    {"{\"model_type\": \"qwen3_5_text\", \"num_hidden_layers\": 100000}", "num_hidden_layers: 100000 is out of range"},
    {"{\"model_type\": \"qwen3_5_text\", \"partial_rotary_factor\": 0}", "partial_rotary_factor: 0 is outside (0, 1]"},
    {"{\"model_type\": \"qwen3_5_text\", \"rope_parameters\": {\"partial_rotary_factor\": 1.5}}",
     "rope_parameters.partial_rotary_factor: 1.5 is outside (0, 1]"},
    {"{\"model_type\": \"qwen3_5_text\", \"head_dim\": 6, \"partial_rotary_factor\": 0.5}", "= 3 rotary dims, which must be even"},
    {"{\"model_type\": \"qwen3_5_text\", \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4}}",
     "rope_parameters.rope_type: \"yarn\" is not supported (supported: default)"},
    {"{\"model_type\": \"qwen3_5_text\", \"rope_theta\": -1}", "rope_theta: must be positive"},
    {"{\"model_type\": \"qwen3_5_text\", \"rope_parameters\": {\"mrope_section\": [1, 2]}}", "mrope_section: expected an array of 3 integers"},
    {"{\"model_type\": \"qwen3_5_text\", \"rope_parameters\": [1]}", "rope_parameters: expected an object, found array"},
    {"{\"model_type\": \"llama\"}", "config.json: model_type: \"llama\" is not supported (supported: qwen3_5, qwen3_5_text)"},
    {"{\"model_type\": \"qwen3_next\", \"hidden_size\": 2048}", "\"qwen3_next\" is not supported"},
    {"{\"hidden_size\": 4096}", "config.json: model_type: missing (supported: qwen3_5, qwen3_5_text)"},
    {"{\"model_type\": 5}", "model_type: expected a string, found integer"},
    {"{\"model_type\": \"qwen3_5\", \"text_config\": {\"model_type\": \"qwen2\"}}", "text_config.model_type: \"qwen2\" is not supported"},
    {"{\"model_type\": \"qwen3_5\", \"text_config\": [1, 2]}", "config.json: text_config: expected an object, found array"},
    {"[1, 2, 3]", "config.json: expected a JSON object at the top level, found array"},
    {"\"qwen3_5\"", "config.json: line 1"}, /* jansson refuses a bare string root without JSON_DECODE_ANY */
    {"{\"model_type\": \"qwen3_5_text\", \"hidden_size\": 1, \"hidden_size\": 2}", "config.json: line 1, column"},
    {"{\"model_type\": \"qwen3_5_text\",\n \"hidden_size\": 12,,}", "config.json: line 2, column"},
    {"{\"model_type\": \"qwen3_5_text\", \"rms_norm_eps\": NaN}", "config.json: line 1"},
    {"{\"model_type\": \"qwen3_5_text\", \"rms_norm_eps\": -1e-6}", "rms_norm_eps: -1e-06 is outside (0, 1)"},
    {"{\"model_type\": \"qwen3_5_text\", \"rms_norm_eps\": \"small\"}", "rms_norm_eps: expected a number, found string"},
    {"{\"model_type\": \"qwen3_5_text\", \"tie_word_embeddings\": \"yes\"}", "tie_word_embeddings: expected true or false, found string"},
    {"{\"model_type\": \"qwen3_5_text\", \"eos_token_id\": \"</s>\"}", "eos_token_id: expected an integer, found string"},
    {"{\"model_type\": \"qwen3_5_text\", \"eos_token_id\": [1, \"x\"]}", "eos_token_id[1]: expected a token id"},
    {"{\"model_type\": \"qwen3_5_text\", \"pad_token_id\": -5}", "pad_token_id: -5 is out of range"},
    {"{\"model_type\": \"qwen3_5_text\", \"attention_bias\": true}", "attention_bias: true is not supported"},
    {"{\"model_type\": \"qwen3_5_text\", \"hidden_act\": \"gelu\"}", "hidden_act: \"gelu\" is not supported"},
    {"{\"model_type\": \"qwen3_5_text\", \"mtp_num_hidden_layers\": -1}", "mtp_num_hidden_layers: -1 is out of range"},
    {"{\"model_type\": \"qwen3_5_text\", \"full_attention_interval\": 0}", "full_attention_interval: must be a positive integer"},
    {"{\"model_type\": \"qwen3_5\", \"quantization_config\": {\"quant_method\": \"awq\"}}",
     "quantization_config.quant_method: \"awq\" is not supported (supported: fp8)"},
    {"{\"model_type\": \"qwen3_5\", \"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [128]}}",
     "quantization_config.weight_block_size: expected an array of 2 positive integers"},
    {"{\"model_type\": \"qwen3_5\", \"quantization_config\": {\"quant_method\": \"fp8\", \"modules_to_not_convert\": [1]}}",
     "modules_to_not_convert[0]: expected a string, found integer"},
    {"{\"model_type\": \"qwen3_5_text\", \"dtype\": \"an absurdly long dtype name here\"}", "dtype: string of 32 bytes is longer"},
    {"", "config.json: "},
    {"{\"model_type\": \"qwen3_5_text\", \"x\": \"\xff\xfe\"}", "config.json: line 1"},
};

static void test_errors(void **st) {
    (void)st;
    for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; i++) {
        hy_hparams hp;
        hy_err err = {0};
        int rc = parse(&hp, k_bad[i].json, &err);
        if (rc == 0 || !strstr(err.msg, k_bad[i].want))
            fprintf(stderr, "case %zu: rc %d, message \"%s\", wanted \"%s\"\n", i, rc, err.msg, k_bad[i].want);
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(err.msg, k_bad[i].want));
        assert_null(strchr(err.msg, '\n')); /* one line */
    }
}

/* 100k nested '[' must be refused by jansson's depth limit, not recurse. */
static void test_deep_nesting(void **st) {
    (void)st;
    size_t n = 100000;
    char *s = malloc(n + 64);
    strcpy(s, "{\"model_type\": \"qwen3_5_text\", \"x\": ");
    size_t o = strlen(s);
    memset(s + o, '[', n);
    s[o + n] = 0;
    hy_hparams hp;
    hy_err err = {0};
    int rc = hy_config_parse(&hp, s, o + n, "config.json", &err);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(err.msg, "config.json: line 1"));
    free(s);
}

static void test_load_missing_file(void **st) {
    (void)st;
    hy_hparams hp;
    hy_err err = {0};
    assert_int_equal(hy_config_load(&hp, "/nonexistent/config.json", &err), HY_E_NOT_FOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/config.json"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen36_27b),
        cmocka_unit_test(test_qwen35_08b),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_flat_forms_and_derived_layers),
        cmocka_unit_test(test_rope_variants),
        cmocka_unit_test(test_quantization),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_load_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
