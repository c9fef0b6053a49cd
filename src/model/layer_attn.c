/*
 * Gated full-attention layer (spec §4), run by every thread of a step job.
 *
 *   phase 1  q_proj / k_proj / v_proj           rows split across threads
 *   phase 2  per-head q/k norm (1+w), partial NeoX RoPE, K/V into the cache
 *                                               tokens split
 *   phase 3  causal softmax attention (GQA), times sigmoid(gate)
 *                                               (token, head) pairs split
 *   phase 4  o_proj, added to the residual      rows split
 *
 * Layout traps handled here: q_proj emits per head [query(Dh) | gate(Dh)]
 * (interleaved per head, not all queries then all gates); query head h reads
 * KV head h / (Hq/Hkv); only the first 2*rot_half dims of each head rotate.
 */
#include "model/forward_impl.h"

void hy_layer_attn(hy_ctx *c, int layer, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_layer_mats *lw = &c->lin.layers[layer];
    const hy_layer_f32 *L = &c->layers[layer];
    const hy_kv_cache *kv = c->seq->kv;
    const int T = c->T, Hq = d->Hq, Hkv = d->Hkv, Dh = d->Dh;
    const size_t D = (size_t)d->D, qg_w = 2 * (size_t)Hq * Dh, kv_w = (size_t)Hkv * Dh, o_w = (size_t)Hq * Dh;
    const size_t half = (size_t)d->rot_half;

    hy_fwd_matmul(c, &lw->q_proj, T, c->xn, D, c->a_qg, qg_w, false, ith, nth);
    hy_fwd_matmul(c, &lw->k_proj, T, c->xn, D, c->a_k, kv_w, false, ith, nth);
    hy_fwd_matmul(c, &lw->v_proj, T, c->xn, D, c->a_v, kv_w, false, ith, nth);
    hy_threadpool_barrier(c->tp);

    int t0, t1;
    hy_split_range(T, ith, nth, &t0, &t1);
    for (int t = t0; t < t1; t++) {
        const float *cs = c->rope_cos + t * half, *sn = c->rope_sin + t * half;
        for (int h = 0; h < Hq; h++) {
            float *q = c->a_qg + t * qg_w + (size_t)h * 2 * Dh;
            hy_ref_rmsnorm(q, L->q_norm, Dh, d->eps, true, q);
            if (half) hy_ref_rope_neox(q, (int)half, cs, sn);
        }
        float *kc = hy_kv_cache_k(kv, L->slot, c->pos0 + t);
        float *vc = hy_kv_cache_v(kv, L->slot, c->pos0 + t);
        for (int g = 0; g < Hkv; g++) {
            const float *k = c->a_k + t * kv_w + (size_t)g * Dh;
            float *kd = kc + (size_t)g * Dh;
            hy_ref_rmsnorm(k, L->k_norm, Dh, d->eps, true, kd);
            if (half) hy_ref_rope_neox(kd, (int)half, cs, sn);
        }
        const float *v = c->a_v + t * kv_w;
        for (size_t i = 0; i < kv_w; i++) vc[i] = v[i];
    }
    hy_threadpool_barrier(c->tp);

    const int group = Hq / Hkv;
    const float scale = (float)(1.0 / sqrt((double)Dh));
    int u0, u1;
    hy_split_range(T * Hq, ith, nth, &u0, &u1);
    for (int u = u0; u < u1; u++) {
        const int t = u / Hq, h = u % Hq, g = h / group;
        const float *q = c->a_qg + t * qg_w + (size_t)h * 2 * Dh;
        const float *gate = q + Dh;
        float *o = c->a_out + t * o_w + (size_t)h * Dh;
        c->ops->attn_head(q, hy_kv_cache_k(kv, L->slot, 0) + (size_t)g * Dh,
                          hy_kv_cache_v(kv, L->slot, 0) + (size_t)g * Dh, kv_w, c->pos0 + t + 1, Dh, scale, o);
        for (int i = 0; i < Dh; i++) o[i] *= hy_sigmoidf(gate[i]);
    }
    hy_threadpool_barrier(c->tp);

    hy_fwd_matmul(c, &lw->o_proj, T, c->a_out, o_w, c->x, D, true, ith, nth);
    hy_threadpool_barrier(c->tp);
}
