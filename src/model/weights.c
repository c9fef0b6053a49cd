/*
 * qwen3_5 weight binding (spec §2): builds each expected tensor name from the
 * hyper-parameters, looks it up in the safetensors set, checks dtype, shape
 * (spec §2.2 scaled by hparams) and alignment, and fills the slot with a
 * view. One walk serves both modes: strict binding stops at the first
 * problem with an error naming tensor, expected and found; the audit (for
 * `hyla inspect`) records every problem and keeps going. Tensors nobody
 * claimed are classified afterwards (vision skipped, MTP skipped or
 * unexpected). No globals; the result holds views into the set.
 */
#include "model/weights.h"

#include "base/log.h"
#include "io/safetensors.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PFX_MM "model.language_model."
#define PFX_TEXT "model."

typedef struct binder {
    const hy_hparams *hp;
    const hy_st_set *st;  /* NULL: no weight files */
    hy_weights *w;
    hy_weights_audit *a;  /* NULL in strict mode */
    hy_err *err;
    unsigned char *used;  /* [hy_st_count(st)] */
    const char *prefix;   /* text prefix */
    int scale_cap;
    bool in_mtp;          /* slots being bound belong to the MTP head */
} binder;

const char *hy_wprob_kind_name(hy_wprob_kind k) {
    switch (k) {
    case HY_WPROB_MISSING: return "missing";
    case HY_WPROB_UNEXPECTED: return "unexpected";
    case HY_WPROB_SHAPE: return "mis-shaped";
    case HY_WPROB_DTYPE: return "bad dtype";
    case HY_WPROB_LAYOUT: return "misaligned";
    default: return "?";
    }
}

