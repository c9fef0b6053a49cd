/*
 * `hyla inspect DIR [--json] [--weights F [--quantize-lm-head] [--quantize-gdn-ab]]`: parsed
 * config, layer schedule, derived sizes and the tensor audit of a checkpoint directory; with
 * --weights, the bytes per tensor class the forward pass would hold and read after the
 * load-time conversion (model/linears.h) on the kernel tier a context would pick (--isa,
 * $HYLA_ISA), computed without converting anything. Exit 0 only when the
 * checkpoint is complete and consistent. On any problem the FIRST line of
 * stderr is one sentence naming it (scripts and tests rely on that), while
 * stdout still shows whatever could be read (config and sizes even without
 * weights). Uses the audit API so that every problem is listed at once.
 */
#include "base/error.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "kernels/cpu/dispatch.h"
#include "model/hparams.h"
#include "model/linears.h"
#include "model/model.h"
#include "model/weights.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_MAX 12 /* problems listed per kind in the text report */

/* 26895998464 -> "26,895,998,464" */
static const char *commas(char *buf, size_t cap, int64_t v) {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%lld", (long long)(v < 0 ? -v : v));
    size_t n = strlen(tmp), o = 0;
    if (v < 0 && o + 1 < cap) buf[o++] = '-';
    for (size_t i = 0; i < n && o + 2 < cap; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

/* 65536 -> "64 KiB", 2949120 -> "2.81 MiB" */
static const char *human_bytes(char *buf, size_t cap, int64_t v) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1024 && u < 5) x /= 1024, u++;
    if (x == (double)(int64_t)x) snprintf(buf, cap, "%lld %s", (long long)x, units[u]);
    else snprintf(buf, cap, "%.2f %s", x, units[u]);
    return buf;
}

static void schedule_string(const hy_hparams *hp, char *buf, size_t cap, char *summary, size_t scap) {
    size_t o = 0;
    int group = -1, n_groups = 0;
    bool periodic = true;
    int run = 0;
    for (int i = 0; i < hp->num_hidden_layers && o + 3 < cap; i++) {
        bool a = hp->layer_types[i] == HY_LAYER_ATTN;
        buf[o++] = a ? 'A' : 'G';
        run++;
        if (a) {
            if (group < 0) group = run;
            else if (run != group) periodic = false;
            n_groups++;
            run = 0;
            if (i + 1 < hp->num_hidden_layers) buf[o++] = ' ';
        }
    }
    buf[o] = 0;
    if (run) periodic = false; /* trailing G's without an A */
    if (periodic && group > 0)
        snprintf(summary, scap, "[%d G + 1 A] x %d", group - 1, n_groups);
    else summary[0] = 0;
}

