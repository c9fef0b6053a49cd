/*
 * Load-time choice and conversion of the forward pass's matrices (see linears.h). One walk over
 * the model's matrix slots serves both the plan (sizes for `hyla inspect --weights`) and the
 * build. Conversions run as thread-pool jobs over row blocks (16 rows for Q8/Q4, 128 for FP8,
 * 64 for bf16), each thread with its own fp32 staging buffer; the source is read through the
 * same hy_mat row accessor the tests use, so any stored format converts to any target.
 */
#include "model/linears.h"

#include "base/alloc.h"
#include "base/fp.h"
#include "base/log.h"
#include "io/safetensors.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FP8_BLOCK 128

int hy_wreq_parse(const char *s) {
    static const char *names[HY_WEIGHTS_COUNT] = {"auto", "bf16", "fp8", "q8", "q4"};
    for (int i = 0; s && i < HY_WEIGHTS_COUNT; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

const char *hy_wreq_name(hy_wreq r) {
    static const char *names[HY_WEIGHTS_COUNT] = {"auto", "bf16", "fp8", "q8", "q4"};
    return r >= 0 && r < HY_WEIGHTS_COUNT ? names[r] : "?";
}

const char *hy_wclass_name(hy_wclass c) {
    switch (c) {
    case HY_WCLASS_ATTN: return "attention q/k/v/o";
    case HY_WCLASS_GDN_IN: return "gdn in_proj_qkv/z";
    case HY_WCLASS_GDN_AB: return "gdn in_proj_a/b";
    case HY_WCLASS_GDN_OUT: return "gdn out_proj";
    case HY_WCLASS_MLP: return "mlp gate/up/down";
    case HY_WCLASS_LM_HEAD: return "lm_head";
    case HY_WCLASS_EMBED: return "embed_tokens";
    case HY_WCLASS_SMALL: return "norms/conv1d/A_log/dt_bias";
    default: return "?";
    }
}

/* ---- slots ----------------------------------------------------------------------------- */

typedef struct slot {
    const hy_tensor *src;
    hy_mat *dst;
    hy_wclass cls;
} slot;

/* Every matrix the forward pass multiplies by, in a fixed order. dst may point into a scratch
 * table (plan) or into L. Returns the count; slots may be NULL to count only. */
static int list_slots(const hy_model *m, hy_layer_mats *mats, hy_mat *lm_head, slot *s) {
    int n = 0;
#define ADD(T, D, C)                                                                                                   \
    do {                                                                                                               \
        if (s) s[n] = (slot){(T), (D), (C)};                                                                           \
        n++;                                                                                                           \
    } while (0)
    for (int l = 0; l < m->hp.num_hidden_layers; l++) {
        const hy_layer_weights *w = &m->w.layers[l];
        hy_layer_mats *d = &mats[l];
        if (m->hp.layer_types[l] == HY_LAYER_ATTN) {
            ADD(&w->q_proj, &d->q_proj, HY_WCLASS_ATTN);
            ADD(&w->k_proj, &d->k_proj, HY_WCLASS_ATTN);
            ADD(&w->v_proj, &d->v_proj, HY_WCLASS_ATTN);
            ADD(&w->o_proj, &d->o_proj, HY_WCLASS_ATTN);
        } else {
            ADD(&w->in_proj_qkv, &d->in_proj_qkv, HY_WCLASS_GDN_IN);
            ADD(&w->in_proj_z, &d->in_proj_z, HY_WCLASS_GDN_IN);
            ADD(&w->in_proj_b, &d->in_proj_b, HY_WCLASS_GDN_AB);
            ADD(&w->in_proj_a, &d->in_proj_a, HY_WCLASS_GDN_AB);
            ADD(&w->out_proj, &d->out_proj, HY_WCLASS_GDN_OUT);
        }
        ADD(&w->gate_proj, &d->gate_proj, HY_WCLASS_MLP);
        ADD(&w->up_proj, &d->up_proj, HY_WCLASS_MLP);
        ADD(&w->down_proj, &d->down_proj, HY_WCLASS_MLP);
    }
    ADD(&m->w.lm_head, lm_head, HY_WCLASS_LM_HEAD);
#undef ADD
    return n;
}

static hy_wfmt stored_fmt(const hy_tensor *t) {
    switch (t->dtype) {
    case HY_DTYPE_F32: return HY_WFMT_F32;
    case HY_DTYPE_F16: return HY_WFMT_F16;
    case HY_DTYPE_F8_E4M3: return HY_WFMT_FP8;
    default: return HY_WFMT_BF16;
    }
}

static hy_wfmt target_fmt(const slot *s, hy_wreq req, unsigned flags) {
    const hy_wfmt sf = stored_fmt(s->src);
    bool eligible = s->cls == HY_WCLASS_ATTN || s->cls == HY_WCLASS_GDN_IN || s->cls == HY_WCLASS_GDN_OUT ||
                    s->cls == HY_WCLASS_MLP;
    if (s->cls == HY_WCLASS_GDN_AB && (flags & HY_QUANT_GDN_AB)) eligible = true;
    if (s->cls == HY_WCLASS_LM_HEAD && (flags & HY_QUANT_LM_HEAD)) eligible = true;
    if (!eligible) return sf;
    switch (req) {
    case HY_WEIGHTS_BF16: return HY_WFMT_BF16;
    case HY_WEIGHTS_FP8: return HY_WFMT_FP8;
    case HY_WEIGHTS_Q8: return HY_WFMT_Q8;
    case HY_WEIGHTS_Q4: return HY_WFMT_Q4;
    default: return sf;
    }
}

static int64_t tensor_bytes(const hy_tensor *t) {
    int64_t b = (int64_t)hy_tensor_numel(t) * (int64_t)hy_dtype_size(t->dtype);
    if (t->scale_inv) b += (int64_t)hy_tensor_numel(t->scale_inv) * (int64_t)hy_dtype_size(t->scale_inv->dtype);
    return b;
}

static void add_info(hy_wclass_info *c, int64_t numel, int64_t stored, int64_t used, int64_t owned, hy_wfmt f) {
    c->n++;
    c->numel += numel;
    c->bytes_stored += stored;
    c->bytes_used += used;
    c->bytes_owned += owned;
    c->fmts |= 1u << f;
}

static int64_t small_numel(const hy_model *m) {
    int64_t n = hy_tensor_numel(&m->w.norm);
    for (int l = 0; l < m->hp.num_hidden_layers; l++) {
        const hy_layer_weights *w = &m->w.layers[l];
        n += hy_tensor_numel(&w->input_layernorm) + hy_tensor_numel(&w->post_attention_layernorm);
        if (m->hp.layer_types[l] == HY_LAYER_ATTN) n += hy_tensor_numel(&w->q_norm) + hy_tensor_numel(&w->k_norm);
        else
            n += hy_tensor_numel(&w->conv1d) + hy_tensor_numel(&w->A_log) + hy_tensor_numel(&w->dt_bias) +
                 hy_tensor_numel(&w->norm);
    }
    return n;
}

/* The parts of the table that do not depend on conversions: embeddings and small tensors. */
static void fixed_classes(const hy_model *m, hy_wclass_info cls[HY_WCLASS_COUNT]) {
    const hy_tensor *e = &m->w.embed_tokens;
    /* a lookup reads one row per token; count the matrix as stored */
    add_info(&cls[HY_WCLASS_EMBED], hy_tensor_numel(e), tensor_bytes(e), tensor_bytes(e), 0, stored_fmt(e));
    const int64_t sn = small_numel(m);
    int64_t sb = tensor_bytes(&m->w.norm);
    for (int l = 0; l < m->hp.num_hidden_layers; l++) {
        const hy_layer_weights *w = &m->w.layers[l];
        sb += tensor_bytes(&w->input_layernorm) + tensor_bytes(&w->post_attention_layernorm);
        if (m->hp.layer_types[l] == HY_LAYER_ATTN) sb += tensor_bytes(&w->q_norm) + tensor_bytes(&w->k_norm);
        else
            sb += tensor_bytes(&w->conv1d) + tensor_bytes(&w->A_log) + tensor_bytes(&w->dt_bias) +
                  tensor_bytes(&w->norm);
    }
    hy_wclass_info *c = &cls[HY_WCLASS_SMALL];
    c->n = 1;
    for (int l = 0; l < m->hp.num_hidden_layers; l++) c->n += m->hp.layer_types[l] == HY_LAYER_ATTN ? 4 : 6;
    c->numel = sn;
    c->bytes_stored = sb;
    c->bytes_used = sn * 4;
    c->bytes_owned = sn * 4;
    c->fmts = 1u << HY_WFMT_F32;
}

/* Checks an fp8 tensor kept as stored can be read by the kernels. */
static int check_fp8_inplace(const hy_model *m, const hy_tensor *t, hy_err *err) {
    const int *bs = m->hp.quant.weight_block_size;
    if (!t->scale_inv || bs[0] <= 0 || bs[1] <= 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "weights: fp8 tensor %s has no usable block scales",
                          t->name ? t->name : "?");
    if (bs[1] % 32)
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "weights: fp8 tensor %s: block width %d is not a multiple of 32, which the fp8 kernels "
                          "need; convert at load with --weights bf16 (or q8)",
                          t->name ? t->name : "?", bs[1]);
    return HY_OK;
}

static size_t data_bytes(const hy_tensor *t) { return (size_t)hy_tensor_numel(t) * hy_dtype_size(t->dtype); }

/* Whether matrices used as stored are copied (true) or read from the mmap, for `res`. */
static bool want_copy(hy_wres res, size_t inplace) {
    if (res != HY_WRES_AUTO) return res == HY_WRES_COPY;
    const long long avail = hy_mem_available();
    return avail >= 0 && (long long)inplace + (1ll << 30) <= avail;
}

/* The format a matrix used as stored ends in: a context whose kernels read row groups
 * (flags: HY_LIN_BF16_GROUPS, HY_LIN_FP8_GROUPS) regroups BF16, and FP8 whose block height is a
 * whole number of groups, when it copies them into memory (copy_in). */
static hy_wfmt stored_as(const hy_model *m, hy_wfmt sf, unsigned flags, bool copy) {
    if (!copy) return sf;
    if (sf == HY_WFMT_BF16 && (flags & HY_LIN_BF16_GROUPS)) return HY_WFMT_BF16G;
    if (sf == HY_WFMT_FP8 && (flags & HY_LIN_FP8_GROUPS) && m->hp.quant.weight_block_size[0] % HY_G_ROWS == 0)
        return HY_WFMT_FP8G;
    return sf;
}

/* Bytes of t's values (scales aside) held as `held` (stored_as): in row groups, or as stored. */
static size_t held_data_bytes(const hy_tensor *t, hy_wfmt held) {
    if (held == HY_WFMT_BF16G) return hy_wfmt_bytes(held, t->shape[0], t->shape[1]);
    if (held == HY_WFMT_FP8G) return hy_fp8g_code_bytes((int)t->shape[0], (int)t->shape[1]);
    return data_bytes(t);
}

/* The format a matrix converted into tf is made in: row groups for BF16 / FP8 when the context
 * asks for them. */
static hy_wfmt converted_fmt(hy_wfmt tf, unsigned flags) {
    if (tf == HY_WFMT_BF16 && (flags & HY_LIN_BF16_GROUPS)) return HY_WFMT_BF16G;
    if (tf == HY_WFMT_FP8 && (flags & HY_LIN_FP8_GROUPS)) return HY_WFMT_FP8G;
    return tf;
}

unsigned hy_linears_tier_flags(unsigned quant_flags, hy_isa isa, const char *tune) {
    const bool intel = tune && !strcmp(tune, "intel");
    return quant_flags | (hy_matmul_bf16_groups(isa, intel) ? HY_LIN_BF16_GROUPS : 0) |
           (hy_matmul_fp8_groups(isa, intel) ? HY_LIN_FP8_GROUPS : 0);
}

int hy_linears_plan(const hy_model *m, hy_wreq req, unsigned flags, hy_wres res, hy_wclass_info cls[HY_WCLASS_COUNT],
                    hy_err *err) {
    memset(cls, 0, sizeof(hy_wclass_info) * HY_WCLASS_COUNT);
    const int n = list_slots(m, NULL, NULL, NULL);
    slot *s = calloc((size_t)n, sizeof *s);
    hy_layer_mats *mats = calloc((size_t)m->hp.num_hidden_layers, sizeof *mats);
    hy_mat lm;
    if (!s || !mats) {
        free(s);
        free(mats);
        return hy_err_set(err, HY_E_NOMEM, "weights: out of memory");
    }
    list_slots(m, mats, &lm, s);
    size_t inplace = 0;
    for (int i = 0; i < n; i++)
        if (target_fmt(&s[i], req, flags) == stored_fmt(s[i].src)) inplace += data_bytes(s[i].src);
    const bool copy = inplace && want_copy(res, inplace);
    for (int i = 0; i < n; i++) {
        const hy_tensor *t = s[i].src;
        const hy_wfmt sf = stored_fmt(t);
        hy_wfmt tf = target_fmt(&s[i], req, flags);
        const int64_t rows = t->shape[0], cols = t->shape[1];
        const bool tied = s[i].cls == HY_WCLASS_LM_HEAD && m->w.lm_head_tied;
        const int64_t stored = tied ? 0 : tensor_bytes(t);
        int64_t used, owned = 0;
        if (tf == sf) {
            tf = stored_as(m, sf, flags, copy);
            used = tensor_bytes(t) - (int64_t)data_bytes(t) + (int64_t)held_data_bytes(t, tf);
            if (sf == HY_WFMT_FP8 && t->scale_inv && t->scale_inv->dtype != HY_DTYPE_F32)
                owned = hy_tensor_numel(t->scale_inv) * 4;
        } else {
            tf = converted_fmt(tf, flags);
            used = owned = (int64_t)hy_wfmt_bytes(tf, rows, cols);
        }
        add_info(&cls[s[i].cls], rows * cols, stored, used, owned, tf);
    }
    fixed_classes(m, cls);
    free(s);
    free(mats);
    return HY_OK;
}

/* ---- conversion ------------------------------------------------------------------------ */

/* Weight arrays from this size on come from L's arena, one hy_alloc_pages mapping sized at the
 * start for all of them (huge pages, none half used at the end of each matrix: pages of their
 * own per matrix held ~300 MiB more for the 0.8B model); the scales and other small arrays
 * come from the heap. */
#define OWN_PAGES_MIN ((size_t)1 << 20)

struct hy_lin_buf {
    void *p;
    size_t bytes;
};

static void *own(hy_linears *L, size_t n, size_t size) {
    if (L->n_bufs == L->cap_bufs) {
        int cap = L->cap_bufs ? 2 * L->cap_bufs : 64;
        struct hy_lin_buf *b = realloc(L->bufs, (size_t)cap * sizeof *b);
        if (!b) return NULL;
        L->bufs = b;
        L->cap_bufs = cap;
    }
    if (size && n > SIZE_MAX / size) return NULL;
    const size_t bytes = n * size, lines = (bytes + 63) / 64 * 64;
    if (bytes >= OWN_PAGES_MIN && lines <= L->arena_cap - L->arena_used) {
        void *p = L->arena + L->arena_used; /* zeroed by the mapping */
        L->arena_used += lines;
        return p;
    }
    void *p = bytes >= OWN_PAGES_MIN ? hy_alloc_pages(bytes) : hy_calloc_aligned(n ? n : 1, size);
    if (p) L->bufs[L->n_bufs++] = (struct hy_lin_buf){p, bytes};
    return p;
}

static void own_free(struct hy_lin_buf *b) {
    if (b->bytes >= OWN_PAGES_MIN) hy_free_pages(b->p, b->bytes);
    else hy_free(b->p);
}

typedef struct conv_job {
    const hy_mat *src;
    hy_mat *dst;
    void *data;       /* destination arrays (mutable views of dst's) */
    float *scale;
    int unit;         /* rows per work unit */
    atomic_int bad;   /* non-finite inputs seen */
    atomic_int nomem;
} conv_job;

static void conv_run(void *arg, int ith, int nth) {
    conv_job *j = arg;
    const hy_mat *S = j->src;
    const int rows = S->rows, cols = S->cols, unit = j->unit;
    const int n_units = (rows + unit - 1) / unit;
    int u0, u1;
    hy_split_range(n_units, ith, nth, &u0, &u1);
    if (u1 <= u0) return;
    float *tmp = malloc(sizeof(float) * (size_t)unit * (size_t)cols);
    /* row groups: the unit's rows converted row-major first (bf16 or fp8 codes), then grouped */
    const bool grouped = j->dst->fmt == HY_WFMT_BF16G || j->dst->fmt == HY_WFMT_FP8G;
    uint16_t *rm = grouped ? malloc(sizeof(uint16_t) * (size_t)unit * (size_t)cols) : NULL;
    if (!tmp || (grouped && !rm)) {
        free(tmp);
        free(rm);
        atomic_fetch_add(&j->nomem, 1);
        return;
    }
    int bad = 0;
    const int nbc = (cols + FP8_BLOCK - 1) / FP8_BLOCK;
    for (int u = u0; u < u1; u++) {
        const int r0 = u * unit, nr = rows - r0 < unit ? rows - r0 : unit;
        for (int r = 0; r < nr; r++) hy_mat_row_f32(S, r0 + r, tmp + (size_t)r * cols);
        switch (j->dst->fmt) {
        case HY_WFMT_BF16:
        case HY_WFMT_BF16G: {
            uint16_t *d = rm ? rm : (uint16_t *)j->data + (size_t)r0 * cols;
            for (size_t i = 0; i < (size_t)nr * cols; i++) {
                if (!isfinite(tmp[i])) bad++;
                d[i] = hy_f32_to_bf16(tmp[i]);
            }
            if (rm) hy_mat_group_rows(j->data, rm, rows, cols, r0, r0 + nr);
            break;
        }
        case HY_WFMT_FP8:
        case HY_WFMT_FP8G: {
            uint8_t *d = rm ? (uint8_t *)rm : (uint8_t *)j->data + (size_t)r0 * cols;
            bad += hy_fp8_quant_rows(tmp, nr, cols, FP8_BLOCK, d, j->scale + (size_t)u * nbc);
            if (rm) hy_mat_group_rows_fp8(j->data, d, rows, cols, r0, r0 + nr);
            break;
        }
        default: {
            const int b = hy_q_pack_block(j->dst->fmt, tmp, nr, cols, u, j->data, j->scale);
            if (b < 0) atomic_fetch_add(&j->nomem, 1);
            else bad += b;
            break;
        }
        }
    }
    free(tmp);
    free(rm);
    if (bad) atomic_fetch_add(&j->bad, bad);
}

static void run_job(hy_threadpool *tp, hy_job_fn fn, void *arg) {
    if (tp) hy_threadpool_run(tp, fn, arg);
    else fn(arg, 0, 1);
}

/* The source as a kernel view (FP8: with fp32 block scales, owned by L when converted). */
static int source_view(hy_linears *L, const hy_model *m, const hy_tensor *t, hy_mat *out, int64_t *owned,
                       hy_err *err) {
    *out = hy_mat_from_tensor(t);
    if (out->fmt != HY_WFMT_FP8) return HY_OK;
    const hy_tensor *s = t->scale_inv;
    const int *bs = m->hp.quant.weight_block_size;
    if (!s || bs[0] <= 0 || bs[1] <= 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "weights: fp8 tensor %s has no usable block scales",
                          t->name ? t->name : "?");
    out->bs0 = bs[0];
    out->bs1 = bs[1];
    const size_t n = (size_t)hy_tensor_numel(s);
    if (s->dtype == HY_DTYPE_F32 && ((uintptr_t)s->data & 3) == 0) {
        out->scale = s->data;
        return HY_OK;
    }
    float *f = own(L, n, sizeof(float));
    if (!f) return hy_err_set(err, HY_E_NOMEM, "weights: out of memory for the scales of %s", t->name);
    for (size_t i = 0; i < n; i++) {
        const uint16_t h = ((const uint16_t *)s->data)[i];
        f[i] = s->dtype == HY_DTYPE_BF16 ? hy_bf16_to_f32(h) : hy_f16_to_f32(h);
    }
    out->scale = f;
    *owned += (int64_t)n * 4;
    return HY_OK;
}

static int convert(hy_linears *L, const hy_mat *src, hy_wfmt tf, hy_mat *dst, hy_threadpool *tp, int64_t *owned,
                   hy_err *err) {
    const int rows = src->rows, cols = src->cols;
    *dst = (hy_mat){.fmt = tf, .rows = rows, .cols = cols, .name = src->name};
    conv_job j = {.src = src, .dst = dst};
    switch (tf) {
    case HY_WFMT_BF16:
    case HY_WFMT_BF16G:
        j.data = own(L, hy_wfmt_bytes(tf, rows, cols), 1);
        j.unit = 64; /* whole row groups */
        break;
    case HY_WFMT_FP8:
    case HY_WFMT_FP8G: {
        const size_t nbr = (size_t)(rows + FP8_BLOCK - 1) / FP8_BLOCK, nbc = (size_t)(cols + FP8_BLOCK - 1) / FP8_BLOCK;
        j.data = own(L, tf == HY_WFMT_FP8G ? hy_fp8g_code_bytes(rows, cols) : (size_t)rows * cols, 1);
        j.scale = own(L, nbr * nbc, sizeof(float));
        j.unit = FP8_BLOCK;
        dst->bs0 = dst->bs1 = FP8_BLOCK;
        if (!j.scale) j.data = NULL;
        break;
    }
    case HY_WFMT_Q8:
    case HY_WFMT_Q4: {
        const size_t nb = (size_t)hy_q_blocks(rows), G = (size_t)hy_q_groups(cols);
        j.data = own(L, nb, hy_q_block_bytes(tf, (int)G));
        j.scale = own(L, nb * HY_Q_ROWS, sizeof(float));
        j.unit = HY_Q_ROWS;
        if (!j.scale) j.data = NULL;
        break;
    }
    default: HY_ASSERT(!"convert: target format");
    }
    if (!j.data)
        return hy_err_set(err, HY_E_NOMEM, "weights: out of memory converting %s [%d, %d] to %s",
                          src->name ? src->name : "?", rows, cols, hy_wfmt_name(tf));
    atomic_init(&j.bad, 0);
    atomic_init(&j.nomem, 0);
    run_job(tp, conv_run, &j);
    if (atomic_load(&j.nomem)) return hy_err_set(err, HY_E_NOMEM, "weights: out of memory (staging buffers)");
    if (atomic_load(&j.bad))
        return hy_err_set(err, HY_E_INVALID, "weights: tensor %s has %d non-finite values; cannot convert to %s",
                          src->name ? src->name : "?", atomic_load(&j.bad), hy_wfmt_name(tf));
    dst->data = j.data;
    dst->scale = j.scale;
    *owned += (int64_t)hy_wfmt_bytes(tf, rows, cols);
    return HY_OK;
}

/* ---- copies of the matrices used as stored ---------------------------------------------- */

typedef struct copy_job {
    const unsigned char *src;
    unsigned char *dst;
    size_t bytes;
} copy_job;

/* Rows [r0, r1) of a bf16 matrix (rows x cols) into the column panels of dst (matmul.h). */
typedef struct panel_job {
    const uint16_t *src;
    uint16_t *dst;
    int rows, cols, r0, r1;
} panel_job;

static void panel_run(void *arg, int ith, int nth) {
    const panel_job *j = arg;
    int a, b;
    hy_split_range(j->r1 - j->r0, ith, nth, &a, &b);
    if (b > a) hy_mat_panelize_rows(j->dst, j->src, j->rows, j->cols, j->r0 + a, j->r0 + b);
}

/* Rows [r0, r1) of a bf16 (or fp8) matrix into the row groups of dst, whole groups per thread;
 * src points at row r0 (a slice of the source). */
typedef struct group_job {
    const void *src;
    void *dst;
    int rows, cols, r0, r1;
    bool fp8; /* FP8G codes, else BF16G */
} group_job;

static void group_run(void *arg, int ith, int nth) {
    const group_job *j = arg;
    const int ng = (j->r1 - j->r0 + HY_G_ROWS - 1) / HY_G_ROWS;
    int a, b;
    hy_split_range(ng, ith, nth, &a, &b);
    const int r0 = j->r0 + a * HY_G_ROWS, r1 = j->r0 + b * HY_G_ROWS < j->r1 ? j->r0 + b * HY_G_ROWS : j->r1;
    if (r1 <= r0) return;
    const size_t off = (size_t)(r0 - j->r0) * (size_t)j->cols;
    if (j->fp8) hy_mat_group_rows_fp8(j->dst, (const uint8_t *)j->src + off, j->rows, j->cols, r0, r1);
    else hy_mat_group_rows(j->dst, (const uint16_t *)j->src + off, j->rows, j->cols, r0, r1);
}

static void copy_run(void *arg, int ith, int nth) {
    const copy_job *j = arg;
    const size_t line = 64, n = (j->bytes + line - 1) / line;
    const size_t a = n * (size_t)ith / (size_t)nth * line, b0 = n * (size_t)(ith + 1) / (size_t)nth * line;
    const size_t b = b0 < j->bytes ? b0 : j->bytes;
    if (b > a) memcpy(j->dst + a, j->src + a, b - a);
}

/* Lets go of the checkpoint pages of src[*done, end) (the tensor's first *done bytes already
 * are, but for the page the last call left partly read) and advances *done to end. */
static void drop_copied(const hy_model *m, const unsigned char *src, size_t *done, size_t end) {
    const uintptr_t pg = 4096, at = (uintptr_t)(src + *done) & ~(pg - 1);
    const unsigned char *from = at > (uintptr_t)src ? (const unsigned char *)at : src + *done;
    hy_st_drop_pages(m->st, from, (size_t)(src + end - from));
    *done = end;
}

/* Points dst (a view of t) at a copy of t's data in pages of L's own, and lets the mapping's
 * pages go from this process (the page cache keeps them; the mapping reads them back if the
 * embedding lookup of a tied head touches them). */
static int copy_in(hy_linears *L, const hy_model *m, const hy_tensor *t, hy_mat *dst, unsigned flags,
                   hy_threadpool *tp, hy_err *err) {
    const size_t bytes = data_bytes(t);
    const hy_wfmt held = stored_as(m, dst->fmt, flags, true);
    const bool g8 = held == HY_WFMT_FP8G, groups = held == HY_WFMT_BF16G;
    const size_t own_bytes = held_data_bytes(t, held);
    unsigned char *p = own(L, own_bytes, 1);
    if (!p)
        return hy_err_set(err, HY_E_NOMEM, "weights: out of memory copying %s (%zu bytes) out of the mmap",
                          t->name ? t->name : "?", bytes);
    /* in slices, each let go once copied: the peak holds one slice twice, not the matrix */
    const size_t slice = (size_t)32 << 20;
    size_t done = 0;
    if (groups || g8) {
        /* BF16 or FP8 codes in row groups (kernels/matmul.h), slices of whole groups (FP8: the
         * scales stay where they are) */
        const size_t row_bytes = (size_t)dst->cols * (g8 ? 1 : 2);
        int step = (int)(slice / row_bytes) / HY_G_ROWS * HY_G_ROWS;
        if (step < HY_G_ROWS) step = HY_G_ROWS;
        for (int r = 0; r < dst->rows; r += step) {
            group_job j = {.src = (const uint8_t *)t->data + (size_t)r * row_bytes, .dst = p, .rows = dst->rows,
                           .cols = dst->cols, .r0 = r, .r1 = dst->rows - r < step ? dst->rows : r + step, .fp8 = g8};
            run_job(tp, group_run, &j);
            drop_copied(m, t->data, &done, (size_t)j.r1 * row_bytes);
        }
        dst->fmt = g8 ? HY_WFMT_FP8G : HY_WFMT_BF16G;
    } else if (dst->fmt == HY_WFMT_BF16 && hy_panel_wanted(dst->cols)) {
        /* BF16 with long rows: column panels (kernels/matmul.h), slices of whole rows */
        const size_t row_bytes = (size_t)dst->cols * 2;
        const int step = slice / row_bytes > 0 ? (int)(slice / row_bytes) : 1;
        for (int r = 0; r < dst->rows; r += step) {
            panel_job j = {.src = t->data, .dst = (uint16_t *)p, .rows = dst->rows, .cols = dst->cols, .r0 = r,
                           .r1 = dst->rows - r < step ? dst->rows : r + step};
            run_job(tp, panel_run, &j);
            drop_copied(m, t->data, &done, (size_t)j.r1 * row_bytes);
        }
        dst->panel = true;
    } else {
        for (size_t o = 0; o < bytes; o += slice) {
            copy_job j = {.src = (const unsigned char *)t->data + o, .dst = p + o,
                          .bytes = bytes - o < slice ? bytes - o : slice};
            run_job(tp, copy_run, &j);
            drop_copied(m, t->data, &done, o + j.bytes);
        }
    }
    dst->data = p;
    L->bytes_copied += (int64_t)own_bytes;
    return HY_OK;
}

int hy_linears_create(hy_linears *L, const hy_model *m, hy_wreq req, unsigned flags, hy_wres res, hy_threadpool *tp,
                      hy_err *err) {
    memset(L, 0, sizeof *L);
    if (req < 0 || req >= HY_WEIGHTS_COUNT) return hy_err_set(err, HY_E_INVALID, "weights: bad format request");
    const int n = list_slots(m, NULL, NULL, NULL);
    L->layers = calloc((size_t)m->hp.num_hidden_layers, sizeof *L->layers);
    slot *s = calloc((size_t)n, sizeof *s);
    if (!L->layers || !s) {
        free(s);
        hy_linears_free(L);
        return hy_err_set(err, HY_E_NOMEM, "weights: out of memory");
    }
    list_slots(m, L->layers, &L->lm_head, s);
    size_t inplace = 0, converted = 0, group_pad = 0;
    for (int i = 0; i < n; i++) {
        const hy_wfmt tf = target_fmt(&s[i], req, flags);
        const int64_t rows = s[i].src->shape[0], cols = s[i].src->shape[1];
        if (tf == stored_fmt(s[i].src)) {
            inplace += data_bytes(s[i].src);
            group_pad += held_data_bytes(s[i].src, stored_as(m, tf, flags, true)) - data_bytes(s[i].src);
        } else {
            converted += hy_wfmt_bytes(converted_fmt(tf, flags), rows, cols) + 3 * 64;
        }
    }
    const bool copy = inplace && want_copy(res, inplace);
    /* an upper bound of what own() will take (untouched pages cost nothing); too little only
     * sends the rest to mappings of their own */
    L->arena_cap = converted + (copy ? inplace + group_pad + (size_t)n * 64 : 0);
    L->arena = L->arena_cap ? hy_alloc_pages(L->arena_cap) : NULL;
    if (!L->arena) L->arena_cap = 0;
    L->res = !inplace ? HY_WRES_USED_NONE : copy ? HY_WRES_USED_COPY : HY_WRES_USED_MMAP;
    int rc = HY_OK;
    int n_conv = 0;
    for (int i = 0; i < n && !rc; i++) {
        const hy_tensor *t = s[i].src;
        const hy_wfmt sf = stored_fmt(t);
        hy_wfmt tf = target_fmt(&s[i], req, flags);
        if (tf != sf) tf = converted_fmt(tf, flags);
        const bool tied = s[i].cls == HY_WCLASS_LM_HEAD && m->w.lm_head_tied;
        int64_t owned = 0;
        hy_mat src;
        if ((rc = source_view(L, m, t, &src, &owned, err))) break;
        if (tf == sf) {
            if (sf == HY_WFMT_FP8 && (rc = check_fp8_inplace(m, t, err))) break;
            *s[i].dst = src;
            if (copy && (rc = copy_in(L, m, t, s[i].dst, flags, tp, err))) break;
            add_info(&L->cls[s[i].cls], hy_tensor_numel(t), tied ? 0 : tensor_bytes(t), (int64_t)hy_mat_bytes(s[i].dst),
                     owned, s[i].dst->fmt);
        } else {
            rc = convert(L, &src, tf, s[i].dst, tp, &owned, err);
            if (rc) break;
            hy_st_drop_pages(m->st, t->data, data_bytes(t)); /* read once; back from the file if needed */
            n_conv++;
            add_info(&L->cls[s[i].cls], hy_tensor_numel(t), tied ? 0 : tensor_bytes(t),
                     (int64_t)hy_wfmt_bytes(tf, src.rows, src.cols), owned, tf);
        }
        L->bytes_owned += owned;
    }
    free(s);
    if (rc) {
        hy_linears_free(L);
        return rc;
    }
    fixed_classes(m, L->cls);
    if (n_conv)
        HY_LOGI("weights: converted %d matrices to %s (%.1f MiB held)", n_conv, hy_wreq_name(req),
                (double)L->bytes_owned / (1 << 20));
    if (inplace)
        HY_LOGI("weights: %.1f MiB of matrices used as stored, %s", (double)inplace / (1 << 20),
                copy ? "copied into memory" : "read from the mmap");
    return HY_OK;
}

void hy_linears_free(hy_linears *L) {
    if (!L) return;
    for (int i = 0; i < L->n_bufs; i++) own_free(&L->bufs[i]);
    if (L->arena) hy_free_pages(L->arena, L->arena_cap);
    free(L->bufs);
    free(L->layers);
    memset(L, 0, sizeof *L);
}
