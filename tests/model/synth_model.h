/*
 * Test helpers: a synthetic qwen3_5 model built in memory (hy_hparams +
 * hy_weights with random non-trivial weights, big matrices F32 or BF16), and an
 * independent double-precision reference forward written straight from the
 * spec (recurrent GDN, attention recomputed over the whole prefix). The
 * reference takes "mutation" flags that reproduce the classic layout mistakes,
 * so tests can show the weights really exercise each trap: the engine must
 * match the correct reference and be far from every mutated one.
 *
 * Header-only (static inline) so each test executable can include it.
 */
#ifndef HY_TESTS_SYNTH_MODEL_H
#define HY_TESTS_SYNTH_MODEL_H

#include "base/fp.h"
#include "model/model.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct synth_cfg {
    int vocab, D, F, L;
    int Hq, Hkv, Dh;
    float partial_rotary_factor;
    double rope_theta;
    int Hk, Hv, dk, dv, K;
    const char *layer_pattern; /* 'g' GDN, 'a' attention, length L */
    hy_dtype big_dtype;        /* dtype of the matrices (F32 or BF16) */
    hy_dtype small_dtype;      /* dtype of norms/conv/A_log/dt_bias */
    int tied;
    uint64_t seed;
} synth_cfg;

static inline synth_cfg synth_default_cfg(void) {
    synth_cfg c = {.vocab = 64, .D = 32, .F = 48, .L = 4, .Hq = 6, .Hkv = 2, .Dh = 16,
                   .partial_rotary_factor = 0.25f, .rope_theta = 10000.0, .Hk = 2, .Hv = 6, .dk = 8, .dv = 12,
                   .K = 4, .layer_pattern = "gaga", .big_dtype = HY_DTYPE_F32, .small_dtype = HY_DTYPE_F32,
                   .tied = 0, .seed = 1234};
    return c;
}

typedef struct synth_model {
    hy_model m;
    void *bufs[512];
    int n_bufs;
    uint64_t rng;
} synth_model;

static inline double synth_rand(synth_model *s) { /* uniform [-1, 1) */
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return (double)(s->rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* values: center + spread * U[-1,1) */
static inline hy_tensor synth_tensor(synth_model *s, const char *name, hy_dtype dt, int ndim, int64_t d0, int64_t d1,
                                     int64_t d2, double center, double spread) {
    hy_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = dt;
    t.ndim = ndim;
    t.shape[0] = d0;
    t.shape[1] = d1;
    t.shape[2] = d2;
    int64_t n = hy_tensor_numel(&t);
    t.nbytes = (size_t)n * hy_dtype_size(dt);
    void *p = malloc(t.nbytes);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)(center + spread * synth_rand(s));
        if (dt == HY_DTYPE_BF16) ((uint16_t *)p)[i] = hy_f32_to_bf16(v);
        else ((float *)p)[i] = v;
    }
    s->bufs[s->n_bufs++] = p;
    t.data = p;
    return t;
}

static inline hy_tensor synth_mat(synth_model *s, const synth_cfg *c, const char *name, int64_t out, int64_t in) {
    return synth_tensor(s, name, c->big_dtype, 2, out, in, 1, 0.0, 1.7 / sqrt((double)in));
}

