/*
 * Post-attention RMSNorm (1+w) and SwiGLU MLP (spec §3.2, §3.4), run by every
 * thread of a step job. A thread computes the same rows of gate_proj and
 * up_proj (the chunks of gate_proj's split), so it can form silu(gate)*up for
 * its rows without a barrier (the tier's vector silu_mul, kernels/gdn.h).
 * In decode it takes its gate_proj rows first and their up_proj rows after
 * them, not piece by piece: each matrix is then one stream per thread (prefill,
 * compute bound, takes the up_proj rows of each piece at once). Two threads over
 * 0.8B gate/up pairs (bf16, one-row GEMV), alternated with the plain read
 * whenever that read above 40 GB/s: switching matrices every 64 rows read less
 * than gate-then-up in 10 of 11 rounds (median 0.935 of the read, against
 * 1.007).
 *
 *   phase 1  post_attention_layernorm          tokens split (1 token: every thread, own copy)
 *   phase 2  gate/up projections + silu*mul    rows split
 *   phase 3  down_proj, added to the residual  rows split
 */
#include "model/forward_impl.h"

/* Pieces of gate_proj a thread may take before it computes their up_proj rows. A piece is at least
 * 64 KiB of weights (hy_fwd_split_begin), so a full list only switches streams after 4 MiB or more;
 * the 27B's gate_proj gives a thread more pieces than that and flushes a few times. */
#define HY_FFN_RANGES 64

void hy_layer_ffn(hy_ctx *c, int layer, int ith, int nth) {
    const hy_fwd_dims *d = &c->d;
    const hy_layer_mats *lw = &c->lin.layers[layer];
    const hy_layer_f32 *L = &c->layers[layer];
    const int T = c->T;
    const size_t D = (size_t)d->D, F = (size_t)d->F;

    const float *xn = hy_fwd_norm_input(c, L->post_norm, ith, nth);

    const double tp = hy_fwd_prof_begin(c);
    int done = 0; /* rows of gate_proj (and up_proj) this thread computed, for the profile */
    hy_fwd_split sp;
    int o0, o1, n = 0;
    int rows[HY_FFN_RANGES][2]; /* gate_proj rows this thread took whose up_proj rows are pending */
    hy_fwd_split_begin(c, &lw->gate_proj, T, ith, nth, &sp);
    for (bool keep = false, more = true; more; keep = true) {
        more = hy_fwd_split_next(c, &sp, ith, &o0, &o1);
        if (more) {
            hy_fwd_matmul_rows(c, &lw->gate_proj, T, xn, D, c->f_gate, F, o0, o1, false, keep, ith);
            rows[n][0] = o0;
            rows[n++][1] = o1;
            done += o1 - o0;
        }
        /* prefill: up_proj right behind each piece, so a thread that takes over another's
         * gate_proj rows takes their up_proj rows too (the streams do not matter there) */
        if (n == HY_FFN_RANGES || (!more && n) || (n && T > HY_MATMUL_GEMV_MAX_T)) {
            for (int i = 0; i < n; i++) {
                const int r0 = rows[i][0], r1 = rows[i][1];
                hy_fwd_matmul_rows(c, &lw->up_proj, T, xn, D, c->f_up, F, r0, r1, false, true, ith);
                for (int t = 0; t < T; t++) c->gdn->silu_mul(r1 - r0, c->f_gate + t * F + r0, c->f_up + t * F + r0);
            }
            n = 0;
        }
    }
    if (tp != 0)
        hy_fwd_prof_end(c, ith, HY_PH_GATE_UP, tp,
                        (double)(hy_mat_bytes(&lw->gate_proj) + hy_mat_bytes(&lw->up_proj)) * done / (double)F);
    hy_fwd_barrier_next(c, &lw->down_proj, NULL, ith, nth);

    hy_fwd_matmul(c, &lw->down_proj, T, c->f_gate, F, c->x, D, true, ith, nth);
    hy_fwd_barrier_next_layer(c, layer + 1, ith, nth);
}