static void print_text(const char *dir, const hy_hparams *hp, const hy_weights_audit *a, const hy_st_set *st,
                       const char *weights_error) {
    char b1[64], b2[64];
    int nA = hy_hp_n_attn_layers(hp), nG = hy_hp_n_gdn_layers(hp);
    char sched[HY_MAX_LAYERS * 2 + 8], summary[64];
    schedule_string(hp, sched, sizeof sched, summary, sizeof summary);

    printf("checkpoint      %s\n", dir);
    printf("model_type      %s%s%s%s, %s\n", hp->model_type, hp->architecture[0] ? " (" : "", hp->architecture,
           hp->architecture[0] ? ")" : "", hp->nested ? "nested (dimensions in text_config)" : "flat (dimensions at top level)");
    printf("dtype           %s\n", hp->dtype[0] ? hp->dtype : "(not given)");
    printf("layers          %d = %d Gated DeltaNet (G) + %d full attention (A)%s%s\n", hp->num_hidden_layers, nG, nA,
           summary[0] ? ", " : "", summary);
    printf("schedule        %s\n", sched);
    printf("dims            vocab %d, hidden %d, intermediate %d, max positions %d\n", hp->vocab_size, hp->hidden_size,
           hp->intermediate_size, hp->max_position_embeddings);
    printf("attention       %d q heads / %d kv heads (group %d), head_dim %d, output gate %s\n",
           hp->num_attention_heads, hp->num_key_value_heads, hp->num_attention_heads / hp->num_key_value_heads,
           hp->head_dim, hp->attn_output_gate ? "yes" : "no");
    printf("gated deltanet  %d key heads x %d, %d value heads x %d (%d per key head), conv kernel %d, conv_dim %d\n",
           hp->linear_num_key_heads, hp->linear_key_head_dim, hp->linear_num_value_heads, hp->linear_value_head_dim,
           hp->linear_num_value_heads / hp->linear_num_key_heads, hp->linear_conv_kernel_dim, hy_hp_gdn_conv_dim(hp));
    printf("rope            %s, theta %.17g, partial_rotary_factor %g -> %d rotary dims, mrope_section [%d, %d, %d]%s\n",
           hp->rope_type, hp->rope_theta, hp->partial_rotary_factor, hy_hp_rotary_dim(hp), hp->mrope_section[0],
           hp->mrope_section[1], hp->mrope_section[2], hp->mrope_interleaved ? " interleaved" : "");
    printf("rms_norm_eps    %g\n", (double)hp->rms_norm_eps);
    printf("embeddings      %s\n", hp->tie_word_embeddings ? "tied (lm_head = embed_tokens)" : "untied (lm_head.weight)");
    printf("special tokens  bos %d, eos %d, pad %d (-1 = none)\n", hp->bos_token_id, hp->eos_token_id,
           hp->pad_token_id);
    if (hp->mtp_num_hidden_layers)
        printf("mtp             %d layer(s), %s embeddings\n", hp->mtp_num_hidden_layers,
               hp->mtp_use_dedicated_embeddings ? "dedicated" : "shared");
    else printf("mtp             none\n");
    if (hp->quant.present)
        printf("quantization    %s %s, activations %s, weight blocks %dx%d, %d modules not converted\n",
               hp->quant.quant_method, hp->quant.fmt[0] ? hp->quant.fmt : "", hp->quant.activation_scheme,
               hp->quant.weight_block_size[0], hp->quant.weight_block_size[1], hp->quant.n_modules_to_not_convert);
    else printf("quantization    none\n");

    int64_t tp = hy_hp_text_params(hp), mp = hy_hp_mtp_params(hp);
    int64_t kv = hy_hp_kv_bytes_per_token(hp, 2), gs = hy_hp_gdn_state_bytes(hp), cs = hy_hp_gdn_conv_bytes(hp, 2);
    printf("\nderived sizes\n");
    printf("  text parameters      %s (%.2f B; no MTP, no vision)\n", commas(b1, sizeof b1, tp), (double)tp / 1e9);
    printf("  MTP parameters       %s (%.2f B)\n", commas(b1, sizeof b1, mp), (double)mp / 1e9);
    printf("  KV cache per token   %s B (%s) bf16, over %d attention layers\n", commas(b1, sizeof b1, kv),
           human_bytes(b2, sizeof b2, kv), nA);
    printf("  GDN state per seq    %s B (%s) fp32, over %d GDN layers\n", commas(b1, sizeof b1, gs),
           human_bytes(b2, sizeof b2, gs), nG);
    printf("  conv state per seq   %s B (%s) bf16\n", commas(b1, sizeof b1, cs), human_bytes(b2, sizeof b2, cs));

    printf("\ntensors\n");
    if (!st) {
        printf("  files                none: %s\n", weights_error ? weights_error : "no weights");
        if (!a) return;
    } else {
        uint64_t total = 0;
        for (int i = 0; i < hy_st_n_files(st); i++) total += hy_st_file_size(st, i);
        printf("  files                %d (%s)\n", hy_st_n_files(st), human_bytes(b1, sizeof b1, (int64_t)total));
    }
    if (!a) return;
    printf("  in files             %d (vision skipped %d, MTP skipped %d, fp8 scales %d)\n", a->n_tensors, a->n_visual,
           a->n_mtp_skipped, a->n_scale_inv);
    printf("  prefix               %s%s%s\n", a->text_prefix, a->mtp_prefix[0] ? ", MTP " : "", a->mtp_prefix);
    printf("  expected slots       %d, found %d\n", a->n_expected, a->n_found);
    if (st) {
        printf("  text elements found  %s\n", commas(b1, sizeof b1, a->numel_text));
        printf("  dtypes              ");
        for (int d = 0; d < HY_DTYPE_COUNT; d++)
            if (a->dtype_tensors[d])
                printf(" %s %lld (%s)", hy_dtype_name((hy_dtype)d), (long long)a->dtype_tensors[d],
                       human_bytes(b1, sizeof b1, a->dtype_bytes[d]));
        printf("\n");
    }
    for (int k = 0; k < HY_WPROB_COUNT; k++) {
        if (!a->n_kind[k]) continue;
        printf("  %-20s %d\n", hy_wprob_kind_name((hy_wprob_kind)k), a->n_kind[k]);
        int shown = 0;
        for (int i = 0; i < a->n_probs && shown < LIST_MAX; i++) {
            if (a->probs[i].kind != (hy_wprob_kind)k) continue;
            printf("    %s: %s\n", a->probs[i].name, a->probs[i].detail);
            shown++;
        }
        if (a->n_kind[k] > shown) printf("    ... and %d more\n", a->n_kind[k] - shown);
    }
    printf("status          %s\n", hy_weights_audit_ok(a) ? "OK: complete and consistent" : "INCOMPLETE or INCONSISTENT");
}