static inline synth_model *synth_create(const synth_cfg *c) {
    synth_model *s = calloc(1, sizeof *s);
    s->rng = c->seed * 2654435761u + 88172645463325252ull;
    hy_hparams *hp = &s->m.hp;
    strcpy(hp->model_type, "qwen3_5_text");
    hp->vocab_size = c->vocab;
    hp->hidden_size = c->D;
    hp->intermediate_size = c->F;
    hp->num_hidden_layers = c->L;
    hp->num_attention_heads = c->Hq;
    hp->num_key_value_heads = c->Hkv;
    hp->head_dim = c->Dh;
    hp->attn_output_gate = true;
    hp->rope_theta = c->rope_theta;
    hp->partial_rotary_factor = c->partial_rotary_factor;
    hp->linear_conv_kernel_dim = c->K;
    hp->linear_key_head_dim = c->dk;
    hp->linear_value_head_dim = c->dv;
    hp->linear_num_key_heads = c->Hk;
    hp->linear_num_value_heads = c->Hv;
    hp->rms_norm_eps = 1e-6f;
    hp->tie_word_embeddings = c->tied;
    for (int l = 0; l < c->L; l++) hp->layer_types[l] = c->layer_pattern[l] == 'a' ? HY_LAYER_ATTN : HY_LAYER_GDN;

    hy_weights *w = &s->m.w;
    w->embed_tokens = synth_tensor(s, "embed_tokens", c->big_dtype, 2, c->vocab, c->D, 1, 0.0, 1.0);
    w->norm = synth_tensor(s, "norm", c->small_dtype, 1, c->D, 1, 1, 0.0, 0.5);
    if (c->tied) {
        w->lm_head = w->embed_tokens;
        w->lm_head_tied = true;
    } else {
        w->lm_head = synth_mat(s, c, "lm_head", c->vocab, c->D);
    }
    w->layers = calloc((size_t)c->L, sizeof *w->layers);
    s->bufs[s->n_bufs++] = w->layers;
    const int conv_dim = 2 * c->Hk * c->dk + c->Hv * c->dv;
    for (int l = 0; l < c->L; l++) {
        hy_layer_weights *lw = &w->layers[l];
        lw->type = hp->layer_types[l];
        lw->input_layernorm = synth_tensor(s, "input_layernorm", c->small_dtype, 1, c->D, 1, 1, 0.0, 0.5);
        lw->post_attention_layernorm =
            synth_tensor(s, "post_attention_layernorm", c->small_dtype, 1, c->D, 1, 1, 0.0, 0.5);
        if (lw->type == HY_LAYER_ATTN) {
            lw->q_proj = synth_mat(s, c, "q_proj", 2 * c->Hq * c->Dh, c->D);
            lw->k_proj = synth_mat(s, c, "k_proj", c->Hkv * c->Dh, c->D);
            lw->v_proj = synth_mat(s, c, "v_proj", c->Hkv * c->Dh, c->D);
            lw->o_proj = synth_mat(s, c, "o_proj", c->D, c->Hq * c->Dh);
            lw->q_norm = synth_tensor(s, "q_norm", c->small_dtype, 1, c->Dh, 1, 1, 0.0, 0.5);
            lw->k_norm = synth_tensor(s, "k_norm", c->small_dtype, 1, c->Dh, 1, 1, 0.0, 0.5);
        } else {
            lw->in_proj_qkv = synth_mat(s, c, "in_proj_qkv", conv_dim, c->D);
            lw->in_proj_z = synth_mat(s, c, "in_proj_z", c->Hv * c->dv, c->D);
            lw->in_proj_b = synth_mat(s, c, "in_proj_b", c->Hv, c->D);
            lw->in_proj_a = synth_mat(s, c, "in_proj_a", c->Hv, c->D);
            lw->conv1d = synth_tensor(s, "conv1d", c->small_dtype, 3, conv_dim, 1, c->K, 0.0, 0.6);
            lw->A_log = synth_tensor(s, "A_log", c->small_dtype, 1, c->Hv, 1, 1, -0.5, 1.0);
            lw->dt_bias = synth_tensor(s, "dt_bias", c->small_dtype, 1, c->Hv, 1, 1, 0.0, 1.0);
            lw->norm = synth_tensor(s, "linear_attn.norm", c->small_dtype, 1, c->dv, 1, 1, 1.0, 0.5);
            lw->out_proj = synth_mat(s, c, "out_proj", c->D, c->Hv * c->dv);
        }
        lw->gate_proj = synth_mat(s, c, "gate_proj", c->F, c->D);
        lw->up_proj = synth_mat(s, c, "up_proj", c->F, c->D);
        lw->down_proj = synth_mat(s, c, "down_proj", c->D, c->F);
    }
    return s;
}

static inline void synth_free(synth_model *s) {
    if (!s) return;
    for (int i = 0; i < s->n_bufs; i++) free(s->bufs[i]);
    free(s);
}

