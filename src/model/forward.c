/*
 * Forward pass driver (see forward.h): model validation, the context (threads,
 * fp32 copies of small tensors, fixed scratch), sequences, and the step job
 * that runs embeddings -> layers -> final norm -> lm_head on every thread.
 *
 * Why one job per step: the whole layer loop runs inside a single thread-pool
 * job with barriers between phases, so a decode step costs one wake-up, and
 * the per-phase work split (by output rows / tokens / heads) keeps results
 * independent of the thread count.
 */
#include "model/forward_impl.h"

#include "base/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- validation */

static int dims_from_hparams(const hy_hparams *hp, hy_fwd_dims *d, hy_err *err) {
    memset(d, 0, sizeof *d);
    d->D = hp->hidden_size;
    d->F = hp->intermediate_size;
    d->vocab = hp->vocab_size;
    d->L = hp->num_hidden_layers;
    d->Hq = hp->num_attention_heads;
    d->Hkv = hp->num_key_value_heads;
    d->Dh = hp->head_dim;
    d->Hk = hp->linear_num_key_heads;
    d->Hv = hp->linear_num_value_heads;
    d->dk = hp->linear_key_head_dim;
    d->dv = hp->linear_value_head_dim;
    d->K = hp->linear_conv_kernel_dim;
    d->eps = hp->rms_norm_eps;
    if (d->D < 1 || d->F < 1 || d->vocab < 1 || d->L < 1 || d->L > HY_MAX_LAYERS)
        return hy_err_set(err, HY_E_INVALID,
                          "forward: bad model sizes (hidden_size %d, intermediate_size %d, vocab_size %d, "
                          "num_hidden_layers %d)",
                          d->D, d->F, d->vocab, d->L);
    bool any_attn = false, any_gdn = false;
    for (int l = 0; l < d->L; l++) {
        if (hp->layer_types[l] == HY_LAYER_ATTN) any_attn = true;
        else if (hp->layer_types[l] == HY_LAYER_GDN) any_gdn = true;
        else return hy_err_set(err, HY_E_INVALID, "forward: layer_types[%d] is neither attention nor GDN", l);
    }
    if (any_attn) {
        if (d->Hq < 1 || d->Hkv < 1 || d->Dh < 1 || d->Hq % d->Hkv)
            return hy_err_set(err, HY_E_INVALID,
                              "forward: num_attention_heads %d must be a positive multiple of num_key_value_heads %d "
                              "(head_dim %d)",
                              d->Hq, d->Hkv, d->Dh);
        int rot = (int)((double)d->Dh * (double)hp->partial_rotary_factor);
        if (rot < 0 || rot > d->Dh || rot % 2)
            return hy_err_set(err, HY_E_INVALID,
                              "forward: rotary dims %d (head_dim %d x partial_rotary_factor %g) must be even and "
                              "<= head_dim",
                              rot, d->Dh, (double)hp->partial_rotary_factor);
        if (rot > 0 && !(hp->rope_theta > 0))
            return hy_err_set(err, HY_E_INVALID, "forward: rope_theta %g must be > 0", hp->rope_theta);
        d->rot_half = rot / 2;
    }
    if (any_gdn) {
        if (d->Hk < 1 || d->Hv < 1 || d->dk < 1 || d->dv < 1 || d->K < 1 || d->Hv % d->Hk)
            return hy_err_set(err, HY_E_INVALID,
                              "forward: GDN sizes (linear_num_key_heads %d, linear_num_value_heads %d, "
                              "linear_key_head_dim %d, linear_value_head_dim %d, linear_conv_kernel_dim %d): value "
                              "heads must be a positive multiple of key heads",
                              d->Hk, d->Hv, d->dk, d->dv, d->K);
        d->key_dim = d->Hk * d->dk;
        d->value_dim = d->Hv * d->dv;
        d->conv_dim = 2 * d->key_dim + d->value_dim;
    }
    if (!(d->eps >= 0)) return hy_err_set(err, HY_E_INVALID, "forward: rms_norm_eps %g < 0", (double)d->eps);
    return HY_OK;
}

static const char *tname(const hy_tensor *t, const char *what) { return t->name ? t->name : what; }

/* A matrix of the matmuls: exact [rows, cols] shape and a dtype the kernels read (F32, BF16,
 * F16, or F8_E4M3 with its block scales attached). */
static int check_matrix(const hy_tensor *t, const char *what, int layer, int64_t rows, int64_t cols, hy_err *err) {
    if (!t->data)
        return hy_err_set(err, HY_E_NOT_FOUND, "forward: layer %d: tensor %s is missing", layer, tname(t, what));
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols)
        return hy_err_set(err, HY_E_INVALID, "forward: layer %d: tensor %s: expected shape [%lld, %lld]", layer,
                          tname(t, what), (long long)rows, (long long)cols);
    if (t->dtype == HY_DTYPE_F8_E4M3 && !t->scale_inv)
        return hy_err_set(err, HY_E_UNSUPPORTED, "forward: tensor %s: F8_E4M3 without its weight_scale_inv",
                          tname(t, what));
    if (!hy_ops_matmul_dtype_ok(t->dtype) && t->dtype != HY_DTYPE_F8_E4M3)
        return hy_err_set(err, HY_E_UNSUPPORTED, "forward: tensor %s: dtype %s not supported (F32, BF16, F16, F8_E4M3)",
                          tname(t, what), hy_dtype_name(t->dtype));
    if (t->nbytes && t->nbytes < (size_t)rows * (size_t)cols * hy_dtype_size(t->dtype))
        return hy_err_set(err, HY_E_INVALID, "forward: tensor %s: %zu bytes, shape needs more", tname(t, what),
                          t->nbytes);
    return HY_OK;
}