/* The shortest decimal that reads back as the same float (1e-06, not
 * 9.99999997e-07), as a JSON number. */
static json_t *json_float(float f) {
    char buf[32];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f) break;
    }
    return json_real(strtod(buf, NULL));
}

static json_t *json_config(const hy_hparams *hp) {
    json_t *c = json_object();
    json_object_set_new(c, "model_type", json_string(hp->model_type));
    json_object_set_new(c, "architecture", json_string(hp->architecture));
    json_object_set_new(c, "layout", json_string(hp->nested ? "nested" : "flat"));
    json_object_set_new(c, "dtype", hp->dtype[0] ? json_string(hp->dtype) : json_null());
    json_object_set_new(c, "vocab_size", json_integer(hp->vocab_size));
    json_object_set_new(c, "hidden_size", json_integer(hp->hidden_size));
    json_object_set_new(c, "intermediate_size", json_integer(hp->intermediate_size));
    json_object_set_new(c, "num_hidden_layers", json_integer(hp->num_hidden_layers));
    json_t *lt = json_array();
    for (int i = 0; i < hp->num_hidden_layers; i++) json_array_append_new(lt, json_string(hy_layer_type_name(hp->layer_types[i])));
    json_object_set_new(c, "layer_types", lt);
    json_object_set_new(c, "num_attention_heads", json_integer(hp->num_attention_heads));
    json_object_set_new(c, "num_key_value_heads", json_integer(hp->num_key_value_heads));
    json_object_set_new(c, "head_dim", json_integer(hp->head_dim));
    json_object_set_new(c, "attn_output_gate", json_boolean(hp->attn_output_gate));
    json_object_set_new(c, "max_position_embeddings", json_integer(hp->max_position_embeddings));
    json_object_set_new(c, "linear_conv_kernel_dim", json_integer(hp->linear_conv_kernel_dim));
    json_object_set_new(c, "linear_key_head_dim", json_integer(hp->linear_key_head_dim));
    json_object_set_new(c, "linear_value_head_dim", json_integer(hp->linear_value_head_dim));
    json_object_set_new(c, "linear_num_key_heads", json_integer(hp->linear_num_key_heads));
    json_object_set_new(c, "linear_num_value_heads", json_integer(hp->linear_num_value_heads));
    json_object_set_new(c, "rms_norm_eps", json_float(hp->rms_norm_eps));
    json_object_set_new(c, "tie_word_embeddings", json_boolean(hp->tie_word_embeddings));
    json_object_set_new(c, "bos_token_id", hp->bos_token_id >= 0 ? json_integer(hp->bos_token_id) : json_null());
    json_object_set_new(c, "eos_token_id", hp->eos_token_id >= 0 ? json_integer(hp->eos_token_id) : json_null());
    json_object_set_new(c, "pad_token_id", hp->pad_token_id >= 0 ? json_integer(hp->pad_token_id) : json_null());
    json_object_set_new(c, "mtp_num_hidden_layers", json_integer(hp->mtp_num_hidden_layers));
    json_object_set_new(c, "mtp_use_dedicated_embeddings", json_boolean(hp->mtp_use_dedicated_embeddings));
    json_t *r = json_object();
    json_object_set_new(r, "rope_type", json_string(hp->rope_type));
    json_object_set_new(r, "rope_theta", json_real(hp->rope_theta));
    json_object_set_new(r, "partial_rotary_factor", json_real(hp->partial_rotary_factor));
    json_object_set_new(r, "rotary_dim", json_integer(hy_hp_rotary_dim(hp)));
    json_object_set_new(r, "mrope_section", json_pack("[iii]", hp->mrope_section[0], hp->mrope_section[1], hp->mrope_section[2]));
    json_object_set_new(r, "mrope_interleaved", json_boolean(hp->mrope_interleaved));
    json_object_set_new(c, "rope", r);
    if (hp->quant.present) {
        json_t *q = json_object();
        json_object_set_new(q, "quant_method", json_string(hp->quant.quant_method));
        json_object_set_new(q, "fmt", json_string(hp->quant.fmt));
        json_object_set_new(q, "activation_scheme", json_string(hp->quant.activation_scheme));
        json_object_set_new(q, "weight_block_size", json_pack("[ii]", hp->quant.weight_block_size[0], hp->quant.weight_block_size[1]));
        json_t *m = json_array();
        for (int i = 0; i < hp->quant.n_modules_to_not_convert; i++)
            json_array_append_new(m, json_string(hp->quant.modules_to_not_convert[i]));
        json_object_set_new(q, "modules_to_not_convert", m);
        json_object_set_new(c, "quantization", q);
    } else {
        json_object_set_new(c, "quantization", json_null());
    }
    return c;
}