static void fmt_shape(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Records a problem. Strict mode: sets err and returns its code (the walk
 * stops). Audit mode: appends and returns 0 (or HY_E_NOMEM). */
static int problem(binder *b, hy_wprob_kind kind, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int problem(binder *b, hy_wprob_kind kind, const char *name, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (!b->a) {
        int code = kind == HY_WPROB_MISSING ? HY_E_NOT_FOUND
                   : kind == HY_WPROB_DTYPE ? HY_E_UNSUPPORTED
                                            : HY_E_INVALID;
        switch (kind) {
        case HY_WPROB_MISSING: return hy_err_set(b->err, code, "tensor \"%.300s\" is missing (%s)", name, detail);
        case HY_WPROB_UNEXPECTED:
            return hy_err_set(b->err, code, "tensor \"%.300s\" is unexpected (%s)", name, detail);
        default: return hy_err_set(b->err, code, "tensor \"%.300s\": %s", name, detail);
        }
    }
    hy_weights_audit *a = b->a;
    if (a->n_probs == a->cap_probs) {
        int cap = a->cap_probs ? 2 * a->cap_probs : 64;
        hy_wprob *p = realloc(a->probs, (size_t)cap * sizeof *p);
        if (!p) return hy_err_set(b->err, HY_E_NOMEM, "weights audit: out of memory");
        a->probs = p;
        a->cap_probs = cap;
    }
    hy_wprob *p = &a->probs[a->n_probs];
    p->kind = kind;
    p->name = strdup(name);
    p->detail = strdup(detail);
    if (!p->name || !p->detail) {
        free(p->name);
        free(p->detail);
        return hy_err_set(b->err, HY_E_NOMEM, "weights audit: out of memory");
    }
    a->n_probs++;
    a->n_kind[kind]++;
    return 0;
}

static bool weight_dtype_ok(hy_dtype d) {
    return d == HY_DTYPE_F32 || d == HY_DTYPE_F16 || d == HY_DTYPE_BF16 || d == HY_DTYPE_F8_E4M3;
}

static bool aligned(const hy_st_tensor *t) {
    size_t es = hy_dtype_size(t->dtype);
    return es <= 1 || (uintptr_t)t->data % es == 0;
}

static bool same_shape(const hy_st_tensor *t, int ndim, const int64_t *shape) {
    if (t->ndim != ndim) return false;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != shape[i]) return false;
    return true;
}

/* Looks up the `<name>_scale_inv` companion of an fp8 weight and attaches it. */
static int bind_scale(binder *b, hy_tensor *slot, const hy_st_tensor *t) {
    char sname[512];
    snprintf(sname, sizeof sname, "%s_scale_inv", t->name);
    if (t->ndim != 2)
        return problem(b, HY_WPROB_DTYPE, t->name, "F8_E4M3 is only supported for 2-D linear weights, found %d-D",
                       t->ndim);
    const int *bs = b->hp->quant.weight_block_size;
    if (bs[0] <= 0 || bs[1] <= 0)
        return problem(b, HY_WPROB_DTYPE, t->name,
                       "F8_E4M3 weight but config.json has no quantization_config.weight_block_size");
    int idx = b->st ? hy_st_index_of(b->st, sname) : -1;
    int64_t want[2] = {(t->shape[0] + bs[0] - 1) / bs[0], (t->shape[1] + bs[1] - 1) / bs[1]};
    char ws[96], fs[96];
    fmt_shape(ws, sizeof ws, 2, want);
    if (idx < 0) return problem(b, HY_WPROB_MISSING, sname, "F8_E4M3 weight needs it; expected shape %s", ws);
    b->used[idx] = 1;
    const hy_st_tensor *s = hy_st_at(b->st, idx);
    if (s->dtype != HY_DTYPE_F32 && s->dtype != HY_DTYPE_BF16 && s->dtype != HY_DTYPE_F16)
        return problem(b, HY_WPROB_DTYPE, sname, "dtype %s, expected F32, BF16 or F16", hy_dtype_name(s->dtype));
    if (!same_shape(s, 2, want)) {
        fmt_shape(fs, sizeof fs, s->ndim, s->shape);
        return problem(b, HY_WPROB_SHAPE, sname, "expected shape %s (blocks of %dx%d), found %s", ws, bs[0], bs[1], fs);
    }
    if (!aligned(s)) return problem(b, HY_WPROB_LAYOUT, sname, "data is not aligned to its element size");
    HY_ASSERT(b->w->n_scale_views < b->scale_cap);
    hy_tensor *v = &b->w->scale_views[b->w->n_scale_views++];
    hy_st_view(s, v);
    slot->scale_inv = v;
    if (b->a) b->a->n_scale_inv++;
    return 0;
}

/* Binds one expected tensor. ndim/d0..d2 give the spec shape. */
static int bind_one(binder *b, hy_tensor *slot, const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2) {
    int64_t want[3] = {d0, d1, d2};
    char ws[96], fs[96];
    fmt_shape(ws, sizeof ws, ndim, want);
    if (b->a) b->a->n_expected++;
    int idx = b->st ? hy_st_index_of(b->st, name) : -1;
    if (idx < 0) return problem(b, HY_WPROB_MISSING, name, "expected shape %s", ws);
    b->used[idx] = 1;
    const hy_st_tensor *t = hy_st_at(b->st, idx);
    if (b->a) {
        b->a->n_found++;
        int64_t n = 1;
        for (int i = 0; i < t->ndim; i++) n *= t->shape[i]; /* validated: no overflow */
        if (b->in_mtp) b->a->numel_mtp += n;
        else b->a->numel_text += n;
    }
    if (!weight_dtype_ok(t->dtype))
        return problem(b, HY_WPROB_DTYPE, name, "dtype %s is not usable for weights (expected F32, F16, BF16 or F8_E4M3)",
                       hy_dtype_name(t->dtype));
    if (!same_shape(t, ndim, want)) {
        fmt_shape(fs, sizeof fs, t->ndim, t->shape);
        return problem(b, HY_WPROB_SHAPE, name, "expected shape %s, found %s", ws, fs);
    }
    if (!aligned(t)) return problem(b, HY_WPROB_LAYOUT, name, "data is not aligned to its element size");
    hy_st_view(t, slot);
    if (t->dtype == HY_DTYPE_F8_E4M3) return bind_scale(b, slot, t);
    return 0;
}

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        int rc_ = (x);                                                                                                 \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* The tensors of one decoder layer under pfx ("model.layers.3." / "mtp.layers.0."). */
static int bind_layer(binder *b, hy_layer_weights *L, const char *pfx, hy_layer_type type) {
    const hy_hparams *hp = b->hp;
    int64_t D = hp->hidden_size, F = hp->intermediate_size;
    char n[512];
#define NAME(s) (snprintf(n, sizeof n, "%s%s", pfx, s), n)
    L->type = type;
    TRY(bind_one(b, &L->input_layernorm, NAME("input_layernorm.weight"), 1, D, 0, 0));
    TRY(bind_one(b, &L->post_attention_layernorm, NAME("post_attention_layernorm.weight"), 1, D, 0, 0));
    if (type == HY_LAYER_ATTN) {
        int64_t Hq = hp->num_attention_heads, Hkv = hp->num_key_value_heads, Dh = hp->head_dim;
        TRY(bind_one(b, &L->q_proj, NAME("self_attn.q_proj.weight"), 2, 2 * Hq * Dh, D, 0));
        TRY(bind_one(b, &L->k_proj, NAME("self_attn.k_proj.weight"), 2, Hkv * Dh, D, 0));
        TRY(bind_one(b, &L->v_proj, NAME("self_attn.v_proj.weight"), 2, Hkv * Dh, D, 0));
        TRY(bind_one(b, &L->o_proj, NAME("self_attn.o_proj.weight"), 2, D, Hq * Dh, 0));
        TRY(bind_one(b, &L->q_norm, NAME("self_attn.q_norm.weight"), 1, Dh, 0, 0));
        TRY(bind_one(b, &L->k_norm, NAME("self_attn.k_norm.weight"), 1, Dh, 0, 0));
    } else {
        int64_t Hv = hp->linear_num_value_heads, dv = hp->linear_value_head_dim;
        int64_t conv = hy_hp_gdn_conv_dim(hp), K = hp->linear_conv_kernel_dim;
        TRY(bind_one(b, &L->in_proj_qkv, NAME("linear_attn.in_proj_qkv.weight"), 2, conv, D, 0));
        TRY(bind_one(b, &L->in_proj_z, NAME("linear_attn.in_proj_z.weight"), 2, Hv * dv, D, 0));
        TRY(bind_one(b, &L->in_proj_b, NAME("linear_attn.in_proj_b.weight"), 2, Hv, D, 0));
        TRY(bind_one(b, &L->in_proj_a, NAME("linear_attn.in_proj_a.weight"), 2, Hv, D, 0));
        TRY(bind_one(b, &L->conv1d, NAME("linear_attn.conv1d.weight"), 3, conv, 1, K));
        TRY(bind_one(b, &L->A_log, NAME("linear_attn.A_log"), 1, Hv, 0, 0));
        TRY(bind_one(b, &L->dt_bias, NAME("linear_attn.dt_bias"), 1, Hv, 0, 0));
        TRY(bind_one(b, &L->norm, NAME("linear_attn.norm.weight"), 1, dv, 0, 0));
        TRY(bind_one(b, &L->out_proj, NAME("linear_attn.out_proj.weight"), 2, D, Hv * dv, 0));
    }
    TRY(bind_one(b, &L->gate_proj, NAME("mlp.gate_proj.weight"), 2, F, D, 0));
    TRY(bind_one(b, &L->up_proj, NAME("mlp.up_proj.weight"), 2, F, D, 0));
    TRY(bind_one(b, &L->down_proj, NAME("mlp.down_proj.weight"), 2, D, F, 0));
#undef NAME
    return 0;
}

static bool starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }
static bool is_visual(const char *s) { return starts(s, "model.visual.") || starts(s, "visual."); }
static bool is_mtp(const char *s) { return starts(s, "mtp.") || starts(s, "model.mtp."); }