/* A small tensor converted to fp32: element count and dtype only (conv1d is [C,1,K]). */
static int check_small(const hy_tensor *t, const char *what, int layer, int64_t numel, hy_err *err) {
    if (!t->data)
        return hy_err_set(err, HY_E_NOT_FOUND, "forward: layer %d: tensor %s is missing", layer, tname(t, what));
    if (hy_tensor_numel(t) != numel)
        return hy_err_set(err, HY_E_INVALID, "forward: layer %d: tensor %s: expected %lld elements, found %lld",
                          layer, tname(t, what), (long long)numel, (long long)hy_tensor_numel(t));
    if (t->dtype != HY_DTYPE_F32 && t->dtype != HY_DTYPE_BF16 && t->dtype != HY_DTYPE_F16)
        return hy_err_set(err, HY_E_UNSUPPORTED, "forward: tensor %s: dtype %s not supported (F32, BF16, F16)",
                          tname(t, what), hy_dtype_name(t->dtype));
    return HY_OK;
}

static int check_weights(const hy_model *m, const hy_fwd_dims *d, hy_err *err) {
    const hy_weights *w = &m->w;
    int rc;
    if (!w->layers) return hy_err_set(err, HY_E_INVALID, "forward: model has no layer weights");
    if ((rc = check_matrix(&w->embed_tokens, "embed_tokens", -1, d->vocab, d->D, err))) return rc;
    if (!hy_ops_matmul_dtype_ok(w->embed_tokens.dtype)) /* a row lookup, not a matmul */
        return hy_err_set(err, HY_E_UNSUPPORTED, "forward: tensor %s: dtype %s not supported (F32, BF16, F16)",
                          tname(&w->embed_tokens, "embed_tokens"), hy_dtype_name(w->embed_tokens.dtype));
    if ((rc = check_matrix(&w->lm_head, "lm_head", -1, d->vocab, d->D, err))) return rc;
    if ((rc = check_small(&w->norm, "norm", -1, d->D, err))) return rc;
    for (int l = 0; l < d->L; l++) {
        const hy_layer_weights *lw = &w->layers[l];
        if ((rc = check_small(&lw->input_layernorm, "input_layernorm", l, d->D, err))) return rc;
        if ((rc = check_small(&lw->post_attention_layernorm, "post_attention_layernorm", l, d->D, err))) return rc;
        if ((rc = check_matrix(&lw->gate_proj, "mlp.gate_proj", l, d->F, d->D, err))) return rc;
        if ((rc = check_matrix(&lw->up_proj, "mlp.up_proj", l, d->F, d->D, err))) return rc;
        if ((rc = check_matrix(&lw->down_proj, "mlp.down_proj", l, d->D, d->F, err))) return rc;
        if (m->hp.layer_types[l] == HY_LAYER_ATTN) {
            if ((rc = check_matrix(&lw->q_proj, "self_attn.q_proj", l, 2 * d->Hq * d->Dh, d->D, err))) return rc;
            if ((rc = check_matrix(&lw->k_proj, "self_attn.k_proj", l, d->Hkv * d->Dh, d->D, err))) return rc;
            if ((rc = check_matrix(&lw->v_proj, "self_attn.v_proj", l, d->Hkv * d->Dh, d->D, err))) return rc;
            if ((rc = check_matrix(&lw->o_proj, "self_attn.o_proj", l, d->D, d->Hq * d->Dh, err))) return rc;
            if ((rc = check_small(&lw->q_norm, "self_attn.q_norm", l, d->Dh, err))) return rc;
            if ((rc = check_small(&lw->k_norm, "self_attn.k_norm", l, d->Dh, err))) return rc;
        } else {
            if ((rc = check_matrix(&lw->in_proj_qkv, "linear_attn.in_proj_qkv", l, d->conv_dim, d->D, err))) return rc;
            if ((rc = check_matrix(&lw->in_proj_z, "linear_attn.in_proj_z", l, d->value_dim, d->D, err))) return rc;
            if ((rc = check_matrix(&lw->in_proj_b, "linear_attn.in_proj_b", l, d->Hv, d->D, err))) return rc;
            if ((rc = check_matrix(&lw->in_proj_a, "linear_attn.in_proj_a", l, d->Hv, d->D, err))) return rc;
            if ((rc = check_matrix(&lw->out_proj, "linear_attn.out_proj", l, d->D, d->value_dim, err))) return rc;
            if ((rc = check_small(&lw->conv1d, "linear_attn.conv1d", l, (int64_t)d->conv_dim * d->K, err))) return rc;
            if ((rc = check_small(&lw->A_log, "linear_attn.A_log", l, d->Hv, err))) return rc;
            if ((rc = check_small(&lw->dt_bias, "linear_attn.dt_bias", l, d->Hv, err))) return rc;
            if ((rc = check_small(&lw->norm, "linear_attn.norm", l, d->dv, err))) return rc;
        }
    }
    return HY_OK;
}

/* ---------------------------------------------------------------- context */

static float *take(float **p, size_t n) {
    float *r = *p;
    *p += (n + 15) / 16 * 16; /* keep every buffer 64-byte aligned */
    return r;
}

static size_t rounded(size_t n) { return (n + 15) / 16 * 16; }

