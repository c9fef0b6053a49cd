/*
 * Cost accounting of the forward pass (see hy_ctx_costs in forward.h): how many bytes of
 * weights a decode token streams and how many multiply-adds a step does, so benchmarks can
 * report fractions of the measured memory bandwidth and compute peak. Counts the matrices as
 * the context reads them (c->lin: checkpoint tensors in place or the converted copies of the
 * requested weight format, with their scales) plus one embedding row per token.
 */
#include "model/forward_impl.h"

#include <string.h>

void hy_ctx_costs(const hy_ctx *c, hy_fwd_costs *o) {
    const hy_fwd_dims *d = &c->d;
    memset(o, 0, sizeof *o);
    int n_attn = 0;
    for (int l = 0; l < d->L; l++) {
        const hy_layer_mats *lm = &c->lin.layers[l];
        const hy_mat *mats[] = {&lm->q_proj,   &lm->k_proj,    &lm->v_proj,    &lm->o_proj,
                                &lm->in_proj_qkv, &lm->in_proj_z, &lm->in_proj_b, &lm->in_proj_a,
                                &lm->out_proj, &lm->gate_proj, &lm->up_proj,   &lm->down_proj};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
            if (!mats[i]->data || mats[i]->rows <= 0) continue;
            o->decode_weight_bytes += hy_mat_bytes(mats[i]);
            o->linear_params += (uint64_t)mats[i]->rows * (uint64_t)mats[i]->cols;
        }
        if (c->layers[l].type == HY_LAYER_ATTN) n_attn++;
    }
    o->lm_head_params = (uint64_t)d->vocab * (uint64_t)d->D;
    o->decode_weight_bytes += hy_mat_bytes(&c->lin.lm_head);
    o->decode_weight_bytes += (uint64_t)d->D * hy_dtype_size(c->m->w.embed_tokens.dtype);
    const int n_gdn = d->L - n_attn;
    if (n_gdn)
        o->gdn_state_bytes = (uint64_t)n_gdn *
                             ((uint64_t)d->Hv * d->dk * d->dv + (uint64_t)(d->K - 1) * d->conv_dim) * sizeof(float);
    if (n_attn) {
        o->kv_bytes_per_pos = (uint64_t)n_attn * 2 * (uint64_t)d->Hkv * d->Dh * hy_kv_type_bytes(c->kv_type);
        o->attn_flops_per_key = (uint64_t)n_attn * 4 * (uint64_t)d->Hq * d->Dh;
    }
}
