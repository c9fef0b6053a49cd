/*
 * Synthetic checkpoint writer (see random_model.h). Three steps: plan the tensor list from
 * the shape (names, shapes, dtypes, how to fill), assign tensors to shards in plan order, then
 * for each shard open a streaming safetensors writer (tensors re-ordered by element size so
 * every one is aligned) and generate each tensor in fixed-size pieces.
 */
#include "model/random_model.h"

#include "base/fp.h"
#include "base/log.h"
#include "io/safetensors_write.h"

#include <errno.h>
#include <fnmatch.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FP8_BLOCK 128
#define PIECE (1u << 20) /* elements generated per step */
#define LM "model.language_model."

typedef enum rm_init {
    RI_NORMAL,     /* N(0, std) */
    RI_NORM_ZC,    /* zero-centred (1+w) norm weight */
    RI_NORM_PLAIN, /* plain-scale norm weight, around 1 */
    RI_ALOG,       /* log(U(1,16)) */
    RI_DTBIAS,     /* U(-1, 1) */
    RI_SCALE,      /* fp8 weight_scale_inv of block (r, c) */
} rm_init;

typedef struct rm_tensor {
    char name[160];
    hy_dtype dtype;
    int ndim;
    int64_t shape[3];
    rm_init init;
    float std;
    uint64_t key;       /* RNG key of the values */
    uint64_t scale_key; /* fp8 weights and scale tensors: RNG key of the block scales */
    int shard;
} rm_tensor;

typedef struct rm_plan {
    rm_tensor *t;
    int n, cap;
    const hy_random_model_opts *o;
    /* modules_to_not_convert (fp8) */
    char **skip;
    int n_skip, cap_skip;
} rm_plan;

/* ---- counter-based random numbers ----------------------------------------------------- */

static inline uint64_t rm_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint64_t rm_bits(uint64_t key, uint64_t i) { return rm_mix(key + (i + 1) * 0x9e3779b97f4a7c15ull); }
/* Approximately N(0,1): sum of four 16-bit uniforms, centred and scaled (Irwin-Hall n=4). */
static inline float rm_normal(uint64_t b) {
    const uint32_t s = (uint32_t)(b & 0xffff) + (uint32_t)((b >> 16) & 0xffff) + (uint32_t)((b >> 32) & 0xffff) +
                       (uint32_t)(b >> 48);
    return ((float)s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}
static inline float rm_uniform(uint64_t b) { return (float)(b >> 40) * 0x1p-24f; } /* [0, 1) */

static uint64_t rm_name_key(uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 1099511628211ull;
    return rm_mix(rm_mix(seed) ^ h);
}

/* Scale of fp8 block (br, bc) of a weight: amax/448 with amax ~ 0.02·(4 + U) (the weights are
 * ~N(0, 0.02), so blocks of 16k values reach about 4-5 sigma). */
static float rm_block_scale(uint64_t scale_key, int64_t br, int64_t bc, int64_t n_bc) {
    return 0.02f * (4.0f + rm_uniform(rm_bits(scale_key, (uint64_t)(br * n_bc + bc)))) / 448.0f;
}

/* ---- plan ------------------------------------------------------------------------------- */

static int plan_add(rm_plan *p, hy_err *err, const char *name, hy_dtype dt, int ndim, int64_t d0, int64_t d1,
                    int64_t d2, rm_init init, float std) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        rm_tensor *t = realloc(p->t, (size_t)cap * sizeof *t);
        if (!t) return hy_err_set(err, HY_E_NOMEM, "random model: out of memory planning tensors");
        p->t = t, p->cap = cap;
    }
    rm_tensor *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt, t->ndim = ndim, t->shape[0] = d0, t->shape[1] = d1, t->shape[2] = d2;
    t->init = init, t->std = std;
    t->key = rm_name_key(p->o->seed, name);
    return 0;
}

static int plan_skip(rm_plan *p, hy_err *err, const char *module) {
    if (p->n_skip == p->cap_skip) {
        int cap = p->cap_skip ? 2 * p->cap_skip : 64;
        char **s = realloc(p->skip, (size_t)cap * sizeof *s);
        if (!s) return hy_err_set(err, HY_E_NOMEM, "random model: out of memory");
        p->skip = s, p->cap_skip = cap;
    }
    if (!(p->skip[p->n_skip] = strdup(module))) return hy_err_set(err, HY_E_NOMEM, "random model: out of memory");
    p->n_skip++;
    return 0;
}

