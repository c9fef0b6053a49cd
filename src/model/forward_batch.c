/*
 * Batched decode (forward.h: hy_forward_batch): one new token for each of n
 * distinct sequences in one step job. Token t of the step belongs to
 * c->bseqs[t] at position c->bseqs[t]->pos.
 *
 * Why: a decode token costs a full read of the weights; with n sequences in
 * one step every matmul runs with T = n rows, so the weights stream once for
 * all of them. Only the parts that touch a sequence's state are per token:
 * RoPE at its own position, K/V into its own cache and attention over it,
 * the GDN conv and recurrent step with its own conv / recurrent state.
 *
 * Bit-identity with hy_forward(seq_i, id_i, 1): the matmuls compute every
 * (row, token) with one order that depends only on the column count
 * (kernels/matmul.h), and activations stay fp32 here even with fast_prefill;
 * every per-token kernel (conv, gates, l2norm, recurrent, attention) computes
 * each channel, head and row as a 1-token solo step does (they are per
 * channel / head / row whatever range they are handed; the solo step fuses
 * them per key head, layer_gdn.c, this file keeps the phases). layer_ffn.c is
 * shared since it only depends on T.
 *
 * Threading: as forward.c (one caller thread per context; phases split by
 * rows / tokens / (token, head) units, each output by one thread).
 */
#include "model/forward_impl.h"

#include <string.h>

void hy_layer_attn_batch(hy_ctx *c, int layer, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_layer_mats *lw = &c->lin.layers[layer];
    const hy_layer_f32 *L = &c->layers[layer];
    const int T = c->T, Hq = d->Hq, Hkv = d->Hkv, Dh = d->Dh;
    const size_t D = (size_t)d->D, qg_w = 2 * (size_t)Hq * Dh, kv_w = (size_t)Hkv * Dh, o_w = (size_t)Hq * Dh;
    const size_t half = (size_t)d->rot_half;

    hy_fwd_layer_project(c, layer, c->xn, ith, nth);

    int t0, t1;
    hy_split_range(T, ith, nth, &t0, &t1);
    for (int t = t0; t < t1; t++) {
        const hy_seq *s = c->bseqs[t];
        const float *cs = c->rope_cos + t * half, *sn = c->rope_sin + t * half;
        for (int h = 0; h < Hq; h++) {
            float *q = c->a_qg + t * qg_w + (size_t)h * 2 * Dh;
            hy_ref_rmsnorm(q, L->q_norm, Dh, d->eps, true, q);
            if (half) hy_ref_rope_neox(q, (int)half, cs, sn);
        }
        for (int g = 0; g < Hkv; g++) {
            float *k = c->a_k + t * kv_w + (size_t)g * Dh; /* normed and rotated in place, then cached */
            hy_ref_rmsnorm(k, L->k_norm, Dh, d->eps, true, k);
            if (half) hy_ref_rope_neox(k, (int)half, cs, sn);
            hy_kv_cache_put(s->kv, L->slot, g, s->pos, k, c->a_v + t * kv_w + (size_t)g * Dh);
        }
    }
    hy_threadpool_barrier(c->tp);

    /* units: (token, KV head), each exactly the 1-token unit of a solo step */
    const int group = Hq / Hkv, n_units = Hkv * T;
    float *work = c->thr_work + (size_t)ith * c->thr_work_floats;
    hy_attn_args a = {.ldq_t = qg_w, .ldq_h = 2 * (size_t)Dh, .ldo_t = o_w, .ldo_h = (size_t)Dh, .ld = (size_t)Dh,
                      .ng = group, .dh = Dh, .scale = (float)(1.0 / sqrt((double)Dh))};
    for (int u = ith; u < n_units; u += nth) {
        const int g = u % Hkv, t = u / Hkv;
        const hy_seq *s = c->bseqs[t];
        a.nt = 1;
        a.n_past = s->pos;
        a.q = c->a_qg + t * qg_w + (size_t)g * group * 2 * Dh;
        a.out = c->a_out + t * o_w + (size_t)g * group * Dh;
        a.k = hy_kv_cache_kt(s->kv, L->slot, g);
        a.v = hy_kv_cache_vh(s->kv, L->slot, g);
        a.kv_fmt = (int)s->kv->type;
        c->kern.attn->gqa(&a, work);
        for (int i = 0; i < group; i++) {
            float *o = a.out + (size_t)i * Dh;
            const float *gate = a.q + (size_t)i * 2 * Dh + Dh;
            for (int j = 0; j < Dh; j++) o[j] *= hy_sigmoidf(gate[j]);
        }
    }
    hy_threadpool_barrier(c->tp);

    hy_fwd_matmul(c, &lw->o_proj, T, c->a_out, o_w, c->x, D, true, ith, nth);
    hy_threadpool_barrier(c->tp);
}