static float *conv_small(float **p, const hy_tensor *t) {
    size_t n = (size_t)hy_tensor_numel(t);
    float *dst = take(p, n);
    hy_ref_convert_f32(t->dtype, t->data, n, dst);
    return dst;
}

/* conv1d weight [C,1,K] as the kernels take it: [K][C], one tap of all channels per row. */
static float *conv_taps(float **p, const hy_tensor *t, int C, int K) {
    float *dst = take(p, (size_t)C * K);
    const size_t es = hy_dtype_size(t->dtype);
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++)
            hy_ref_convert_f32(t->dtype, (const unsigned char *)t->data + ((size_t)c * K + j) * es, 1,
                               dst + (size_t)j * C + c);
    return dst;
}

/* Tokens per attention work unit (one KV head): about `rows` query rows, at least one token. */
static int unit_tokens(int rows, int group) { return group >= rows ? 1 : rows / group; }

int hy_ctx_create(hy_ctx **out, const hy_model *m, const hy_ctx_opts *opts, hy_err *err) {
    *out = NULL;
    hy_fwd_dims d;
    int rc = dims_from_hparams(&m->hp, &d, err);
    if (rc) return rc;
    if ((rc = check_weights(m, &d, err))) return rc;

    int n_threads = opts && opts->n_threads > 0 ? opts->n_threads : 1;
    int max_chunk = opts && opts->max_chunk > 0 ? opts->max_chunk : HY_DEFAULT_MAX_CHUNK;
    if (max_chunk > (1 << 16)) max_chunk = 1 << 16;
    max_chunk = (max_chunk + HY_GDN_CHUNK - 1) / HY_GDN_CHUNK * HY_GDN_CHUNK;

    hy_ctx *c = calloc(1, sizeof *c);
    if (!c) return hy_err_set(err, HY_E_NOMEM, "forward: out of memory");
    c->m = m;
    if ((rc = hy_cpu_kernels_init(&c->kern, opts ? opts->isa : NULL, err))) {
        hy_ctx_free(c);
        return hy_err_wrap(err, "forward");
    }
    c->n_threads = n_threads;
    c->ops = &c->kern.ops;
    c->gdn = c->kern.gdn;
    c->kv_type = opts ? opts->kv_type : HY_KV_F32;
    if (!hy_kv_type_bytes(c->kv_type)) {
        hy_ctx_free(c);
        return hy_err_set(err, HY_E_INVALID, "forward: unknown KV cache type %d", (int)opts->kv_type);
    }
    c->act = (hy_act)((opts && opts->fast_prefill ? HY_ACT_BF16 : HY_ACT_F32) |
                      (opts && opts->fast_decode ? HY_ACT_BF16_GEMV : 0));
    if ((rc = hy_threadpool_create(&c->tp, n_threads, err))) {
        hy_ctx_free(c);
        return hy_err_wrap(err, "forward");
    }
    if ((rc = hy_rowsplit_create(&c->split, n_threads, err))) {
        hy_ctx_free(c);
        return hy_err_wrap(err, "forward");
    }
    const unsigned lin_flags = hy_linears_tier_flags(opts ? opts->quant_flags : 0, c->kern.isa, c->kern.tune);
    if ((rc = hy_linears_create(&c->lin, m, opts ? opts->weights : HY_WEIGHTS_AUTO, lin_flags,
                                opts ? opts->weights_res : HY_WRES_AUTO, c->tp, err))) {
        hy_ctx_free(c);
        return hy_err_wrap(err, "forward");
    }
    c->embed = m->w.embed_tokens;
    if (m->w.lm_head_tied && c->lin.res == HY_WRES_USED_COPY && c->lin.lm_head.data != m->w.lm_head.data &&
        c->lin.lm_head.fmt == hy_mat_from_tensor(&m->w.lm_head).fmt && !c->lin.lm_head.panel)
        c->embed.data = c->lin.lm_head.data; /* the same bytes, copied */
    c->d = d;
    c->gd = (hy_gdn_dims){d.Hk, d.Hv, d.dk, d.dv};
    c->max_chunk = max_chunk;

    /* small tensors */
    size_t small = rounded((size_t)d.D) + rounded((size_t)d.rot_half);
    for (int l = 0; l < d.L; l++) {
        small += 2 * rounded((size_t)d.D);
        if (m->hp.layer_types[l] == HY_LAYER_ATTN) small += 2 * rounded((size_t)d.Dh);
        else
            small += rounded((size_t)d.conv_dim * d.K) + 2 * rounded((size_t)d.Hv) + rounded((size_t)d.dv);
    }
    c->small_floats = small;
    c->small = hy_calloc_aligned(small, sizeof(float));
    c->layers = calloc((size_t)d.L, sizeof *c->layers);
    if (!c->small || !c->layers) {
        hy_ctx_free(c);
        return hy_err_set(err, HY_E_NOMEM, "forward: out of memory for %zu small-tensor floats", small);
    }
    float *p = c->small;
    c->final_norm = conv_small(&p, &m->w.norm);
    c->inv_freq = take(&p, (size_t)d.rot_half);
    if (d.rot_half) hy_ref_rope_inv_freq(2 * d.rot_half, m->hp.rope_theta, c->inv_freq);
    int n_attn = 0, n_gdn = 0;
    for (int l = 0; l < d.L; l++) {
        const hy_layer_weights *lw = &m->w.layers[l];
        hy_layer_f32 *L = &c->layers[l];
        L->type = m->hp.layer_types[l];
        L->input_norm = conv_small(&p, &lw->input_layernorm);
        L->post_norm = conv_small(&p, &lw->post_attention_layernorm);
        if (L->type == HY_LAYER_ATTN) {
            L->slot = n_attn++;
            L->q_norm = conv_small(&p, &lw->q_norm);
            L->k_norm = conv_small(&p, &lw->k_norm);
        } else {
            L->slot = n_gdn++;
            L->conv_w = conv_taps(&p, &lw->conv1d, d.conv_dim, d.K);
            L->A_log = conv_small(&p, &lw->A_log);
            L->dt_bias = conv_small(&p, &lw->dt_bias);
            L->gdn_norm = conv_small(&p, &lw->norm);
        }
    }
    HY_ASSERT((size_t)(p - c->small) <= small);

    /* scratch: one region per layer type, sharing memory */
    const size_t C = (size_t)max_chunk;
    size_t attn_w = 0, gdn_w = 0, ffn_w = 2 * C * rounded((size_t)d.F);
    if (n_attn)
        attn_w = C * (rounded(2 * (size_t)d.Hq * d.Dh) + 2 * rounded((size_t)d.Hkv * d.Dh) +
                      rounded((size_t)d.Hq * d.Dh));
    if (n_gdn)
        gdn_w = C * (2 * rounded((size_t)d.conv_dim) + 4 * rounded((size_t)d.value_dim) + 4 * rounded((size_t)d.Hv) +
                     2 * rounded((size_t)d.key_dim));
    c->work_floats = attn_w > gdn_w ? attn_w : gdn_w;
    if (ffn_w > c->work_floats) c->work_floats = ffn_w;
    /* per-thread kernel scratch; prepared GDN chunks of a whole step (all heads x chunks) */
    const int group = n_attn ? d.Hq / d.Hkv : 1;
    c->attn_tb = n_attn ? unit_tokens(64, group) : 1;
    c->attn_tb_bf16 = n_attn ? unit_tokens(256, group) : 1;
    c->thr_work_floats = 0;
    if (n_gdn) c->thr_work_floats = rounded(hy_gdn_chunk_work_floats(&c->gd, HY_GDN_CHUNK));
    size_t aw = n_attn ? rounded(hy_attn_work_floats(c->attn_tb * group) +
                                 (c->kv_type != HY_KV_F32 ? hy_attn_kv_work_floats(d.Dh) : 0))
                       : 0;
    if (n_attn && (c->act & HY_ACT_BF16) && c->kern.attn_bf16) {
        const size_t w = rounded(hy_attn_amx_work_floats(c->attn_tb_bf16 * group, d.Dh));
        if (w > aw) aw = w;
    }
    if (aw > c->thr_work_floats) c->thr_work_floats = aw;
    c->gdn_prep_floats = n_gdn ? rounded(hy_gdn_chunk_prep_floats(&c->gd, HY_GDN_CHUNK)) : 0;
    const size_t n_prep = n_gdn ? (size_t)d.Hv * (C / HY_GDN_CHUNK) : 0;
    int max_cols = d.D > d.F ? d.D : d.F;
    if (n_attn && d.Hq * d.Dh > max_cols) max_cols = d.Hq * d.Dh;
    if (n_gdn && d.value_dim > max_cols) max_cols = d.value_dim;
    c->mm_scratch_bytes = hy_matmul_scratch_bytes(max_cols);
    c->xn_thr_ld = rounded((size_t)d.D);
    size_t total = 2 * C * rounded((size_t)d.D) + (size_t)n_threads * c->xn_thr_ld +
                   2 * C * rounded((size_t)d.rot_half) + c->work_floats +
                   (size_t)n_threads * c->thr_work_floats + n_prep * c->gdn_prep_floats +
                   (size_t)n_threads * (c->mm_scratch_bytes / sizeof(float));
    c->scratch_bytes = total * sizeof(float);
    float *s = hy_calloc_aligned(total, sizeof(float));
    if (!s) {
        hy_ctx_free(c);
        return hy_err_set(err, HY_E_NOMEM, "forward: cannot allocate %zu bytes of scratch (max_chunk %d)",
                          total * sizeof(float), max_chunk);
    }
    c->x = s; /* first buffer owns the allocation */
    take(&s, C * d.D);
    c->xn = take(&s, C * d.D);
    c->xn_thr = take(&s, (size_t)n_threads * c->xn_thr_ld);
    c->rope_cos = take(&s, C * d.rot_half);
    c->rope_sin = take(&s, C * d.rot_half);
    c->thr_work = take(&s, (size_t)n_threads * c->thr_work_floats);
    c->gdn_prep = take(&s, n_prep * c->gdn_prep_floats);
    c->mm_scratch = (unsigned char *)take(&s, (size_t)n_threads * (c->mm_scratch_bytes / sizeof(float)));
    c->work = s;
    float *q = c->work;
    if (n_attn) {
        c->a_qg = take(&q, C * 2 * d.Hq * d.Dh);
        c->a_k = take(&q, C * d.Hkv * d.Dh);
        c->a_v = take(&q, C * d.Hkv * d.Dh);
        c->a_out = take(&q, C * d.Hq * d.Dh);
        HY_ASSERT((size_t)(q - c->work) <= c->work_floats);
    }
    q = c->work;
    if (n_gdn) {
        c->g_qkv = take(&q, C * d.conv_dim);
        c->g_y = take(&q, C * d.conv_dim);
        c->g_z = take(&q, C * d.value_dim);
        c->g_v = take(&q, C * d.value_dim);
        c->g_o = take(&q, C * d.value_dim);
        take(&q, C * d.value_dim); /* spare, keeps the size formula simple */
        c->g_a = take(&q, C * d.Hv);
        c->g_b = take(&q, C * d.Hv);
        c->g_g = take(&q, C * d.Hv);
        c->g_beta = take(&q, C * d.Hv);
        c->g_q = take(&q, C * d.key_dim);
        c->g_k = take(&q, C * d.key_dim);
        HY_ASSERT((size_t)(q - c->work) <= c->work_floats);
    }
    q = c->work;
    c->f_gate = take(&q, C * d.F);
    c->f_up = take(&q, C * d.F);
    HY_ASSERT((size_t)(q - c->work) <= c->work_floats);

    *out = c;
    return HY_OK;
}

