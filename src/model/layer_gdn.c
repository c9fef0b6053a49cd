/*
 * Gated DeltaNet layer (spec §5, §6), run by every thread of a step job.
 *
 *   phase 1  in_proj_qkv / in_proj_z / in_proj_b / in_proj_a     rows split
 *   phase 2  depthwise causal conv1d + SiLU with the carried conv state
 *            (channels split); gates g, beta (tokens split)
 *   phase 3  q, k, v out of the conv output into contiguous [T][H][d]
 *            arrays; L2 norm of q and k, q times 1/sqrt(dk)      tokens split
 *   phase 4  gated delta rule; value head h uses key head h/(Hv/Hk),
 *            chunked form (chunk 64) in two phases:
 *              4a prepare every (head, chunk) pair (the state-independent
 *                 work, most of the flops)                       pairs split
 *              4b scan each head's chunks in order through its state
 *                                                                heads split
 *            so both threads are busy even with few heads and one chunk.
 *   phase 5  gated RMSNorm per value head with the PLAIN weight (not 1+w),
 *            times silu(z)                           (token, head) pairs split
 *   phase 6  out_proj, added to the residual                     rows split
 *
 * A 1-token (decode) step runs phases 2-5 as one phase split by key head, with
 * the recurrent kernel (gdn_core_1tok); its input norm is per thread
 * (hy_fwd_norm_input), so a decode GDN layer has 2 barriers besides the FFN's.
 *
 * The GDN state (recurrent [Hv][dk][dv], conv [K-1][conv_dim]) lives in the
 * sequence and is updated in place, so the next call continues from it.
 *
 * Kernels come from the context's tier (c->kern.gdn). Every pair / head /
 * channel is computed by one thread with a fixed order, so results do not
 * depend on the thread count.
 */
#include "model/forward_impl.h"

#include <string.h>

/* Gated RMSNorm of value head h of token t (plain weight), times silu(z), in place in g_o. */
static void gdn_gated_norm(hy_ctx *c, const hy_layer_f32 *L, int t, int h) {
    const size_t VD = (size_t)c->d.value_dim, dv = (size_t)c->d.dv;
    float *o = c->g_o + t * VD + h * dv;
    const float *z = c->g_z + t * VD + h * dv;
    hy_ref_rmsnorm(o, L->gdn_norm, (int)dv, c->d.eps, false, o);
    for (size_t j = 0; j < dv; j++) o[j] *= hy_siluf(z[j]);
}

/* One decode token: phases 2-5 fused per key head. A key head u and its Hv/Hk value heads need
 * only their own conv channels (q_u, k_u, v of those heads), gates, norms and state, so each
 * thread runs the whole chain for its key heads with no barrier in between (the phased form
 * costs four barriers, and with one token two of its phases run on one thread). Every kernel
 * is per channel / head / row, so the values are those of the phased form. The conv output
 * of one token is already [q | k | v], the layout the recurrent kernel reads. */
static void gdn_core_1tok(hy_ctx *c, int layer, const hy_layer_f32 *L, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_gdn_ops *K = c->gdn;
    const hy_gdn_state *st = c->seq->gdn;
    const int C = d->conv_dim, KD = d->key_dim, dk = d->dk, dv = d->dv, rep = d->Hv / d->Hk;
    float *conv = hy_gdn_state_conv(st, L->slot), *rec = hy_gdn_state_rec(st, L->slot);
    float *q = c->g_y, *k = c->g_y + KD, *v = c->g_y + 2 * KD;
    const float qscale = (float)(1.0 / sqrt((double)dk));
    const double tp = hy_fwd_prof_begin(c);
    int u0, u1;
    hy_split_range(d->Hk, ith, nth, &u0, &u1);
    for (int u = u0; u < u1; u++) {
        const int h0 = u * rep, h1 = h0 + rep;
        K->conv_silu(1, C, d->K, u * dk, (u + 1) * dk, c->g_qkv, L->conv_w, conv, c->g_y);
        K->conv_silu(1, C, d->K, KD + u * dk, KD + (u + 1) * dk, c->g_qkv, L->conv_w, conv, c->g_y);
        K->conv_silu(1, C, d->K, 2 * KD + h0 * dv, 2 * KD + h1 * dv, c->g_qkv, L->conv_w, conv, c->g_y);
        K->gates(1, rep, c->g_a + h0, c->g_b + h0, L->A_log + h0, L->dt_bias + h0, c->g_g + h0, c->g_beta + h0);
        K->l2norm_scale(q + (size_t)u * dk, 1, dk, qscale);
        K->l2norm_scale(k + (size_t)u * dk, 1, dk, 1.0f);
        K->recurrent(&c->gd, 1, h0, h1, q, k, v, c->g_g, c->g_beta, rec, c->g_o);
        for (int h = h0; h < h1; h++) gdn_gated_norm(c, L, 0, h);
    }
    hy_fwd_prof_end(c, ith, HY_PH_GDN_CORE, tp, 0);
    hy_fwd_barrier_next(c, &c->lin.layers[layer].out_proj, NULL, ith, nth);
}

