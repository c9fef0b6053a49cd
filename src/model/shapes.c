/*
 * The shape table (see shapes.h). Values are the released configs' (spec §1.2 for 27B,
 * §1.5 for 0.8B; the config files in tests/data/configs are the same facts as JSON) and the
 * fixture dims of tests/data/models/tiny-mm.
 */
#include "model/shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void base_qwen35(hy_model_shape *s) {
    hy_hparams *hp = &s->hp;
    memset(s, 0, sizeof *s);
    snprintf(hp->model_type, sizeof hp->model_type, "qwen3_5");
    snprintf(hp->architecture, sizeof hp->architecture, "Qwen3_5ForConditionalGeneration");
    hp->nested = true;
    snprintf(hp->dtype, sizeof hp->dtype, "bfloat16");
    hp->vocab_size = 248320;
    hp->full_attention_interval = 4;
    hp->head_dim = 256;
    hp->attn_output_gate = true;
    hp->rope_theta = 10000000.0;
    hp->partial_rotary_factor = 0.25;
    snprintf(hp->rope_type, sizeof hp->rope_type, "default");
    hp->mrope_section[0] = 11, hp->mrope_section[1] = 11, hp->mrope_section[2] = 10;
    hp->mrope_interleaved = true;
    hp->max_position_embeddings = 262144;
    hp->linear_conv_kernel_dim = 4;
    hp->linear_key_head_dim = hp->linear_value_head_dim = 128;
    hp->linear_num_key_heads = 16;
    hp->rms_norm_eps = 1e-6f;
    hp->bos_token_id = hp->eos_token_id = 248044;
    hp->pad_token_id = -1;
    hp->mtp_num_hidden_layers = 1;
    hp->mtp_use_dedicated_embeddings = false;
    s->vision = (hy_vision_shape){.depth = 27, .hidden_size = 1152, .intermediate_size = 4304, .num_heads = 16,
                                  .patch_size = 16, .num_position_embeddings = 2304, .spatial_merge_size = 2,
                                  .temporal_patch_size = 2};
    s->gen_eos[0] = 248046, s->gen_eos[1] = 248044;
}

static void set_layers(hy_hparams *hp, int n) {
    hp->num_hidden_layers = n;
    for (int i = 0; i < n; i++)
        hp->layer_types[i] = (i + 1) % hp->full_attention_interval ? HY_LAYER_GDN : HY_LAYER_ATTN;
}

static void shape_qwen35_08b(hy_model_shape *s) {
    base_qwen35(s);
    hy_hparams *hp = &s->hp;
    hp->hidden_size = 1024;
    hp->intermediate_size = 3584;
    set_layers(hp, 24);
    hp->num_attention_heads = 8;
    hp->num_key_value_heads = 2;
    hp->linear_num_value_heads = 16;
    hp->tie_word_embeddings = true;
    s->vision.out_hidden_size = 1024;
    s->gdn_f32_params = true;
    snprintf(s->transformers_version, sizeof s->transformers_version, "4.57.0.dev0");
    s->gen_temperature = 0.6;
}

static void shape_qwen36_27b(hy_model_shape *s, int n_layers) {
    base_qwen35(s);
    hy_hparams *hp = &s->hp;
    hp->hidden_size = 5120;
    hp->intermediate_size = 17408;
    set_layers(hp, n_layers);
    hp->num_attention_heads = 24;
    hp->num_key_value_heads = 4;
    hp->linear_num_value_heads = 48;
    hp->tie_word_embeddings = false;
    s->qwen36 = true;
    s->vision.out_hidden_size = 5120;
    snprintf(s->transformers_version, sizeof s->transformers_version, "4.57.1");
    s->gen_temperature = 1.0;
}

static void shape_tiny(hy_model_shape *s) {
    base_qwen35(s);
    hy_hparams *hp = &s->hp;
    hp->vocab_size = 512;
    hp->hidden_size = 48;
    hp->intermediate_size = 96;
    set_layers(hp, 8);
    hp->num_attention_heads = 4;
    hp->num_key_value_heads = 2;
    hp->head_dim = 32;
    hp->mrope_section[0] = 2, hp->mrope_section[1] = 1, hp->mrope_section[2] = 1;
    hp->max_position_embeddings = 4096;
    hp->linear_num_key_heads = 2;
    hp->linear_num_value_heads = 6;
    hp->linear_key_head_dim = hp->linear_value_head_dim = 32;
    hp->tie_word_embeddings = false;
    hp->bos_token_id = hp->eos_token_id = 440; /* the ids of the tiny tokenizer in tests/data/models */
    s->qwen36 = true;
    s->gdn_f32_params = true;
    s->vision = (hy_vision_shape){.depth = 1, .hidden_size = 16, .intermediate_size = 32, .num_heads = 2,
                                  .out_hidden_size = 48, .patch_size = 2, .num_position_embeddings = 16,
                                  .spatial_merge_size = 2, .temporal_patch_size = 2};
    snprintf(s->transformers_version, sizeof s->transformers_version, "4.57.1");
    s->gen_eos[0] = 442, s->gen_eos[1] = 440;
    s->gen_temperature = 0.6;
}

const char *hy_model_shape_names(void) { return "qwen3.5-0.8b, qwen3.6-27b, qwen3.6-27b-slice:N (N = 1..64), tiny"; }

int hy_model_shape_get(hy_model_shape *s, const char *name, hy_err *err) {
    static const char slice[] = "qwen3.6-27b-slice:";
    if (!name) name = "";
    if (!strcmp(name, "qwen3.5-0.8b")) {
        shape_qwen35_08b(s);
    } else if (!strcmp(name, "qwen3.6-27b")) {
        shape_qwen36_27b(s, 64);
    } else if (!strncmp(name, slice, sizeof slice - 1)) {
        const char *p = name + sizeof slice - 1;
        char *end;
        long n = strtol(p, &end, 10);
        if (!*p || *end || n < 1 || n > 64)
            return hy_err_set(err, HY_E_INVALID, "shape \"%.80s\": the slice needs a layer count 1..64 (e.g. %s4)",
                              name, slice);
        shape_qwen36_27b(s, (int)n);
    } else if (!strcmp(name, "tiny")) {
        shape_tiny(s);
    } else {
        return hy_err_set(err, HY_E_INVALID, "unknown shape \"%.80s\" (known: %s)", name, hy_model_shape_names());
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    return 0;
}