static json_t *json_report(const char *dir, const hy_hparams *hp, const hy_weights_audit *a, const hy_st_set *st,
                           const char *error) {
    json_t *o = json_object();
    json_object_set_new(o, "dir", json_string(dir));
    json_object_set_new(o, "config", json_config(hp));
    char sched[HY_MAX_LAYERS * 2 + 8], summary[64];
    schedule_string(hp, sched, sizeof sched, summary, sizeof summary);
    json_object_set_new(o, "schedule", json_string(sched));
    json_object_set_new(o, "n_gdn_layers", json_integer(hy_hp_n_gdn_layers(hp)));
    json_object_set_new(o, "n_attention_layers", json_integer(hy_hp_n_attn_layers(hp)));
    json_t *d = json_object();
    json_object_set_new(d, "text_params", json_integer(hy_hp_text_params(hp)));
    json_object_set_new(d, "mtp_params", json_integer(hy_hp_mtp_params(hp)));
    json_object_set_new(d, "kv_bytes_per_token_bf16", json_integer(hy_hp_kv_bytes_per_token(hp, 2)));
    json_object_set_new(d, "gdn_state_bytes_per_seq_fp32", json_integer(hy_hp_gdn_state_bytes(hp)));
    json_object_set_new(d, "conv_state_bytes_per_seq_bf16", json_integer(hy_hp_gdn_conv_bytes(hp, 2)));
    json_object_set_new(d, "rotary_dim", json_integer(hy_hp_rotary_dim(hp)));
    json_object_set_new(d, "gdn_conv_dim", json_integer(hy_hp_gdn_conv_dim(hp)));
    json_object_set_new(o, "derived", d);

    json_t *t = json_object();
    json_t *files = json_array();
    for (int i = 0; i < hy_st_n_files(st); i++) json_array_append_new(files, json_string(hy_st_file_path(st, i)));
    json_object_set_new(t, "files", files);
    if (a) {
        json_object_set_new(t, "n_tensors", json_integer(a->n_tensors));
        json_object_set_new(t, "n_expected", json_integer(a->n_expected));
        json_object_set_new(t, "n_found", json_integer(a->n_found));
        json_object_set_new(t, "n_visual_skipped", json_integer(a->n_visual));
        json_object_set_new(t, "n_mtp_skipped", json_integer(a->n_mtp_skipped));
        json_object_set_new(t, "n_scale_inv", json_integer(a->n_scale_inv));
        json_object_set_new(t, "text_prefix", json_string(a->text_prefix));
        json_object_set_new(t, "mtp_prefix", a->mtp_prefix[0] ? json_string(a->mtp_prefix) : json_null());
        json_object_set_new(t, "mtp_bound", json_boolean(a->mtp_bound));
        json_object_set_new(t, "lm_head_tied", json_boolean(a->lm_head_tied));
        json_object_set_new(t, "numel_text", json_integer(a->numel_text));
        json_object_set_new(t, "numel_mtp", json_integer(a->numel_mtp));
        json_t *dt = json_object();
        for (int k = 0; k < HY_DTYPE_COUNT; k++)
            if (a->dtype_tensors[k])
                json_object_set_new(dt, hy_dtype_name((hy_dtype)k),
                                    json_pack("{sIsI}", "tensors", (json_int_t)a->dtype_tensors[k], "bytes",
                                              (json_int_t)a->dtype_bytes[k]));
        json_object_set_new(t, "dtypes", dt);
        static const char *keys[HY_WPROB_COUNT] = {"missing", "unexpected", "misshaped", "bad_dtype", "misaligned"};
        for (int k = 0; k < HY_WPROB_COUNT; k++) {
            json_t *l = json_array();
            for (int i = 0; i < a->n_probs; i++)
                if (a->probs[i].kind == (hy_wprob_kind)k)
                    json_array_append_new(l, json_pack("{ssss}", "name", a->probs[i].name, "detail", a->probs[i].detail));
            json_object_set_new(t, keys[k], l);
        }
    }
    json_object_set_new(o, "tensors", t);
    json_object_set_new(o, "ok", json_boolean(!error));
    json_object_set_new(o, "error", error ? json_string(error) : json_null());
    return o;
}