/* Two or more tokens: the phases 2-5 of the header, each split over all threads. */
static void gdn_core(hy_ctx *c, const hy_layer_f32 *L, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_gdn_state *st = c->seq->gdn;
    const int T = c->T, Hv = d->Hv, Hk = d->Hk, dk = d->dk;
    const size_t C = (size_t)d->conv_dim, KD = (size_t)d->key_dim, VD = (size_t)d->value_dim;
    const hy_gdn_ops *K = c->gdn;
    int c0, c1, t0, t1;
    hy_split_range((int)C, ith, nth, &c0, &c1);
    if (c1 > c0)
        K->conv_silu(T, (int)C, d->K, c0, c1, c->g_qkv, L->conv_w, hy_gdn_state_conv(st, L->slot), c->g_y);
    hy_split_range(T, ith, nth, &t0, &t1);
    if (t1 > t0)
        K->gates(t1 - t0, Hv, c->g_a + (size_t)t0 * Hv, c->g_b + (size_t)t0 * Hv, L->A_log, L->dt_bias,
                 c->g_g + (size_t)t0 * Hv, c->g_beta + (size_t)t0 * Hv);
    hy_threadpool_barrier(c->tp);

    for (int t = t0; t < t1; t++) {
        const float *y = c->g_y + t * C;
        memcpy(c->g_q + t * KD, y, KD * sizeof(float));
        memcpy(c->g_k + t * KD, y + KD, KD * sizeof(float));
        memcpy(c->g_v + t * VD, y + 2 * KD, VD * sizeof(float));
    }
    if (t1 > t0) {
        K->l2norm_scale(c->g_q + t0 * KD, (t1 - t0) * Hk, dk, (float)(1.0 / sqrt((double)dk)));
        K->l2norm_scale(c->g_k + t0 * KD, (t1 - t0) * Hk, dk, 1.0f);
    }
    hy_threadpool_barrier(c->tp);

    float *rec = hy_gdn_state_rec(st, L->slot);
    float *work = c->thr_work + (size_t)ith * c->thr_work_floats;
    int h0, h1;
    hy_split_range(Hv, ith, nth, &h0, &h1);
    const int nc = (T + HY_GDN_CHUNK - 1) / HY_GDN_CHUNK;
    int p0, p1;
    hy_split_range(Hv * nc, ith, nth, &p0, &p1);
    for (int p = p0; p < p1; p++)
        K->chunk_prepare(&c->gd, T, HY_GDN_CHUNK, p / nc, p % nc, c->g_q, c->g_k, c->g_v, c->g_g, c->g_beta,
                         c->gdn_prep + (size_t)p * c->gdn_prep_floats, work);
    hy_threadpool_barrier(c->tp);
    for (int h = h0; h < h1; h++)
        for (int ch = 0; ch < nc; ch++)
            K->chunk_scan(&c->gd, T, HY_GDN_CHUNK, h, ch, c->g_q, c->g_k,
                          c->gdn_prep + ((size_t)h * nc + ch) * c->gdn_prep_floats, rec, c->g_o, work);
    hy_threadpool_barrier(c->tp);

    /* (token, head) pairs split */
    int q0, q1;
    hy_split_range(T * Hv, ith, nth, &q0, &q1);
    for (int p = q0; p < q1; p++) gdn_gated_norm(c, L, p / Hv, p % Hv);
    hy_threadpool_barrier(c->tp);
}

void hy_layer_gdn(hy_ctx *c, int layer, const float *xn, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_layer_mats *lw = &c->lin.layers[layer];
    const hy_layer_f32 *L = &c->layers[layer];
    const size_t D = (size_t)d->D, VD = (size_t)d->value_dim;

    hy_fwd_layer_project(c, layer, xn, ith, nth);
    if (c->T == 1) gdn_core_1tok(c, layer, L, ith, nth);
    else gdn_core(c, L, ith, nth);
    hy_fwd_matmul(c, &lw->out_proj, c->T, c->g_o, VD, c->x, D, true, ith, nth);
    hy_fwd_barrier_next(c, &lw->gate_proj, &lw->up_proj, ith, nth);
}