/* The whole walk; returns nonzero on the first problem in strict mode. */
static int walk(binder *b, bool *mtp_bound, int *n_visual, int *n_mtp_skipped) {
    const hy_hparams *hp = b->hp;
    hy_weights *w = b->w;
    int64_t D = hp->hidden_size, V = hp->vocab_size;
    int n = hy_st_count(b->st);

    /* Text prefix: the multimodal one when any tensor uses it; otherwise the
     * text-only one (with no files, follow the config's form). */
    b->prefix = b->st ? PFX_TEXT : (hp->nested ? PFX_MM : PFX_TEXT);
    for (int i = 0; i < n; i++)
        if (starts(hy_st_at(b->st, i)->name, PFX_MM)) {
            b->prefix = PFX_MM;
            break;
        }
    /* MTP prefix: whichever form the files use. */
    const char *mtp_prefix = NULL;
    int n_mtp = 0;
    for (int i = 0; i < n; i++) {
        const char *s = hy_st_at(b->st, i)->name;
        if (!is_mtp(s)) continue;
        n_mtp++;
        if (!mtp_prefix) mtp_prefix = starts(s, "mtp.") ? "mtp." : "model.mtp.";
    }
    if (b->a) {
        snprintf(b->a->text_prefix, sizeof b->a->text_prefix, "%s", b->prefix);
        snprintf(b->a->mtp_prefix, sizeof b->a->mtp_prefix, "%s", mtp_prefix ? mtp_prefix : "");
    }

    char name[512];
    snprintf(name, sizeof name, "%sembed_tokens.weight", b->prefix);
    TRY(bind_one(b, &w->embed_tokens, name, 2, V, D, 0));
    for (int i = 0; i < hp->num_hidden_layers; i++) {
        char pfx[128];
        snprintf(pfx, sizeof pfx, "%slayers.%d.", b->prefix, i);
        TRY(bind_layer(b, &w->layers[i], pfx, hp->layer_types[i]));
    }
    snprintf(name, sizeof name, "%snorm.weight", b->prefix);
    TRY(bind_one(b, &w->norm, name, 1, D, 0, 0));

    int lm = b->st ? hy_st_index_of(b->st, "lm_head.weight") : -1;
    if (hp->tie_word_embeddings) {
        w->lm_head = w->embed_tokens;
        w->lm_head_tied = true;
        if (lm >= 0) { /* HF ties anyway: the file's copy is never read */
            b->used[lm] = 1;
            if (!b->a) HY_LOGW("lm_head.weight is present but tie_word_embeddings is true; using embed_tokens as HF does");
        }
    } else {
        if (lm < 0 && b->a) b->a->n_expected++;
        if (lm < 0)
            TRY(problem(b, HY_WPROB_MISSING, "lm_head.weight",
                        "tie_word_embeddings is false; expected shape [%lld, %lld]", (long long)V, (long long)D));
        else TRY(bind_one(b, &w->lm_head, "lm_head.weight", 2, V, D, 0));
    }

    /* MTP: bound when the config has exactly one MTP layer (the slots hold
     * one) and the files carry MTP tensors; a partial set is reported. */
    *mtp_bound = false;
    if (hp->mtp_num_hidden_layers == 1 && mtp_prefix) {
        *mtp_bound = true;
        b->in_mtp = true;
        char mp[64];
        snprintf(name, sizeof name, "%sfc.weight", mtp_prefix);
        TRY(bind_one(b, &w->mtp_fc, name, 2, D, 2 * D, 0));
        snprintf(name, sizeof name, "%spre_fc_norm_embedding.weight", mtp_prefix);
        TRY(bind_one(b, &w->mtp_pre_fc_norm_embedding, name, 1, D, 0, 0));
        snprintf(name, sizeof name, "%spre_fc_norm_hidden.weight", mtp_prefix);
        TRY(bind_one(b, &w->mtp_pre_fc_norm_hidden, name, 1, D, 0, 0));
        snprintf(name, sizeof name, "%snorm.weight", mtp_prefix);
        TRY(bind_one(b, &w->mtp_norm, name, 1, D, 0, 0));
        snprintf(mp, sizeof mp, "%slayers.0.", mtp_prefix);
        TRY(bind_layer(b, &w->mtp_layer, mp, HY_LAYER_ATTN));
        b->in_mtp = false;
        w->has_mtp = true;
    } else if (n_mtp && !b->a) {
        if (hp->mtp_num_hidden_layers > 1)
            HY_LOGW("skipping %d MTP tensors: mtp_num_hidden_layers is %d, only 1 is supported", n_mtp,
                    hp->mtp_num_hidden_layers);
        else HY_LOGI("skipping %d MTP tensors (mtp_num_hidden_layers is 0)", n_mtp);
    }

    /* Whatever no slot claimed. */
    *n_visual = *n_mtp_skipped = 0;
    for (int i = 0; i < n; i++) {
        if (b->used[i]) continue;
        const char *s = hy_st_at(b->st, i)->name;
        if (is_visual(s)) (*n_visual)++;
        else if (is_mtp(s) && !*mtp_bound) (*n_mtp_skipped)++;
        else
            TRY(problem(b, HY_WPROB_UNEXPECTED, s,
                        is_mtp(s) ? "not part of a one-layer MTP head" : "not a tensor of a qwen3_5 checkpoint"));
    }
    if (*n_visual && !b->a) HY_LOGI("skipping %d vision tensors (model.visual.*)", *n_visual);
    return 0;
}