/* ------------------------------------------------ double-precision reference */

enum {
    MUT_QGATE_FLAT = 1 << 0,    /* q_proj split as [all queries | all gates] */
    MUT_GQA_TILE = 1 << 1,      /* query head h reads KV head h % Hkv */
    MUT_GDN_TILE = 1 << 2,      /* value head h reads key head h % Hk */
    MUT_ROPE_FULL = 1 << 3,     /* rotate all head_dim dims */
    MUT_GDN_NORM_1PW = 1 << 4,  /* GDN gated norm with (1+w) */
    MUT_NORM_PLAIN = 1 << 5,    /* zero-centred norms with plain w */
};

static inline double ref_w(const hy_tensor *t, int64_t i) {
    if (t->dtype == HY_DTYPE_BF16) return hy_bf16_to_f32(((const uint16_t *)t->data)[i]);
    return ((const float *)t->data)[i];
}

/* y[o] = W[o,:] x */
static inline void ref_linear(const hy_tensor *W, const double *x, double *y) {
    int64_t O = W->shape[0], I = W->shape[1];
    for (int64_t o = 0; o < O; o++) {
        double s = 0;
        for (int64_t i = 0; i < I; i++) s += ref_w(W, o * I + i) * x[i];
        y[o] = s;
    }
}

static inline void ref_rmsnorm(const double *x, const hy_tensor *w, int n, int one_plus, double *y) {
    double ms = 0;
    for (int i = 0; i < n; i++) ms += x[i] * x[i];
    double r = 1.0 / sqrt(ms / n + 1e-6);
    for (int i = 0; i < n; i++) y[i] = x[i] * r * (one_plus ? 1.0 + ref_w(w, i) : ref_w(w, i));
}

static inline double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline double ref_silu(double x) { return x * ref_sigmoid(x); }

/* Logits [T][vocab] for ids[0..T) from an empty state. conv_reset_at > 0:
 * the conv history is forgotten at that position (models an engine that does
 * not carry the conv state across calls). */