static void usage(FILE *f) {
    fprintf(f, "usage: hyla inspect DIR [--json] [--weights F [--quantize-lm-head] [--quantize-gdn-ab]]\n"
               "  Prints the parsed config.json, the layer schedule, derived sizes and an audit of the\n"
               "  safetensors weights of a Qwen3.5/3.6 checkpoint directory. Exit 0 only if complete.\n"
               "  --weights F   also the bytes per tensor class with matrices as auto | bf16 | fp8 | q8 | q4\n");
}

static const char *fmts_string(unsigned fmts, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (int f = 0; f < HY_WFMT_COUNT && o + 8 < cap; f++)
        if (fmts & (1u << f)) o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "+" : "", hy_wfmt_name((hy_wfmt)f));
    return buf;
}

/* The --weights table (text). */
static void print_plan(const hy_ctx_opts *o, hy_isa isa, const hy_wclass_info *cls) {
    char b1[64], b2[64], b3[64], fs[64], fm[64];
    printf("\nweights as used (--weights %s%s%s, kernels %s)\n", hy_wreq_name(o->weights),
           (o->quant_flags & HY_QUANT_LM_HEAD) ? " --quantize-lm-head" : "",
           (o->quant_flags & HY_QUANT_GDN_AB) ? " --quantize-gdn-ab" : "", hy_isa_name(isa));
    printf("  %-28s %5s %15s %12s %12s %12s  %s\n", "class", "n", "elements", "stored", "used", "held", "format");
    int64_t st = 0, us = 0, ow = 0;
    for (int k = 0; k < HY_WCLASS_COUNT; k++) {
        const hy_wclass_info *c = &cls[k];
        if (!c->n) continue;
        printf("  %-28s %5d %15s %12s %12s %12s  %s\n", hy_wclass_name((hy_wclass)k), c->n,
               commas(b1, sizeof b1, c->numel), human_bytes(b2, sizeof b2, c->bytes_stored),
               human_bytes(b3, sizeof b3, c->bytes_used), human_bytes(fs, sizeof fs, c->bytes_owned),
               fmts_string(c->fmts, fm, sizeof fm));
        st += c->bytes_stored;
        us += c->bytes_used;
        ow += c->bytes_owned;
    }
    printf("  %-28s %5s %15s %12s %12s %12s\n", "total", "", "", human_bytes(b1, sizeof b1, st),
           human_bytes(b2, sizeof b2, us), human_bytes(b3, sizeof b3, ow));
    printf("  (stored: in the files; used: what the matmuls read, embed_tokens counted whole; held: converted\n"
           "   copies in memory besides the mmap, fp32 small tensors included; matrices used as stored are\n"
           "   also copied into memory at load when they fit, unless --mmap; bf16g / fp8g: the same values\n"
           "   in the row groups the kernel tier reads)\n");
}

static json_t *json_plan(const hy_ctx_opts *o, hy_isa isa, const hy_wclass_info *cls) {
    json_t *p = json_object();
    json_object_set_new(p, "weights", json_string(hy_wreq_name(o->weights)));
    json_object_set_new(p, "isa", json_string(hy_isa_name(isa)));
    json_object_set_new(p, "quantize_lm_head", json_boolean(o->quant_flags & HY_QUANT_LM_HEAD));
    json_object_set_new(p, "quantize_gdn_ab", json_boolean(o->quant_flags & HY_QUANT_GDN_AB));
    json_t *a = json_array();
    for (int k = 0; k < HY_WCLASS_COUNT; k++) {
        const hy_wclass_info *c = &cls[k];
        if (!c->n) continue;
        char fs[64];
        json_array_append_new(a, json_pack("{sssisIsIsIsIss}", "class", hy_wclass_name((hy_wclass)k), "tensors", c->n,
                                           "elements", (json_int_t)c->numel, "bytes_stored", (json_int_t)c->bytes_stored,
                                           "bytes_used", (json_int_t)c->bytes_used, "bytes_held",
                                           (json_int_t)c->bytes_owned, "format", fmts_string(c->fmts, fs, sizeof fs)));
    }
    json_object_set_new(p, "classes", a);
    return p;
}