static int prepare(binder *b, hy_weights *w, const hy_hparams *hp, const hy_st_set *st, hy_err *err) {
    memset(w, 0, sizeof *w);
    b->hp = hp;
    b->st = st;
    b->w = w;
    b->err = err;
    int n = hy_st_count(st);
    b->used = calloc((size_t)(n ? n : 1), 1);
    w->layers = calloc((size_t)hp->num_hidden_layers, sizeof *w->layers);
    /* upper bound on slots: 16 per layer (trunk + MTP) + globals */
    b->scale_cap = 16 * (hp->num_hidden_layers + 1) + 16;
    w->scale_views = calloc((size_t)b->scale_cap, sizeof *w->scale_views);
    if (!b->used || !w->layers || !w->scale_views) {
        free(b->used);
        b->used = NULL;
        hy_weights_release(w);
        return hy_err_set(err, HY_E_NOMEM, "weights: out of memory");
    }
    return 0;
}

int hy_weights_bind(hy_weights *w, const hy_hparams *hp, const hy_st_set *st, hy_err *err) {
    binder b = {0};
    int rc = prepare(&b, w, hp, st, err);
    if (rc) return rc;
    bool mtp_bound;
    int n_visual, n_mtp_skipped;
    rc = walk(&b, &mtp_bound, &n_visual, &n_mtp_skipped);
    free(b.used);
    if (rc) hy_weights_release(w);
    return rc;
}