void hy_ctx_free(hy_ctx *c) {
    if (!c) return;
    hy_threadpool_free(c->tp);
    hy_rowsplit_free(c->split);
    hy_linears_free(&c->lin);
    free(c->prof);
    hy_free(c->x);
    hy_free(c->small);
    free(c->layers);
    free(c);
}

int hy_ctx_threads(const hy_ctx *c) { return hy_threadpool_size(c->tp); }

size_t hy_ctx_bytes(const hy_ctx *c) {
    return c->scratch_bytes + c->small_floats * sizeof(float) + (size_t)c->lin.bytes_owned +
           (size_t)c->lin.bytes_copied;
}

const char *hy_ctx_isa(const hy_ctx *c) { return hy_isa_name(c->kern.isa); }
const char *hy_ctx_tune(const hy_ctx *c) { return c->kern.tune ? c->kern.tune : ""; }
bool hy_ctx_amx(const hy_ctx *c) { return c->kern.amx; }
hy_kv_type hy_ctx_kv_type(const hy_ctx *c) { return c->kv_type; }

const hy_linears *hy_ctx_linears(const hy_ctx *c) { return &c->lin; }

/* ---------------------------------------------------------------- sequences */

int hy_seq_create(hy_seq **out, const hy_model *m, int max_tokens, hy_err *err) {
    return hy_seq_create_kv(out, m, max_tokens, HY_KV_F32, err);
}