HY_CMD(inspect) {
    const char *dir = NULL;
    bool as_json = false, plan = false;
    hy_ctx_opts copts = {0};
    int copt;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) as_json = true;
        else if ((copt = hy_cli_ctx_opt(argc, argv, &i, &copts)) != 0) {
            if (copt < 0) return 2;
            plan = true;
        }
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "hyla inspect: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else dir = argv[i];
    }
    if (!dir) {
        usage(stderr);
        return 2;
    }

    hy_err err = {0};
    hy_hparams hp;
    size_t n = strlen(dir) + 16;
    char *cfg = malloc(n);
    if (!cfg) {
        fprintf(stderr, "hyla inspect: out of memory\n");
        return 1;
    }
    snprintf(cfg, n, "%s/config.json", dir);
    int rc = hy_config_load(&hp, cfg, &err);
    free(cfg);
    if (rc) {
        fprintf(stderr, "hyla inspect: %s\n", err.msg);
        return 1;
    }

    hy_st_set *st = NULL;
    char *error = NULL; /* the one-line verdict, NULL when all is well */
    hy_weights_audit a;
    bool have_audit = false;
    rc = hy_st_open_dir(&st, dir, &err);
    if (rc) {
        error = strdup(err.msg);
        if (rc == HY_E_NOT_FOUND && strstr(err.msg, "no weights")) {
            /* config-only directory: still audit, so every tensor is listed as missing */
            hy_err aerr = {0};
            if (hy_weights_audit_run(&a, &hp, NULL, &aerr) == 0) have_audit = true;
        }
    } else {
        hy_err aerr = {0};
        if (hy_weights_audit_run(&a, &hp, st, &aerr) != 0) {
            error = strdup(aerr.msg);
        } else {
            have_audit = true;
            if (!hy_weights_audit_ok(&a)) {
                char buf[1400];
                const hy_wprob *p = &a.probs[0];
                snprintf(buf, sizeof buf,
                         "%s: checkpoint is not usable: %d missing, %d unexpected, %d mis-shaped, %d bad dtype, "
                         "%d misaligned tensors; first: %s %s (%s)",
                         dir, a.n_kind[HY_WPROB_MISSING], a.n_kind[HY_WPROB_UNEXPECTED], a.n_kind[HY_WPROB_SHAPE],
                         a.n_kind[HY_WPROB_DTYPE], a.n_kind[HY_WPROB_LAYOUT], hy_wprob_kind_name(p->kind), p->name,
                         p->detail);
                error = strdup(buf);
            }
        }
    }
    /* --weights: the per-class table needs the bound model (views only, nothing converted) */
    hy_wclass_info cls[HY_WCLASS_COUNT];
    hy_isa plan_isa = HY_ISA_REF;
    bool have_plan = false;
    if (plan && !error) {
        hy_model *m = NULL;
        hy_err perr = {0};
        /* the kernels a context would select (tier and instance) decide whether matrices are held
         * in row groups (bf16g / fp8g) */
        hy_cpu_kernels k;
        if (hy_cpu_kernels_init(&k, copts.isa, &perr) || hy_model_load(&m, dir, &perr) ||
            hy_linears_plan(m, copts.weights, hy_linears_tier_flags(copts.quant_flags, k.isa, k.tune),
                            copts.weights_res, cls, &perr))
            error = strdup(perr.msg);
        else {
            have_plan = true;
            plan_isa = k.isa;
        }
        hy_model_free(m);
    }
    /* The verdict goes first on stderr, before anything else could print. */
    if (error) fprintf(stderr, "hyla inspect: %s\n", error);
    if (as_json) {
        json_t *o = json_report(dir, &hp, have_audit ? &a : NULL, st, error);
        if (have_plan) json_object_set_new(o, "weights_plan", json_plan(&copts, plan_isa, cls));
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
        printf("\n");
        json_decref(o);
    } else {
        print_text(dir, &hp, have_audit ? &a : NULL, st, error);
        if (have_plan) print_plan(&copts, plan_isa, cls);
    }
    int code = error ? 1 : 0;
    free(error);
    if (have_audit) hy_weights_audit_release(&a);
    hy_st_free(st);
    hy_hparams_release(&hp);
    return code;
}