static inline void ref_forward(const hy_model *m, const int32_t *ids, int T, int mut, int conv_reset_at,
                               double *logits) {
    const hy_hparams *hp = &m->hp;
    const int D = hp->hidden_size, F = hp->intermediate_size, V = hp->vocab_size;
    const int Hq = hp->num_attention_heads, Hkv = hp->num_key_value_heads, Dh = hp->head_dim;
    const int Hk = hp->linear_num_key_heads, Hv = hp->linear_num_value_heads, dk = hp->linear_key_head_dim,
              dv = hp->linear_value_head_dim, K = hp->linear_conv_kernel_dim;
    const int KD = Hk * dk, VD = Hv * dv, C = 2 * KD + VD;
    int rot = (mut & MUT_ROPE_FULL) ? Dh : (int)(Dh * (double)hp->partial_rotary_factor);
    const int one_plus = !(mut & MUT_NORM_PLAIN);

    double *x = calloc((size_t)T * D, sizeof(double)), *xn = calloc((size_t)T * D, sizeof(double));
    double *tmp = calloc((size_t)T * D, sizeof(double));
    int big = 2 * Hq * Dh;
    if (C > big) big = C;
    if (F > big) big = F;
    double *b1 = calloc((size_t)T * big, sizeof(double)), *b2 = calloc((size_t)T * big, sizeof(double));
    double *b3 = calloc((size_t)T * big, sizeof(double)), *b4 = calloc((size_t)T * big, sizeof(double));
    double *S = calloc((size_t)dk * dv, sizeof(double));
    double *sc = calloc((size_t)T, sizeof(double));

    for (int t = 0; t < T; t++)
        for (int i = 0; i < D; i++) x[t * D + i] = ref_w(&m->w.embed_tokens, (int64_t)ids[t] * D + i);

    for (int l = 0; l < hp->num_hidden_layers; l++) {
        const hy_layer_weights *lw = &m->w.layers[l];
        for (int t = 0; t < T; t++) ref_rmsnorm(x + t * D, &lw->input_layernorm, D, one_plus, xn + t * D);
        if (hp->layer_types[l] == HY_LAYER_ATTN) {
            double *qg = b1, *k = b2, *v = b3, *o = b4;
            int kvw = Hkv * Dh;
            for (int t = 0; t < T; t++) {
                double raw[4096];
                ref_linear(&lw->q_proj, xn + t * D, raw);
                for (int h = 0; h < Hq; h++)
                    for (int i = 0; i < Dh; i++) {
                        double qv, gv;
                        if (mut & MUT_QGATE_FLAT) {
                            qv = raw[h * Dh + i];
                            gv = raw[Hq * Dh + h * Dh + i];
                        } else {
                            qv = raw[h * 2 * Dh + i];
                            gv = raw[h * 2 * Dh + Dh + i];
                        }
                        qg[(size_t)t * big + h * Dh + i] = qv;
                        qg[(size_t)t * big + Hq * Dh + h * Dh + i] = gv;
                    }
                ref_linear(&lw->k_proj, xn + t * D, k + (size_t)t * big);
                ref_linear(&lw->v_proj, xn + t * D, v + (size_t)t * big);
                for (int h = 0; h < Hq + Hkv; h++) {
                    double *vec = h < Hq ? qg + (size_t)t * big + h * Dh : k + (size_t)t * big + (h - Hq) * Dh;
                    ref_rmsnorm(vec, h < Hq ? &lw->q_norm : &lw->k_norm, Dh, one_plus, vec);
                    int half = rot / 2;
                    for (int j = 0; j < half; j++) {
                        double inv = pow(hp->rope_theta, -2.0 * j / rot);
                        double ang = t * inv, a = vec[j], b = vec[j + half];
                        vec[j] = a * cos(ang) - b * sin(ang);
                        vec[j + half] = b * cos(ang) + a * sin(ang);
                    }
                }
            }
            for (int t = 0; t < T; t++)
                for (int h = 0; h < Hq; h++) {
                    int g = (mut & MUT_GQA_TILE) ? h % Hkv : h / (Hq / Hkv);
                    const double *q = qg + (size_t)t * big + h * Dh;
                    double mx = -INFINITY, den = 0;
                    for (int s = 0; s <= t; s++) {
                        double d = 0;
                        for (int i = 0; i < Dh; i++) d += q[i] * k[(size_t)s * big + g * Dh + i];
                        sc[s] = d / sqrt((double)Dh);
                        if (sc[s] > mx) mx = sc[s];
                    }
                    for (int s = 0; s <= t; s++) {
                        sc[s] = exp(sc[s] - mx);
                        den += sc[s];
                    }
                    for (int s = 0; s <= t; s++) sc[s] /= den;
                    for (int i = 0; i < Dh; i++) {
                        double acc = 0;
                        for (int s = 0; s <= t; s++) acc += sc[s] * v[(size_t)s * big + g * Dh + i];
                        o[(size_t)t * big + h * Dh + i] =
                            acc * ref_sigmoid(qg[(size_t)t * big + Hq * Dh + h * Dh + i]);
                    }
                }
            (void)kvw;
            for (int t = 0; t < T; t++) ref_linear(&lw->o_proj, o + (size_t)t * big, tmp + t * D);
        } else {
            double *X = b1, *Y = b2, *Z = b3, *O = b4;
            double *ab = calloc((size_t)T * 2 * Hv, sizeof(double)); /* [T][b(Hv) | a(Hv)] */
            for (int t = 0; t < T; t++) {
                ref_linear(&lw->in_proj_qkv, xn + t * D, X + (size_t)t * big);
                ref_linear(&lw->in_proj_z, xn + t * D, Z + (size_t)t * big);
                ref_linear(&lw->in_proj_b, xn + t * D, ab + (size_t)t * 2 * Hv);
                ref_linear(&lw->in_proj_a, xn + t * D, ab + (size_t)t * 2 * Hv + Hv);
            }
            for (int t = 0; t < T; t++)
                for (int c = 0; c < C; c++) {
                    double s = 0;
                    for (int j = 0; j < K; j++) {
                        int tt = t - (K - 1) + j;
                        if (tt < 0) continue;
                        if (conv_reset_at > 0 && t >= conv_reset_at && tt < conv_reset_at) continue;
                        s += ref_w(&lw->conv1d, (int64_t)c * K + j) * X[(size_t)tt * big + c];
                    }
                    Y[(size_t)t * big + c] = ref_silu(s);
                }
            for (int h = 0; h < Hv; h++) {
                int kh = (mut & MUT_GDN_TILE) ? h % Hk : h / (Hv / Hk);
                memset(S, 0, sizeof(double) * dk * dv);
                for (int t = 0; t < T; t++) {
                    double q[256], k[256], v[256], nq = 0, nk = 0;
                    for (int i = 0; i < dk; i++) {
                        q[i] = Y[(size_t)t * big + kh * dk + i];
                        k[i] = Y[(size_t)t * big + KD + kh * dk + i];
                        nq += q[i] * q[i];
                        nk += k[i] * k[i];
                    }
                    for (int i = 0; i < dk; i++) {
                        q[i] = q[i] / sqrt(nq + 1e-6) / sqrt((double)dk);
                        k[i] = k[i] / sqrt(nk + 1e-6);
                    }
                    for (int j = 0; j < dv; j++) v[j] = Y[(size_t)t * big + 2 * KD + h * dv + j];
                    double beta = ref_sigmoid(ab[(size_t)t * 2 * Hv + h]);
                    double xa = ab[(size_t)t * 2 * Hv + Hv + h] + ref_w(&lw->dt_bias, h);
                    double sp = xa > 20 ? xa : log1p(exp(xa));
                    double g = -exp(ref_w(&lw->A_log, h)) * sp;
                    double alpha = exp(g);
                    for (int i = 0; i < dk * dv; i++) S[i] *= alpha;
                    for (int j = 0; j < dv; j++) {
                        double mm = 0;
                        for (int i = 0; i < dk; i++) mm += S[i * dv + j] * k[i];
                        double delta = beta * (v[j] - mm);
                        for (int i = 0; i < dk; i++) S[i * dv + j] += k[i] * delta;
                    }
                    double ov[256], ms = 0;
                    for (int j = 0; j < dv; j++) {
                        double s = 0;
                        for (int i = 0; i < dk; i++) s += S[i * dv + j] * q[i];
                        ov[j] = s;
                        ms += s * s;
                    }
                    double r = 1.0 / sqrt(ms / dv + 1e-6);
                    for (int j = 0; j < dv; j++) {
                        double w = ref_w(&lw->norm, j);
                        if (mut & MUT_GDN_NORM_1PW) w += 1.0;
                        O[(size_t)t * big + h * dv + j] = ov[j] * r * w * ref_silu(Z[(size_t)t * big + h * dv + j]);
                    }
                }
            }
            for (int t = 0; t < T; t++) ref_linear(&lw->out_proj, O + (size_t)t * big, tmp + t * D);
            free(ab);
        }
        for (int i = 0; i < T * D; i++) x[i] += tmp[i];
        for (int t = 0; t < T; t++) {
            ref_rmsnorm(x + t * D, &lw->post_attention_layernorm, D, one_plus, xn + t * D);
            ref_linear(&lw->gate_proj, xn + t * D, b1);
            ref_linear(&lw->up_proj, xn + t * D, b2);
            for (int i = 0; i < F; i++) b1[i] = ref_silu(b1[i]) * b2[i];
            ref_linear(&lw->down_proj, b1, tmp + t * D);
        }
        for (int i = 0; i < T * D; i++) x[i] += tmp[i];
    }
    for (int t = 0; t < T; t++) {
        ref_rmsnorm(x + t * D, &m->w.norm, D, one_plus, xn + t * D);
        ref_linear(&m->w.lm_head, xn + t * D, logits + (size_t)t * V);
    }
    free(x); free(xn); free(tmp); free(b1); free(b2); free(b3); free(b4); free(S); free(sc);
}

/* max |a - b| over n (float engine vs double reference) */
static inline double max_abs_fd(const float *a, const double *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (isnan(d)) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}

#endif