int hy_seq_create_kv(hy_seq **out, const hy_model *m, int max_tokens, hy_kv_type kv_type, hy_err *err) {
    *out = NULL;
    hy_fwd_dims d;
    int rc = dims_from_hparams(&m->hp, &d, err);
    if (rc) return rc;
    if (max_tokens < 1) return hy_err_set(err, HY_E_INVALID, "sequence: max_tokens %d must be >= 1", max_tokens);
    int n_attn = 0, n_gdn = 0;
    for (int l = 0; l < d.L; l++) {
        if (m->hp.layer_types[l] == HY_LAYER_ATTN) n_attn++;
        else n_gdn++;
    }
    hy_seq *s = calloc(1, sizeof *s);
    if (!s) return hy_err_set(err, HY_E_NOMEM, "sequence: out of memory");
    s->m = m;
    s->max_tokens = max_tokens;
    if ((rc = hy_kv_cache_create(&s->kv, n_attn, max_tokens, n_attn ? d.Hkv : 1, n_attn ? d.Dh : 1, kv_type, err))) {
        hy_seq_free(s);
        return hy_err_wrap(err, "sequence");
    }
    hy_gdn_dims gd = {d.Hk, d.Hv, d.dk, d.dv};
    if (!n_gdn) gd = (hy_gdn_dims){1, 1, 1, 1};
    if ((rc = hy_gdn_state_create(&s->gdn, n_gdn, &gd, n_gdn ? d.K : 1, err))) {
        hy_seq_free(s);
        return hy_err_wrap(err, "sequence");
    }
    *out = s;
    return HY_OK;
}

void hy_seq_free(hy_seq *s) {
    if (!s) return;
    hy_kv_cache_free(s->kv);
    hy_gdn_state_free(s->gdn);
    free(s);
}

void hy_seq_reset(hy_seq *s) {
    s->pos = 0;
    hy_gdn_state_reset(s->gdn);
}

int hy_seq_rewind(hy_seq *s, int pos, const hy_gdn_state *snap, hy_err *err) {
    const hy_gdn_state *g = s->gdn;
    if (pos < 0 || pos > s->pos)
        return hy_err_set(err, HY_E_RANGE, "sequence: cannot rewind to %d (at position %d)", pos, s->pos);
    if (!snap || snap->n_layers != g->n_layers || snap->rec_floats != g->rec_floats ||
        snap->conv_floats != g->conv_floats)
        return hy_err_set(err, HY_E_INVALID, "sequence: GDN snapshot does not match the sequence's state sizes");
    hy_gdn_state_copy(s->gdn, snap);
    s->pos = pos;
    return HY_OK;
}

int hy_seq_pos(const hy_seq *s) { return s->pos; }
int hy_seq_capacity(const hy_seq *s) { return s->max_tokens; }
size_t hy_seq_bytes(const hy_seq *s) { return s->kv->bytes + s->gdn->bytes; }
const hy_gdn_state *hy_seq_gdn_state(const hy_seq *s) { return s->gdn; }
const hy_kv_cache *hy_seq_kv_cache(const hy_seq *s) { return s->kv; }

/* ---------------------------------------------------------------- step */