void hy_weights_release(hy_weights *w) {
    if (!w) return;
    free(w->layers);
    free(w->scale_views);
    memset(w, 0, sizeof *w);
}

int hy_weights_audit_run(hy_weights_audit *a, const hy_hparams *hp, const hy_st_set *st, hy_err *err) {
    memset(a, 0, sizeof *a);
    a->n_files = hy_st_n_files(st);
    a->n_tensors = hy_st_count(st);
    for (int i = 0; i < a->n_tensors; i++) {
        const hy_st_tensor *t = hy_st_at(st, i);
        a->dtype_tensors[t->dtype]++;
        a->dtype_bytes[t->dtype] += (int64_t)t->nbytes;
    }
    hy_weights w;
    binder b = {0};
    b.a = a;
    int rc = prepare(&b, &w, hp, st, err);
    if (rc) return rc;
    rc = walk(&b, &a->mtp_bound, &a->n_visual, &a->n_mtp_skipped);
    a->lm_head_tied = w.lm_head_tied;
    free(b.used);
    hy_weights_release(&w);
    if (rc) hy_weights_audit_release(a);
    return rc;
}

void hy_weights_audit_release(hy_weights_audit *a) {
    if (!a) return;
    for (int i = 0; i < a->n_probs; i++) {
        free(a->probs[i].name);
        free(a->probs[i].detail);
    }
    free(a->probs);
    memset(a, 0, sizeof *a);
}

bool hy_weights_audit_ok(const hy_weights_audit *a) { return a->n_files > 0 && a->n_probs == 0; }