void hy_layer_gdn_batch(hy_ctx *c, int layer, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_layer_mats *lw = &c->lin.layers[layer];
    const hy_layer_f32 *L = &c->layers[layer];
    const int T = c->T, Hv = d->Hv, Hk = d->Hk, dk = d->dk, dv = d->dv;
    const size_t D = (size_t)d->D, C = (size_t)d->conv_dim, KD = (size_t)d->key_dim, VD = (size_t)d->value_dim;

    hy_fwd_layer_project(c, layer, c->xn, ith, nth);

    const hy_gdn_ops *K = c->gdn;
    int c0, c1, t0, t1;
    hy_split_range((int)C, ith, nth, &c0, &c1);
    if (c1 > c0)
        for (int t = 0; t < T; t++)
            K->conv_silu(1, (int)C, d->K, c0, c1, c->g_qkv + t * C, L->conv_w,
                         hy_gdn_state_conv(c->bseqs[t]->gdn, L->slot), c->g_y + t * C);
    hy_split_range(T, ith, nth, &t0, &t1);
    for (int t = t0; t < t1; t++)
        K->gates(1, Hv, c->g_a + (size_t)t * Hv, c->g_b + (size_t)t * Hv, L->A_log, L->dt_bias,
                 c->g_g + (size_t)t * Hv, c->g_beta + (size_t)t * Hv);
    hy_threadpool_barrier(c->tp);

    for (int t = t0; t < t1; t++) {
        const float *y = c->g_y + t * C;
        memcpy(c->g_q + t * KD, y, KD * sizeof(float));
        memcpy(c->g_k + t * KD, y + KD, KD * sizeof(float));
        memcpy(c->g_v + t * VD, y + 2 * KD, VD * sizeof(float));
        K->l2norm_scale(c->g_q + t * KD, Hk, dk, (float)(1.0 / sqrt((double)dk)));
        K->l2norm_scale(c->g_k + t * KD, Hk, dk, 1.0f);
    }
    hy_threadpool_barrier(c->tp);

    /* units: (token, value head); a thread's units are contiguous, so per token one head range */
    int p0, p1;
    hy_split_range(Hv * T, ith, nth, &p0, &p1);
    for (int t = p0 / Hv; t < T && t * Hv < p1; t++) {
        const int h0 = p0 > t * Hv ? p0 - t * Hv : 0, h1 = p1 < (t + 1) * Hv ? p1 - t * Hv : Hv;
        if (h1 > h0)
            K->recurrent(&c->gd, 1, h0, h1, c->g_q + t * KD, c->g_k + t * KD, c->g_v + t * VD,
                         c->g_g + (size_t)t * Hv, c->g_beta + (size_t)t * Hv,
                         hy_gdn_state_rec(c->bseqs[t]->gdn, L->slot), c->g_o + t * VD);
    }
    hy_threadpool_barrier(c->tp);

    for (int t = t0; t < t1; t++) {
        for (int h = 0; h < Hv; h++) {
            float *o = c->g_o + t * VD + (size_t)h * dv;
            const float *z = c->g_z + t * VD + (size_t)h * dv;
            hy_ref_rmsnorm(o, L->gdn_norm, dv, d->eps, false, o);
            for (int j = 0; j < dv; j++) o[j] *= hy_siluf(z[j]);
        }
    }
    hy_threadpool_barrier(c->tp);

    hy_fwd_matmul(c, &lw->out_proj, T, c->g_o, VD, c->x, D, true, ith, nth);
    hy_threadpool_barrier(c->tp);
}