void hy_fwd_norm_rows(const hy_ctx *c, const float *x, const float *w, bool one_plus, float *y, int ith, int nth) {
    int t0, t1;
    hy_split_range(c->T, ith, nth, &t0, &t1);
    const size_t D = (size_t)c->d.D;
    for (int t = t0; t < t1; t++) hy_ref_rmsnorm(x + t * D, w, (int)D, c->d.eps, one_plus, y + t * D);
}

const float *hy_fwd_norm_input(hy_ctx *c, const float *w, int ith, int nth) {
    if (c->T == 1) {
        float *y = c->xn_thr + (size_t)ith * c->xn_thr_ld;
        hy_ref_rmsnorm(c->x, w, c->d.D, c->d.eps, true, y);
        return y;
    }
    hy_fwd_norm_rows(c, c->x, w, true, c->xn, ith, nth);
    hy_threadpool_barrier(c->tp);
    return c->xn;
}

void hy_fwd_rows(const hy_mat *W, int ith, int nth, int *o0, int *o1) {
    hy_rowsplit_static_part(W->rows, hy_matmul_row_align(W->fmt), ith, nth, o0, o1);
}

void hy_fwd_matmul_rows(const hy_ctx *c, const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy,
                        int o0, int o1, bool accumulate, bool keep_x, int ith) {
    if (o1 > o0)
        c->ops->matmul(W, T, x, ldx, y, ldy, o0, o1, accumulate, keep_x ? (hy_act)(c->act | HY_ACT_KEEP_X) : c->act,
                       c->mm_scratch + (size_t)ith * c->mm_scratch_bytes);
}

/* Bytes of the start of thread ith's static part of W that hy_fwd_barrier_next prefetches:
 * a fraction of L2, so the two threads' parts of two matrices fit with room to spare. */
#define HY_PF_NEXT_BYTES (128u << 10)

/* The rows of a set's matrices laid end to end, as hy_fwd_matmul_set splits them: matrix i
 * from row off[i], each from a multiple of align (the largest row alignment of their formats,
 * so every piece starts on a whole tile of its matrix); total rows. */
typedef struct set_layout {
    int align, total;
    int off[HY_FWD_SET_MAX];
} set_layout;

static void set_lay(const hy_fwd_mm *m, int n, set_layout *L) {
    L->align = 1;
    for (int i = 0; i < n; i++) {
        const int a = hy_matmul_row_align(m[i].W->fmt); /* powers of two: the largest is a multiple of all */
        if (a > L->align) L->align = a;
    }
    int o = 0;
    for (int i = 0; i < n; i++) {
        L->off[i] = o;
        o += i + 1 < n ? (m[i].W->rows + L->align - 1) / L->align * L->align : m[i].W->rows;
    }
    L->total = o;
}

/* Prefetch ranges of the first HY_PF_NEXT_BYTES of thread ith's static part of the set
 * (hy_rowsplit_static_part of the rows laid end to end: what the split hands it first). */
static int set_part_head(const hy_fwd_mm *m, int n, int ith, int nth, hy_pf_range *r) {
    set_layout L;
    set_lay(m, n, &L);
    int v0, v1, nr = 0;
    hy_rowsplit_static_part(L.total, L.align, ith, nth, &v0, &v1);
    size_t left = HY_PF_NEXT_BYTES;
    for (int i = 0; i < n && left; i++) {
        const hy_mat *W = m[i].W;
        const int lo = v0 > L.off[i] ? v0 - L.off[i] : 0, hi = v1 - L.off[i] < W->rows ? v1 - L.off[i] : W->rows;
        if (!W->data || hi <= lo) continue;
        const size_t off = hy_mat_data_offset(W, lo), len = hy_mat_data_offset(W, hi) - off;
        r[nr].p = (const char *)W->data + off;
        r[nr].n = len < left ? len : left;
        left -= r[nr++].n;
    }
    return nr;
}

int hy_fwd_layer_set(const hy_ctx *c, int layer, hy_fwd_mm m[HY_FWD_SET_MAX]) {
    const hy_fwd_dims *d = &c->d;
    if (layer >= d->L) {
        if (!c->logits) return 0;
        m[0] = (hy_fwd_mm){&c->lin.lm_head, NULL, 0};
        return 1;
    }
    const hy_layer_mats *lw = &c->lin.layers[layer];
    if (c->layers[layer].type == HY_LAYER_ATTN) {
        const size_t qg_w = 2 * (size_t)d->Hq * d->Dh, kv_w = (size_t)d->Hkv * d->Dh;
        m[0] = (hy_fwd_mm){&lw->q_proj, c->a_qg, qg_w};
        m[1] = (hy_fwd_mm){&lw->k_proj, c->a_k, kv_w};
        m[2] = (hy_fwd_mm){&lw->v_proj, c->a_v, kv_w};
        return 3;
    }
    const size_t C = (size_t)d->conv_dim, VD = (size_t)d->value_dim, Hv = (size_t)d->Hv;
    m[0] = (hy_fwd_mm){&lw->in_proj_qkv, c->g_qkv, C};
    m[1] = (hy_fwd_mm){&lw->in_proj_z, c->g_z, VD};
    m[2] = (hy_fwd_mm){&lw->in_proj_b, c->g_b, Hv};
    m[3] = (hy_fwd_mm){&lw->in_proj_a, c->g_a, Hv};
    return 4;
}

