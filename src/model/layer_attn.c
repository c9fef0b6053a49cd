/*
 * Gated full-attention layer (spec §4), run by every thread of a step job.
 *
 *   phase 1  q_proj / k_proj / v_proj           rows split across threads
 *   phase 2  per-head q/k norm (1+w), partial NeoX RoPE, K/V into the cache
 *                                               tokens split (1 token: fused
 *                                               into phase 3 by KV head)
 *   phase 3  causal softmax attention (GQA), times sigmoid(gate): the
 *            tier's flash-style kernel (c->kern.attn; in the fast prefill's
 *            steps its AMX variant, c->kern.attn_bf16, with attn_tb_bf16)
 *            over units of one KV head x attn_tb tokens, so the query heads
 *            of a group share every K/V row they load; units dealt
 *            round-robin, which balances the causal triangle
 *                                         units split (result per row fixed)
 *   phase 4  o_proj, added to the residual      rows split
 *
 * Layout traps handled here: q_proj emits per head [query(Dh) | gate(Dh)]
 * (interleaved per head, not all queries then all gates); query head h reads
 * KV head h / (Hq/Hkv); only the first 2*rot_half dims of each head rotate.
 */
#include "model/forward_impl.h"

_Static_assert(HY_KV_F32 == HY_ATTN_KV_F32 && HY_KV_BF16 == HY_ATTN_KV_BF16 && HY_KV_FP8 == HY_ATTN_KV_FP8,
               "a cache's type is its attention kernels' kv_fmt");

_Static_assert(HY_KV_BLOCK == HY_ATTN_KB, "the cache's key blocks are the attention kernels' key blocks");

/* q/k norm and RoPE of token t for the query heads of KV heads [g0, g1) and those KV heads,
 * K/V into the cache. */
static void attn_qk_prep(hy_ctx *c, const hy_layer_f32 *L, int t, int g0, int g1) {
    const hy_fwd_dims *d = &c->d;
    const hy_kv_cache *kv = c->seq->kv;
    const int Hq = d->Hq, Hkv = d->Hkv, Dh = d->Dh, group = Hq / Hkv;
    const size_t qg_w = 2 * (size_t)Hq * Dh, kv_w = (size_t)Hkv * Dh, half = (size_t)d->rot_half;
    const float *cs = c->rope_cos + t * half, *sn = c->rope_sin + t * half;
    for (int h = g0 * group; h < g1 * group; h++) {
        float *q = c->a_qg + t * qg_w + (size_t)h * 2 * Dh;
        hy_ref_rmsnorm(q, L->q_norm, Dh, d->eps, true, q);
        if (half) hy_ref_rope_neox(q, (int)half, cs, sn);
    }
    for (int g = g0; g < g1; g++) {
        float *k = c->a_k + t * kv_w + (size_t)g * Dh; /* normed and rotated in place, then cached */
        hy_ref_rmsnorm(k, L->k_norm, Dh, d->eps, true, k);
        if (half) hy_ref_rope_neox(k, (int)half, cs, sn);
        hy_kv_cache_put(kv, L->slot, g, c->pos0 + t, k, c->a_v + t * kv_w + (size_t)g * Dh);
    }
}

void hy_layer_attn(hy_ctx *c, int layer, const float *xn, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_layer_mats *lw = &c->lin.layers[layer];
    const hy_layer_f32 *L = &c->layers[layer];
    const hy_kv_cache *kv = c->seq->kv;
    const int T = c->T, Hq = d->Hq, Hkv = d->Hkv, Dh = d->Dh;
    const size_t D = (size_t)d->D, qg_w = 2 * (size_t)Hq * Dh, o_w = (size_t)Hq * Dh;

    hy_fwd_layer_project(c, layer, xn, ith, nth);

    const double tp = hy_fwd_prof_begin(c);
    /* A 1-token step needs no barrier between phases 2 and 3: its attention unit for KV head
     * g reads only the q heads of group g and K/V head g, so the thread that owns the unit
     * prepares exactly those (decode: one barrier less, and phase 2 no longer runs on one
     * thread). Longer steps: tokens split, then a barrier. */
    if (T == 1) {
        for (int g = ith; g < Hkv; g += nth) attn_qk_prep(c, L, 0, g, g + 1);
    } else {
        int t0, t1;
        hy_split_range(T, ith, nth, &t0, &t1);
        for (int t = t0; t < t1; t++) attn_qk_prep(c, L, t, 0, Hkv);
        hy_threadpool_barrier(c->tp);
    }

    /* the fast prefill's steps: bf16 products on AMX tiles where the matmuls take them too */
    const bool fast = HY_ACT_MODE(c->act) == HY_ACT_BF16 && T >= HY_MATMUL_GEMM_MIN_T && c->kern.attn_bf16;
    const hy_attn_ops *kern = fast ? c->kern.attn_bf16 : c->kern.attn;
    const int group = Hq / Hkv, tb = fast ? c->attn_tb_bf16 : c->attn_tb;
    const int n_units = Hkv * ((T + tb - 1) / tb);
    float *work = c->thr_work + (size_t)ith * c->thr_work_floats;
    hy_attn_args a = {.ldq_t = qg_w, .ldq_h = 2 * (size_t)Dh, .ldo_t = o_w, .ldo_h = (size_t)Dh, .ld = (size_t)Dh,
                      .ng = group, .dh = Dh, .scale = (float)(1.0 / sqrt((double)Dh))};
    for (int u = ith; u < n_units; u += nth) { /* u = g for one token, as above */
        const int g = u % Hkv, ta = (u / Hkv) * tb;
        a.nt = T - ta < tb ? T - ta : tb;
        a.n_past = c->pos0 + ta;
        a.q = c->a_qg + ta * qg_w + (size_t)g * group * 2 * Dh;
        a.out = c->a_out + ta * o_w + (size_t)g * group * Dh;
        a.k = hy_kv_cache_kt(kv, L->slot, g);
        a.v = hy_kv_cache_vh(kv, L->slot, g);
        a.kv_fmt = (int)kv->type;
        kern->gqa(&a, work);
        for (int t = 0; t < a.nt; t++)
            for (int i = 0; i < group; i++) {
                float *o = a.out + t * o_w + (size_t)i * Dh;
                const float *gate = a.q + t * qg_w + (size_t)i * 2 * Dh + Dh;
                for (int j = 0; j < Dh; j++) o[j] *= hy_sigmoidf(gate[j]);
            }
    }
    hy_fwd_prof_end(c, ith, HY_PH_ATTN_CORE, tp, 0);
    hy_fwd_barrier_next(c, &lw->o_proj, NULL, ith, nth);

    hy_fwd_matmul(c, &lw->o_proj, T, c->a_out, o_w, c->x, D, true, ith, nth);
    hy_fwd_barrier_next(c, &lw->gate_proj, &lw->up_proj, ith, nth);
}