static void batch_job(void *arg, int ith, int nth) {
    hy_ctx *c = arg;
    const hy_fwd_dims *d = &c->d;
    const size_t D = (size_t)d->D, half = (size_t)d->rot_half;
    int t0, t1;
    hy_split_range(c->T, ith, nth, &t0, &t1);
    for (int t = t0; t < t1; t++) {
        hy_ref_row_f32(&c->embed, c->ids[t], c->x + t * D);
        if (half)
            hy_ref_rope_cos_sin((int64_t)c->bseqs[t]->pos, (int)half, c->inv_freq, c->rope_cos + t * half,
                                c->rope_sin + t * half);
    }
    hy_threadpool_barrier(c->tp);

    for (int l = 0; l < d->L; l++) {
        const hy_layer_f32 *L = &c->layers[l];
        hy_fwd_norm_rows(c, c->x, L->input_norm, true, c->xn, ith, nth);
        hy_threadpool_barrier(c->tp);
        if (L->type == HY_LAYER_ATTN) hy_layer_attn_batch(c, l, ith, nth);
        else hy_layer_gdn_batch(c, l, ith, nth);
        hy_layer_ffn(c, l, ith, nth);
    }

    if (!c->logits) return;
    hy_fwd_norm_rows(c, c->x, c->final_norm, true, c->xn, ith, nth);
    hy_threadpool_barrier(c->tp);
    hy_fwd_matmul(c, &c->lin.lm_head, c->T, c->xn, D, c->logits, (size_t)d->vocab, false, ith, nth);
}

int hy_forward_batch(hy_ctx *c, hy_seq **seqs, const int32_t *ids, int n, float *logits, hy_err *err) {
    if (!c || !seqs || !ids) return hy_err_set(err, HY_E_INVALID, "forward_batch: NULL argument");
    if (n < 1) return hy_err_set(err, HY_E_INVALID, "forward_batch: need at least one sequence (got %d)", n);
    for (int i = 0; i < n; i++) {
        const hy_seq *s = seqs[i];
        if (!s) return hy_err_set(err, HY_E_INVALID, "forward_batch: sequence %d is NULL", i);
        if (s->m != c->m)
            return hy_err_set(err, HY_E_INVALID, "forward_batch: sequence %d was created for another model", i);
        if (s->pos >= s->max_tokens)
            return hy_err_set(err, HY_E_RANGE, "forward_batch: sequence %d is full (capacity %d)", i, s->max_tokens);
        if (ids[i] < 0 || ids[i] >= c->d.vocab)
            return hy_err_set(err, HY_E_RANGE, "forward_batch: token id %d of sequence %d outside [0, %d)",
                              (int)ids[i], i, c->d.vocab);
        for (int j = 0; j < i; j++)
            if (seqs[j] == s)
                return hy_err_set(err, HY_E_INVALID, "forward_batch: sequences %d and %d are the same", j, i);
    }
    const hy_act act = c->act;
    c->act = (hy_act)(act & HY_ACT_BF16_GEMV); /* decode semantics for every row, whatever the batch size */
    for (int done = 0; done < n;) {
        int T = n - done < c->max_chunk ? n - done : c->max_chunk;
        c->bseqs = seqs + done;
        c->seq = NULL;
        c->ids = ids + done;
        c->T = T;
        c->pos0 = 0;
        c->all_logits = true;
        c->logits = logits ? logits + (size_t)done * c->d.vocab : NULL;
        hy_fwd_split_reset(c);
        hy_threadpool_run(c->tp, batch_job, c);
        for (int i = 0; i < T; i++) seqs[done + i]->pos++;
        done += T;
    }
    c->act = act;
    c->bseqs = NULL;
    c->ids = NULL;
    c->logits = NULL;
    return HY_OK;
}