void hy_fwd_barrier_next_layer(const hy_ctx *c, int layer, int ith, int nth) {
    if (c->T > HY_MATMUL_GEMV_MAX_T || nth == 1) {
        hy_fwd_barrier(c, ith);
        return;
    }
    hy_fwd_mm m[HY_FWD_SET_MAX];
    hy_pf_range r[HY_FWD_SET_MAX];
    const int n = hy_fwd_layer_set(c, layer, m), nr = n ? set_part_head(m, n, ith, nth, r) : 0;
    const double tp = hy_fwd_prof_begin(c);
    hy_threadpool_barrier_prefetch(c->tp, r, nr);
    hy_fwd_prof_end(c, ith, HY_PH_BARRIER, tp, 0);
}

void hy_fwd_barrier_next(const hy_ctx *c, const hy_mat *W1, const hy_mat *W2, int ith, int nth) {
    if (c->T > HY_MATMUL_GEMV_MAX_T || nth == 1) {
        hy_fwd_barrier(c, ith);
        return;
    }
    hy_pf_range r[2];
    int nr = 0;
    for (int i = 0; i < 2; i++) {
        const hy_mat *W = i ? W2 : W1;
        if (W && W->rows > 0 && W->cols > 0) nr += set_part_head(&(hy_fwd_mm){W, NULL, 0}, 1, ith, nth, r + nr);
    }
    const double tp = hy_fwd_prof_begin(c);
    hy_threadpool_barrier_prefetch(c->tp, r, nr);
    hy_fwd_prof_end(c, ith, HY_PH_BARRIER, tp, 0);
}

void hy_fwd_split_reset(hy_ctx *c) { hy_rowsplit_reset(c->split); }

/* Rows an owner takes at a time: short enough that a thief finds work to take over near the
 * end, long enough that the compare-and-swap per piece costs nothing next to the reads. */
#define HY_SPLIT_PIECE_BYTES (64u << 10)

/* Rows per piece of a dynamic split: `want` rounded up to whole blocks of align, at most all
 * the rows (rounded up), at least `least` (rounded up). */
static int split_piece(double want, int rows, int align, int least) {
    const int piece = ((int)(want < rows ? want : rows) + align - 1) / align * align;
    const int lo = (least + align - 1) / align * align;
    return piece < lo ? lo : piece;
}

/* Prefill: rows an owner takes at a time at least (the row block of the row-group and
 * bf16-pair GEMMs, matmul_avx2.c / matmul_avx512.c / matmul_blk.h). Compute
 * bound, so the pieces only need to be long against the call overhead and short against a
 * matmul: a 27B gate_proj piece of 128 rows x 512 tokens is ~7 ms on one thread. */
#define HY_SPLIT_PREFILL_ROWS 128

void hy_fwd_split_begin(const hy_ctx *c, const hy_mat *W, int T, int ith, int nth, hy_fwd_split *sp) {
    memset(sp, 0, sizeof *sp);
    if (nth == 1 || W->rows > HY_ROWSPLIT_MAX_ROWS) {
        hy_fwd_rows(W, ith, nth, &sp->o0, &sp->o1);
        sp->done = sp->o1 <= sp->o0;
        return;
    }
    const int a = hy_matmul_row_align(W->fmt);
    const double row_bytes = (double)hy_mat_bytes(W) / (W->rows > 0 ? W->rows : 1);
    const double want = T > HY_MATMUL_GEMV_MAX_T ? HY_SPLIT_PREFILL_ROWS : HY_SPLIT_PIECE_BYTES / row_bytes;
    const int piece = split_piece(want, W->rows, a, hy_matmul_min_rows(W, c->kern.isa));
    sp->dynamic = true;
    hy_rowsplit_begin(c->split, W->rows, a, piece, ith, &sp->call);
}

bool hy_fwd_split_next(const hy_ctx *c, hy_fwd_split *sp, int ith, int *o0, int *o1) {
    if (sp->dynamic) return hy_rowsplit_next(c->split, &sp->call, ith, o0, o1);
    if (sp->done) return false;
    sp->done = true;
    *o0 = sp->o0;
    *o1 = sp->o1;
    return true;
}

void hy_fwd_matmul(const hy_ctx *c, const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy,
                   bool accumulate, int ith, int nth) {
    hy_fwd_split sp;
    int o0, o1, done = 0;
    const double tp = hy_fwd_prof_begin(c);
    hy_fwd_split_begin(c, W, T, ith, nth, &sp);
    for (bool keep = false; hy_fwd_split_next(c, &sp, ith, &o0, &o1); keep = true) {
        hy_fwd_matmul_rows(c, W, T, x, ldx, y, ldy, o0, o1, accumulate, keep, ith);
        done += o1 - o0;
    }
    if (tp != 0) hy_fwd_prof_mat(c, ith, W, tp, (double)hy_mat_bytes(W) * done / (double)W->rows);
}

static void step_layers(hy_ctx *c, int ith, int nth);

