/*
 * Post-attention RMSNorm (1+w) and SwiGLU MLP (spec §3.2, §3.4), run by every
 * thread of a step job. A thread computes the same rows of gate_proj and
 * up_proj (the chunks of gate_proj's split), so it can form silu(gate)*up for
 * its rows without a barrier (the tier's vector silu_mul, kernels/gdn.h).
 *
 *   phase 1  post_attention_layernorm          tokens split (1 token: every thread, own copy)
 *   phase 2  gate/up projections + silu*mul    rows split
 *   phase 3  down_proj, added to the residual  rows split
 */
#include "model/forward_impl.h"

void hy_layer_ffn(hy_ctx *c, int layer, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_layer_mats *lw = &c->lin.layers[layer];
    const hy_layer_f32 *L = &c->layers[layer];
    const int T = c->T;
    const size_t D = (size_t)d->D, F = (size_t)d->F;

    const float *xn = hy_fwd_norm_input(c, L->post_norm, ith, nth);

    hy_fwd_split sp;
    int o0, o1;
    hy_fwd_split_begin(c, &lw->gate_proj, T, ith, nth, &sp);
    for (bool keep = false; hy_fwd_split_next(c, &sp, ith, &o0, &o1); keep = true) {
        hy_fwd_matmul_rows(c, &lw->gate_proj, T, xn, D, c->f_gate, F, o0, o1, false, keep, ith);
        hy_fwd_matmul_rows(c, &lw->up_proj, T, xn, D, c->f_up, F, o0, o1, false, true, ith);
        for (int t = 0; t < T; t++) c->gdn->silu_mul(o1 - o0, c->f_gate + t * F + o0, c->f_up + t * F + o0);
    }
    hy_fwd_barrier_next(c, &lw->down_proj, NULL, ith, nth);

    hy_fwd_matmul(c, &lw->down_proj, T, c->f_gate, F, c->x, D, true, ith, nth);
    hy_fwd_barrier_next(c, hy_fwd_first_mat(c, layer + 1), NULL, ith, nth);
}