/* A linear weight `<module>.weight` [out, in]; fp8 (+ scale tensor) when quantizable and fp8 on. */
static int plan_linear(rm_plan *p, hy_err *err, const char *module, int64_t out, int64_t in, bool quantizable) {
    char name[160];
    snprintf(name, sizeof name, "%s.weight", module);
    const bool fp8 = p->o->fp8 && quantizable;
    int rc = plan_add(p, err, name, fp8 ? HY_DTYPE_F8_E4M3 : HY_DTYPE_BF16, 2, out, in, 0, RI_NORMAL, 0.02f);
    if (rc) return rc;
    if (!fp8) return p->o->fp8 ? plan_skip(p, err, module) : 0;
    char sname[176];
    snprintf(sname, sizeof sname, "%s_scale_inv", name);
    const uint64_t skey = rm_name_key(p->o->seed, sname);
    p->t[p->n - 1].scale_key = skey;
    rc = plan_add(p, err, sname, HY_DTYPE_F32, 2, (out + FP8_BLOCK - 1) / FP8_BLOCK, (in + FP8_BLOCK - 1) / FP8_BLOCK,
                  0, RI_SCALE, 0.0f);
    if (!rc) p->t[p->n - 1].scale_key = skey;
    return rc;
}

static int plan_vec(rm_plan *p, hy_err *err, const char *name, int64_t n, rm_init init, hy_dtype dt) {
    return plan_add(p, err, name, dt, 1, n, 0, 0, init, 0.0f);
}