void hy_fwd_matmul_set(const hy_ctx *c, const hy_fwd_mm *m, int n, int T, const float *x, size_t ldx, int ith,
                       int nth) {
    set_layout L;
    set_lay(m, n, &L);
    if (T > HY_MATMUL_GEMV_MAX_T || nth == 1 || L.total > HY_ROWSPLIT_MAX_ROWS) {
        for (int i = 0; i < n; i++) hy_fwd_matmul(c, m[i].W, T, x, ldx, m[i].y, m[i].ldy, false, ith, nth);
        return;
    }
    /* pieces of HY_SPLIT_PIECE_BYTES of the widest rows, and no shorter than any matrix's
     * fewest rows per call */
    double row_bytes = 1;
    int least = L.align;
    for (int i = 0; i < n; i++) {
        const hy_mat *W = m[i].W;
        const double rb = (double)hy_mat_bytes(W) / (W->rows > 0 ? W->rows : 1);
        const int mr = hy_matmul_min_rows(W, c->kern.isa);
        if (rb > row_bytes) row_bytes = rb;
        if (mr > least) least = mr;
    }
    hy_rowsplit_call call;
    hy_rowsplit_begin(c->split, L.total, L.align, split_piece(HY_SPLIT_PIECE_BYTES / row_bytes, L.total, L.align, least),
                      ith, &call);
    bool keep = false; /* every call of the set reads the same x */
    for (int v0, v1; hy_rowsplit_next(c->split, &call, ith, &v0, &v1);)
        for (int i = 0; i < n; i++) {
            const hy_mat *W = m[i].W;
            const int lo = v0 > L.off[i] ? v0 - L.off[i] : 0, hi = v1 - L.off[i] < W->rows ? v1 - L.off[i] : W->rows;
            if (hi <= lo) continue;
            const double tp = hy_fwd_prof_begin(c);
            hy_fwd_matmul_rows(c, W, T, x, ldx, m[i].y, m[i].ldy, lo, hi, false, keep, ith);
            keep = true;
            if (tp != 0) hy_fwd_prof_mat(c, ith, W, tp, (double)hy_mat_bytes(W) * (hi - lo) / (double)W->rows);
        }
}

void hy_fwd_layer_project(hy_ctx *c, int layer, const float *xn, int ith, int nth) {
    hy_fwd_mm m[HY_FWD_SET_MAX];
    const int n = hy_fwd_layer_set(c, layer, m);
    hy_fwd_matmul_set(c, m, n, c->T, xn, (size_t)c->d.D, ith, nth);
    hy_fwd_barrier(c, ith);
}

static void step_job(void *arg, int ith, int nth) {
    hy_ctx *c = arg;
    const double tp = hy_fwd_prof_begin(c);
    step_layers(c, ith, nth);
    hy_fwd_prof_step(c, ith, tp);
}

/* embeddings -> layers -> final norm -> lm_head, on every thread of the job */
static void step_layers(hy_ctx *c, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const size_t D = (size_t)d->D, half = (size_t)d->rot_half;
    int t0, t1;
    hy_split_range(c->T, ith, nth, &t0, &t1);
    for (int t = t0; t < t1; t++) {
        hy_ref_row_f32(&c->embed, c->ids[t], c->x + t * D);
        if (half)
            hy_ref_rope_cos_sin((int64_t)c->pos0 + t, (int)half, c->inv_freq, c->rope_cos + t * half,
                                c->rope_sin + t * half);
    }
    hy_fwd_barrier_next_layer(c, 0, ith, nth);

    for (int l = 0; l < d->L; l++) {
        const hy_layer_f32 *L = &c->layers[l];
        const float *xn = hy_fwd_norm_input(c, L->input_norm, ith, nth);
        if (L->type == HY_LAYER_ATTN) hy_layer_attn(c, l, xn, ith, nth);
        else hy_layer_gdn(c, l, xn, ith, nth);
        hy_layer_ffn(c, l, ith, nth);
    }

    if (!c->logits) return;
    if (c->all_logits || c->T == 1) {
        const float *xn = hy_fwd_norm_input(c, c->final_norm, ith, nth);
        hy_fwd_matmul(c, &c->lin.lm_head, c->T, xn, D, c->logits, (size_t)d->vocab, false, ith, nth);
    } else {
        const size_t last = (size_t)(c->T - 1) * D;
        if (ith == 0) hy_ref_rmsnorm(c->x + last, c->final_norm, (int)D, d->eps, true, c->xn + last);
        hy_threadpool_barrier(c->tp);
        hy_fwd_matmul(c, &c->lin.lm_head, 1, c->xn + last, D, c->logits, (size_t)d->vocab, false, ith, nth);
    }
}

int hy_forward(hy_ctx *c, hy_seq *s, const int32_t *ids, int n, float *logits, bool all_logits, hy_err *err) {
    if (!c || !s || (!ids && n > 0)) return hy_err_set(err, HY_E_INVALID, "forward: NULL argument");
    if (s->m != c->m) return hy_err_set(err, HY_E_INVALID, "forward: sequence was created for another model");
    if (n < 1) return hy_err_set(err, HY_E_INVALID, "forward: need at least one token (got %d)", n);
    if (n > s->max_tokens - s->pos)
        return hy_err_set(err, HY_E_RANGE, "forward: %d new tokens at position %d exceed the capacity of %d", n,
                          s->pos, s->max_tokens);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->d.vocab)
            return hy_err_set(err, HY_E_RANGE, "forward: token id %d at index %d outside [0, %d)", (int)ids[i], i,
                              c->d.vocab);
    for (int done = 0; done < n;) {
        int T = n - done < c->max_chunk ? n - done : c->max_chunk;
        bool last = done + T == n;
        c->seq = s;
        c->ids = ids + done;
        c->T = T;
        c->pos0 = s->pos;
        c->all_logits = all_logits;
        c->logits = !logits ? NULL : all_logits ? logits + (size_t)done * c->d.vocab : last ? logits : NULL;
        hy_fwd_split_reset(c);
        hy_threadpool_run(c->tp, step_job, c);
        s->pos += T;
        done += T;
    }
    c->seq = NULL;
    c->ids = NULL;
    c->logits = NULL;
    return HY_OK;
}