/* Full attention block (self_attn.*) under prefix (ends with '.'). */
static int plan_attn(rm_plan *p, hy_err *err, const char *pre) {
    const hy_hparams *hp = &p->o->shape->hp;
    const int64_t D = hp->hidden_size, Hq = hp->num_attention_heads, Hkv = hp->num_key_value_heads, Dh = hp->head_dim;
    char m[160];
    int rc = 0;
    snprintf(m, sizeof m, "%sself_attn.q_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, 2 * Hq * Dh, D, true);
    snprintf(m, sizeof m, "%sself_attn.k_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, Hkv * Dh, D, true);
    snprintf(m, sizeof m, "%sself_attn.v_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, Hkv * Dh, D, true);
    snprintf(m, sizeof m, "%sself_attn.o_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, D, Hq * Dh, true);
    snprintf(m, sizeof m, "%sself_attn.q_norm.weight", pre);
    if (!rc) rc = plan_vec(p, err, m, Dh, RI_NORM_ZC, HY_DTYPE_BF16);
    snprintf(m, sizeof m, "%sself_attn.k_norm.weight", pre);
    if (!rc) rc = plan_vec(p, err, m, Dh, RI_NORM_ZC, HY_DTYPE_BF16);
    return rc;
}

static int plan_mlp_norms(rm_plan *p, hy_err *err, const char *pre) {
    const hy_hparams *hp = &p->o->shape->hp;
    const int64_t D = hp->hidden_size, F = hp->intermediate_size;
    char m[160];
    int rc = 0;
    snprintf(m, sizeof m, "%spost_attention_layernorm.weight", pre);
    if (!rc) rc = plan_vec(p, err, m, D, RI_NORM_ZC, HY_DTYPE_BF16);
    snprintf(m, sizeof m, "%smlp.gate_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, F, D, true);
    snprintf(m, sizeof m, "%smlp.up_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, F, D, true);
    snprintf(m, sizeof m, "%smlp.down_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, D, F, true);
    return rc;
}

static int plan_gdn(rm_plan *p, hy_err *err, const char *pre) {
    const hy_model_shape *s = p->o->shape;
    const hy_hparams *hp = &s->hp;
    const int64_t D = hp->hidden_size, Hk = hp->linear_num_key_heads, Hv = hp->linear_num_value_heads;
    const int64_t dk = hp->linear_key_head_dim, dv = hp->linear_value_head_dim, K = hp->linear_conv_kernel_dim;
    const int64_t conv_dim = 2 * Hk * dk + Hv * dv;
    const hy_dtype pdt = s->gdn_f32_params ? HY_DTYPE_F32 : HY_DTYPE_BF16;
    char m[160];
    int rc = 0;
    snprintf(m, sizeof m, "%slinear_attn.in_proj_qkv", pre);
    if (!rc) rc = plan_linear(p, err, m, conv_dim, D, true);
    snprintf(m, sizeof m, "%slinear_attn.in_proj_z", pre);
    if (!rc) rc = plan_linear(p, err, m, Hv * dv, D, true);
    snprintf(m, sizeof m, "%slinear_attn.in_proj_b", pre);
    if (!rc) rc = plan_linear(p, err, m, Hv, D, false);
    snprintf(m, sizeof m, "%slinear_attn.in_proj_a", pre);
    if (!rc) rc = plan_linear(p, err, m, Hv, D, false);
    snprintf(m, sizeof m, "%slinear_attn.conv1d.weight", pre);
    if (!rc) rc = plan_add(p, err, m, HY_DTYPE_BF16, 3, conv_dim, 1, K, RI_NORMAL, 0.3f);
    snprintf(m, sizeof m, "%slinear_attn.A_log", pre);
    if (!rc) rc = plan_vec(p, err, m, Hv, RI_ALOG, pdt);
    snprintf(m, sizeof m, "%slinear_attn.dt_bias", pre);
    if (!rc) rc = plan_vec(p, err, m, Hv, RI_DTBIAS, HY_DTYPE_BF16);
    snprintf(m, sizeof m, "%slinear_attn.norm.weight", pre);
    if (!rc) rc = plan_vec(p, err, m, dv, RI_NORM_PLAIN, pdt);
    snprintf(m, sizeof m, "%slinear_attn.out_proj", pre);
    if (!rc) rc = plan_linear(p, err, m, D, Hv * dv, true);
    return rc;
}

static int plan_build(rm_plan *p, hy_err *err) {
    const hy_hparams *hp = &p->o->shape->hp;
    const int64_t D = hp->hidden_size;
    char pre[96], m[160];
    int rc = plan_add(p, err, LM "embed_tokens.weight", HY_DTYPE_BF16, 2, hp->vocab_size, D, 0, RI_NORMAL, 0.02f);
    if (!rc && p->o->fp8) rc = plan_skip(p, err, LM "embed_tokens");
    for (int i = 0; !rc && i < hp->num_hidden_layers; i++) {
        snprintf(pre, sizeof pre, LM "layers.%d.", i);
        snprintf(m, sizeof m, "%sinput_layernorm.weight", pre);
        rc = plan_vec(p, err, m, D, RI_NORM_ZC, HY_DTYPE_BF16);
        if (!rc) rc = hp->layer_types[i] == HY_LAYER_ATTN ? plan_attn(p, err, pre) : plan_gdn(p, err, pre);
        if (!rc) rc = plan_mlp_norms(p, err, pre);
    }
    if (!rc) rc = plan_vec(p, err, LM "norm.weight", D, RI_NORM_ZC, HY_DTYPE_BF16);
    if (!rc && !hp->tie_word_embeddings) rc = plan_linear(p, err, "lm_head", hp->vocab_size, D, false);
    if (!rc && p->o->fp8 && hp->tie_word_embeddings) rc = plan_skip(p, err, "lm_head");
    for (int l = 0; !rc && l < hp->mtp_num_hidden_layers; l++) {
        if (l == 0) {
            rc = plan_linear(p, err, "mtp.fc", D, 2 * D, false);
            if (!rc) rc = plan_vec(p, err, "mtp.pre_fc_norm_embedding.weight", D, RI_NORM_ZC, HY_DTYPE_BF16);
            if (!rc) rc = plan_vec(p, err, "mtp.pre_fc_norm_hidden.weight", D, RI_NORM_ZC, HY_DTYPE_BF16);
            if (!rc) rc = plan_vec(p, err, "mtp.norm.weight", D, RI_NORM_ZC, HY_DTYPE_BF16);
        }
        snprintf(pre, sizeof pre, "mtp.layers.%d.", l);
        snprintf(m, sizeof m, "%sinput_layernorm.weight", pre);
        if (!rc) rc = plan_vec(p, err, m, D, RI_NORM_ZC, HY_DTYPE_BF16);
        if (!rc) rc = plan_attn(p, err, pre);
        if (!rc) rc = plan_mlp_norms(p, err, pre);
    }
    if (!rc && p->o->fp8) rc = plan_skip(p, err, "model.visual");
    return rc;
}

static void plan_free(rm_plan *p) {
    free(p->t);
    for (int i = 0; i < p->n_skip; i++) free(p->skip[i]);
    free(p->skip);
}

static uint64_t rm_numel(const rm_tensor *t) {
    uint64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (uint64_t)t->shape[i];
    return n;
}

/* ---- values ----------------------------------------------------------------------------- */

/* Elements [i0, i0+n) of t, converted to t->dtype into dst. */
static void rm_fill(const rm_tensor *t, uint64_t i0, size_t n, float *tmp, void *dst) {
    if (t->dtype == HY_DTYPE_F8_E4M3) {
        const int64_t cols = t->shape[1], n_bc = (cols + FP8_BLOCK - 1) / FP8_BLOCK;
        uint8_t *o = dst;
        int64_t r = (int64_t)(i0 / (uint64_t)cols), c = (int64_t)(i0 % (uint64_t)cols);
        float inv = 1.0f / rm_block_scale(t->scale_key, r / FP8_BLOCK, c / FP8_BLOCK, n_bc);
        for (size_t k = 0; k < n; k++) {
            if (c % FP8_BLOCK == 0) inv = 1.0f / rm_block_scale(t->scale_key, r / FP8_BLOCK, c / FP8_BLOCK, n_bc);
            o[k] = hy_f32_to_fp8_e4m3(t->std * rm_normal(rm_bits(t->key, i0 + k)) * inv);
            if (++c == cols) c = 0, r++;
        }
        return;
    }
    for (size_t k = 0; k < n; k++) {
        const uint64_t b = rm_bits(t->key, i0 + k);
        float v;
        switch (t->init) {
        case RI_NORMAL: v = t->std * rm_normal(b); break;
        case RI_NORM_ZC: v = 0.1f * rm_normal(b); break;
        case RI_NORM_PLAIN: v = 1.0f + 0.1f * rm_normal(b); break;
        case RI_ALOG: v = logf(1.0f + 15.0f * rm_uniform(b)); break;
        case RI_DTBIAS: v = 2.0f * rm_uniform(b) - 1.0f; break;
        case RI_SCALE: {
            const int64_t n_bc = t->shape[1], idx = (int64_t)(i0 + k);
            v = rm_block_scale(t->scale_key, idx / n_bc, idx % n_bc, n_bc);
            break;
        }
        default: v = 0.0f;
        }
        tmp[k] = v;
    }
    if (t->dtype == HY_DTYPE_F32) {
        memcpy(dst, tmp, n * sizeof(float));
    } else {
        uint16_t *o = dst;
        for (size_t k = 0; k < n; k++) o[k] = hy_f32_to_bf16(tmp[k]);
    }
}

/* ---- files ------------------------------------------------------------------------------ */

static int mkdir_p(const char *dir, hy_err *err) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return hy_err_set(err, HY_E_INVALID, "output directory path is too long");
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return hy_err_set(err, HY_E_IO, "%s: cannot create directory: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return hy_err_set(err, HY_E_IO, "%s: cannot create directory: %s", tmp, strerror(errno));
    struct stat stt;
    if (stat(tmp, &stt) != 0 || !S_ISDIR(stt.st_mode))
        return hy_err_set(err, HY_E_IO, "%s: not a directory", tmp);
    return 0;
}

static bool file_exists(const char *path) {
    struct stat stt;
    return stat(path, &stt) == 0;
}

/* Removes earlier weight files (single, index, shards) so a forced rewrite leaves no stale shard. */
static int remove_old_weights(const char *dir, hy_err *err) {
    DIR *d = opendir(dir);
    if (!d) return hy_err_set(err, HY_E_IO, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (strcmp(e->d_name, "model.safetensors") && strcmp(e->d_name, "model.safetensors.index.json") &&
            fnmatch("model-*-of-*.safetensors", e->d_name, 0))
            continue;
        char path[4352];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (remove(path) != 0) rc = hy_err_set(err, HY_E_IO, "%s: cannot remove: %s", path, strerror(errno));
    }
    closedir(d);
    return rc;
}

/* Python json.dumps prints floats with the shortest repr; go through 7 significant digits so a
 * float field such as rms_norm_eps comes out as 1e-06, not 9.99999997e-07. */
static json_t *jfloat(double v) {
    char b[32];
    snprintf(b, sizeof b, "%.7g", v);
    return json_real(strtod(b, NULL));
}

/* Writes root as Python's json.dumps(indent=2, sort_keys=True) + "\n" would (HF's
 * to_json_file): jansson prints 1e-6 where Python prints 1e-06, so one-digit exponents of
 * numbers (outside strings) get a leading zero. */
static int write_json(const char *dir, const char *file, json_t *root, hy_err *err) {
    char path[4352];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (!root) return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    char *js = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    json_decref(root);
    const size_t n = js ? strlen(js) : 0;
    char *o = js ? malloc(n + n / 2 + 2) : NULL;
    if (!o) {
        free(js);
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    }
    size_t k = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        const char c = js[i];
        o[k++] = c;
        if (in_str) {
            if (c == '\\' && i + 1 < n) o[k++] = js[++i];
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if ((c == 'e' || c == 'E') && i + 2 < n && (js[i + 1] == '-' || js[i + 1] == '+') &&
                   js[i + 2] >= '0' && js[i + 2] <= '9' && (i + 3 >= n || js[i + 3] < '0' || js[i + 3] > '9')) {
            o[k++] = js[++i];
            o[k++] = '0';
        }
    }
    o[k++] = '\n';
    free(js);
    int rc = 0;
    FILE *f = fopen(path, "wb");
    if (!f) rc = hy_err_set(err, HY_E_IO, "%s: cannot create: %s", path, strerror(errno));
    else if (fwrite(o, 1, k, f) != k) rc = hy_err_set(err, HY_E_IO, "%s: write failed: %s", path, strerror(errno));
    if (f && fclose(f) != 0 && !rc) rc = hy_err_set(err, HY_E_IO, "%s: close failed: %s", path, strerror(errno));
    free(o);
    return rc;
}

static json_t *config_json(const rm_plan *p) {
    const hy_model_shape *s = p->o->shape;
    const hy_hparams *hp = &s->hp;
    json_t *t = json_object();
    json_object_set_new(t, "attention_bias", json_false());
    json_object_set_new(t, "attention_dropout", json_real(0.0));
    json_object_set_new(t, "attn_output_gate", json_boolean(hp->attn_output_gate));
    json_object_set_new(t, "bos_token_id", json_integer(hp->bos_token_id));
    json_object_set_new(t, "dtype", json_string(hp->dtype));
    json_object_set_new(t, "eos_token_id", json_integer(hp->eos_token_id));
    json_object_set_new(t, "full_attention_interval", json_integer(hp->full_attention_interval));
    json_object_set_new(t, "head_dim", json_integer(hp->head_dim));
    json_object_set_new(t, "hidden_act", json_string("silu"));
    json_object_set_new(t, "hidden_size", json_integer(hp->hidden_size));
    json_object_set_new(t, "initializer_range", jfloat(0.02));
    json_object_set_new(t, "intermediate_size", json_integer(hp->intermediate_size));
    json_t *lt = json_array();
    for (int i = 0; i < hp->num_hidden_layers; i++)
        json_array_append_new(lt, json_string(hy_layer_type_name(hp->layer_types[i])));
    json_object_set_new(t, "layer_types", lt);
    json_object_set_new(t, "linear_conv_kernel_dim", json_integer(hp->linear_conv_kernel_dim));
    json_object_set_new(t, "linear_key_head_dim", json_integer(hp->linear_key_head_dim));
    json_object_set_new(t, "linear_num_key_heads", json_integer(hp->linear_num_key_heads));
    json_object_set_new(t, "linear_num_value_heads", json_integer(hp->linear_num_value_heads));
    json_object_set_new(t, "linear_value_head_dim", json_integer(hp->linear_value_head_dim));
    json_object_set_new(t, "mamba_ssm_dtype", json_string("float32"));
    json_object_set_new(t, "max_position_embeddings", json_integer(hp->max_position_embeddings));
    json_object_set_new(t, "model_type", json_string("qwen3_5_text"));
    json_object_set_new(t, "mtp_num_hidden_layers", json_integer(hp->mtp_num_hidden_layers));
    json_object_set_new(t, "mtp_use_dedicated_embeddings", json_boolean(hp->mtp_use_dedicated_embeddings));
    json_object_set_new(t, "num_attention_heads", json_integer(hp->num_attention_heads));
    json_object_set_new(t, "num_hidden_layers", json_integer(hp->num_hidden_layers));
    json_object_set_new(t, "num_key_value_heads", json_integer(hp->num_key_value_heads));
    if (s->qwen36) json_object_set_new(t, "output_gate_type", json_string("swish"));
    json_object_set_new(t, "pad_token_id", hp->pad_token_id < 0 ? json_null() : json_integer(hp->pad_token_id));
    json_object_set_new(t, "partial_rotary_factor", jfloat(hp->partial_rotary_factor));
    json_object_set_new(t, "rms_norm_eps", jfloat(hp->rms_norm_eps));
    json_t *rope = json_object(), *ms = json_array();
    json_object_set_new(rope, "mrope_interleaved", json_boolean(hp->mrope_interleaved));
    for (int i = 0; i < 3; i++) json_array_append_new(ms, json_integer(hp->mrope_section[i]));
    json_object_set_new(rope, "mrope_section", ms);
    json_object_set_new(rope, "partial_rotary_factor", jfloat(hp->partial_rotary_factor));
    if (hp->rope_theta == floor(hp->rope_theta) && hp->rope_theta < 9e15)
        json_object_set_new(rope, "rope_theta", json_integer((json_int_t)hp->rope_theta));
    else
        json_object_set_new(rope, "rope_theta", json_real(hp->rope_theta));
    json_object_set_new(rope, "rope_type", json_string(hp->rope_type));
    json_object_set_new(t, "rope_parameters", rope);
    json_object_set_new(t, "tie_word_embeddings", json_boolean(hp->tie_word_embeddings));
    json_object_set_new(t, "use_cache", json_true());
    json_object_set_new(t, "vocab_size", json_integer(hp->vocab_size));

    const hy_vision_shape *v = &s->vision;
    json_t *vc = json_object();
    json_object_set_new(vc, "deepstack_visual_indexes", json_array());
    json_object_set_new(vc, "depth", json_integer(v->depth));
    json_object_set_new(vc, "hidden_act", json_string("gelu_pytorch_tanh"));
    json_object_set_new(vc, "hidden_size", json_integer(v->hidden_size));
    json_object_set_new(vc, "in_channels", json_integer(3));
    json_object_set_new(vc, "initializer_range", jfloat(0.02));
    json_object_set_new(vc, "intermediate_size", json_integer(v->intermediate_size));
    json_object_set_new(vc, "model_type", json_string("qwen3_5"));
    json_object_set_new(vc, "num_heads", json_integer(v->num_heads));
    json_object_set_new(vc, "num_position_embeddings", json_integer(v->num_position_embeddings));
    json_object_set_new(vc, "out_hidden_size", json_integer(v->out_hidden_size));
    json_object_set_new(vc, "patch_size", json_integer(v->patch_size));
    json_object_set_new(vc, "spatial_merge_size", json_integer(v->spatial_merge_size));
    json_object_set_new(vc, "temporal_patch_size", json_integer(v->temporal_patch_size));

    json_t *r = json_object();
    json_t *arch = json_array();
    json_array_append_new(arch, json_string(hp->architecture));
    json_object_set_new(r, "architectures", arch);
    json_object_set_new(r, "image_token_id", json_integer(248056));
    json_object_set_new(r, "language_model_only", json_false());
    json_object_set_new(r, "model_type", json_string(hp->model_type));
    json_object_set_new(r, "text_config", t);
    json_object_set_new(r, "tie_word_embeddings", json_boolean(hp->tie_word_embeddings));
    json_object_set_new(r, "transformers_version", json_string(s->transformers_version));
    json_object_set_new(r, "video_token_id", json_integer(248057));
    json_object_set_new(r, "vision_config", vc);
    json_object_set_new(r, "vision_end_token_id", json_integer(248054));
    json_object_set_new(r, "vision_start_token_id", json_integer(248053));
    if (p->o->fp8) {
        json_t *q = json_object(), *bs = json_array(), *skip = json_array();
        json_object_set_new(q, "activation_scheme", json_string("dynamic"));
        json_object_set_new(q, "fmt", json_string("e4m3"));
        for (int i = 0; i < p->n_skip; i++) json_array_append_new(skip, json_string(p->skip[i]));
        json_object_set_new(q, "modules_to_not_convert", skip);
        json_object_set_new(q, "quant_method", json_string("fp8"));
        json_array_append_new(bs, json_integer(FP8_BLOCK));
        json_array_append_new(bs, json_integer(FP8_BLOCK));
        json_object_set_new(q, "weight_block_size", bs);
        json_object_set_new(r, "quantization_config", q);
    }
    return r;
}

static json_t *generation_json(const hy_model_shape *s) {
    json_t *g = json_object(), *eos = json_array();
    json_object_set_new(g, "bos_token_id", json_integer(s->hp.bos_token_id));
    json_object_set_new(g, "do_sample", json_true());
    json_array_append_new(eos, json_integer(s->gen_eos[0]));
    json_array_append_new(eos, json_integer(s->gen_eos[1]));
    json_object_set_new(g, "eos_token_id", eos);
    json_object_set_new(g, "pad_token_id", json_integer(s->hp.bos_token_id));
    json_object_set_new(g, "temperature", jfloat(s->gen_temperature));
    json_object_set_new(g, "top_k", json_integer(20));
    json_object_set_new(g, "top_p", jfloat(0.95));
    json_object_set_new(g, "transformers_version", json_string(s->transformers_version));
    return g;
}

/* Writes shard `shard` (file name fname) holding the plan's tensors with t->shard == shard. */
static int write_shard(const rm_plan *p, int shard, const char *path, uint64_t *done, uint64_t total, void *buf,
                       float *tmp, hy_err *err) {
    int n = 0;
    for (int i = 0; i < p->n; i++) n += p->t[i].shard == shard;
    hy_st_wtensor *wt = calloc((size_t)(n ? n : 1), sizeof *wt);
    const rm_tensor **src = calloc((size_t)(n ? n : 1), sizeof *src);
    if (!wt || !src) {
        free(wt); free(src);
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    }
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->t[i].shard != shard) continue;
        const rm_tensor *t = &p->t[i];
        wt[k].name = t->name, wt[k].dtype = t->dtype, wt[k].ndim = t->ndim;
        for (int d = 0; d < t->ndim; d++) wt[k].shape[d] = t->shape[d];
        k++;
    }
    hy_st_sort_for_alignment(wt, n);
    /* map back: the sort is stable, names are unique */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < p->n; i++)
            if (p->t[i].name == wt[j].name) src[j] = &p->t[i];
    char seed[32], shape[96];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)p->o->seed);
    snprintf(shape, sizeof shape, "%s%s", p->o->shape->name, p->o->fp8 ? " fp8" : " bf16");
    const char *meta[] = {"hyla_random_model", shape, "hyla_seed", seed, NULL};
    hy_st_writer *w;
    int rc = hy_st_writer_create(&w, path, wt, n, meta, err);
    for (int j = 0; !rc && j < n; j++) {
        const rm_tensor *t = src[j];
        const uint64_t numel = rm_numel(t);
        const size_t es = hy_dtype_size(t->dtype);
        for (uint64_t i0 = 0; !rc && i0 < numel; i0 += PIECE) {
            const size_t m = numel - i0 < PIECE ? (size_t)(numel - i0) : PIECE;
            rm_fill(t, i0, m, tmp, buf);
            rc = hy_st_writer_write(w, buf, m * es, err);
            *done += m * es;
            if (!rc && p->o->progress) p->o->progress(p->o->progress_ctx, *done, total);
        }
    }
    if (rc) hy_st_writer_abort(w);
    else rc = hy_st_writer_finish(w, err);
    free(wt);
    free(src);
    return rc;
}

int hy_random_model_write(const hy_random_model_opts *o, hy_random_model_stats *st, hy_err *err) {
    memset(st, 0, sizeof *st);
    if (!o->out_dir || !o->out_dir[0] || !o->shape)
        return hy_err_set(err, HY_E_INVALID, "random model: output directory and shape are required");
    rm_plan p = {.o = o};
    void *buf = NULL;
    float *tmp = NULL;
    char **names = NULL, **files = NULL;
    int n_shards = 0, rc = plan_build(&p, err);
    if (rc) goto done;

    char path[4352];
    snprintf(path, sizeof path, "%s/config.json", o->out_dir);
    if (!o->force && file_exists(path)) {
        rc = hy_err_set(err, HY_E_STATE, "%s already exists (use --force to overwrite the checkpoint)", path);
        goto done;
    }
    if ((rc = mkdir_p(o->out_dir, err))) goto done;
    if (!o->config_only && (rc = remove_old_weights(o->out_dir, err))) goto done;

    /* shards in plan order */
    const uint64_t max_shard = o->max_shard_bytes ? o->max_shard_bytes : (2ull << 30);
    uint64_t cur = 0, total = 0;
    for (int i = 0; i < p.n; i++) {
        const uint64_t b = rm_numel(&p.t[i]) * hy_dtype_size(p.t[i].dtype);
        if (n_shards == 0 || (cur > 0 && cur + b > max_shard)) n_shards++, cur = 0;
        p.t[i].shard = n_shards - 1;
        cur += b;
        total += b;
        if (p.t[i].init != RI_SCALE) st->n_params += (int64_t)rm_numel(&p.t[i]);
    }
    st->n_tensors = p.n;
    st->data_bytes = total;

    if ((rc = write_json(o->out_dir, "config.json", config_json(&p), err))) goto done;
    if ((rc = write_json(o->out_dir, "generation_config.json", generation_json(o->shape), err))) goto done;
    if (o->config_only) goto done;
    st->n_shards = n_shards;

    buf = malloc((size_t)PIECE * 4);
    tmp = malloc((size_t)PIECE * sizeof(float));
    names = calloc((size_t)p.n, sizeof *names);
    files = calloc((size_t)n_shards, sizeof *files);
    if (!buf || !tmp || !names || !files) {
        rc = hy_err_set(err, HY_E_NOMEM, "random model: out of memory");
        goto done;
    }
    uint64_t written = 0;
    for (int s = 0; s < n_shards && !rc; s++) {
        char fname[64];
        if (n_shards == 1) snprintf(fname, sizeof fname, "model.safetensors");
        else snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        if (!(files[s] = strdup(fname))) {
            rc = hy_err_set(err, HY_E_NOMEM, "random model: out of memory");
            break;
        }
        snprintf(path, sizeof path, "%s/%s", o->out_dir, fname);
        HY_LOGI("random-model: writing %s", path);
        rc = write_shard(&p, s, path, &written, total, buf, tmp, err);
    }
    if (!rc && n_shards > 1) {
        for (int i = 0; i < p.n; i++) names[i] = p.t[i].name;
        const char **fmap = calloc(p.n > 0 ? (size_t)p.n : 1, sizeof *fmap);
        if (!fmap) {
            rc = hy_err_set(err, HY_E_NOMEM, "random model: out of memory");
            goto done;
        }
        for (int i = 0; i < p.n; i++) fmap[i] = files[p.t[i].shard];
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", o->out_dir);
        rc = hy_st_write_index(path, (const char *const *)names, fmap, p.n, total, err);
        free(fmap);
    }
done:
    if (files)
        for (int s = 0; s < n_shards; s++) free(files[s]);
    free(files);
    free(names);
    free(buf);
    free(tmp);
    plan_free(&p);
    return rc;
}
