/*
 * Cost accounting of the forward pass (see hy_ctx_costs in forward.h): how many bytes of
 * weights a decode token streams and how many multiply-adds a step does, so benchmarks can
 * report fractions of the measured memory bandwidth and compute peak. Counts what the
 * context actually reads: the matrices as the context uses them (today the checkpoint's
 * tensors in place; a context that converts weights at load must count its converted copies
 * here), plus the fp8 block scales that ride along.
 */
#include "model/forward_impl.h"

#include <string.h>

static uint64_t mat_bytes(const hy_tensor *t) {
    if (!t->data) return 0;
    uint64_t b = t->nbytes ? t->nbytes : (uint64_t)hy_tensor_numel(t) * hy_dtype_size(t->dtype);
    if (t->scale_inv && t->scale_inv->data)
        b += t->scale_inv->nbytes ? t->scale_inv->nbytes
                                  : (uint64_t)hy_tensor_numel(t->scale_inv) * hy_dtype_size(t->scale_inv->dtype);
    return b;
}

void hy_ctx_costs(const hy_ctx *c, hy_fwd_costs *o) {
    const hy_fwd_dims *d = &c->d;
    const hy_weights *w = &c->m->w;
    memset(o, 0, sizeof *o);
    int n_attn = 0;
    for (int l = 0; l < d->L; l++) {
        const hy_layer_weights *lw = &w->layers[l];
        const hy_tensor *mats[] = {&lw->q_proj,    &lw->k_proj,    &lw->v_proj,    &lw->o_proj,
                                   &lw->in_proj_qkv, &lw->in_proj_z, &lw->in_proj_b, &lw->in_proj_a,
                                   &lw->out_proj,  &lw->gate_proj, &lw->up_proj,   &lw->down_proj};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
            if (!mats[i]->data) continue;
            o->decode_weight_bytes += mat_bytes(mats[i]);
            o->linear_params += (uint64_t)hy_tensor_numel(mats[i]);
        }
        if (c->layers[l].type == HY_LAYER_ATTN) n_attn++;
    }
    o->lm_head_params = (uint64_t)d->vocab * (uint64_t)d->D;
    o->decode_weight_bytes += mat_bytes(&w->lm_head);
    o->decode_weight_bytes += (uint64_t)d->D * hy_dtype_size(w->embed_tokens.dtype);
    const int n_gdn = d->L - n_attn;
    if (n_gdn)
        o->gdn_state_bytes = (uint64_t)n_gdn *
                             ((uint64_t)d->Hv * d->dk * d->dv + (uint64_t)(d->K - 1) * d->conv_dim) * sizeof(float);
    if (n_attn) {
        o->kv_bytes_per_pos = (uint64_t)n_attn * 2 * (uint64_t)d->Hkv * d->Dh * sizeof(float);
        o->attn_flops_per_key = (uint64_t)n_attn * 4 * (uint64_t)d->Hq * d->Dh;
    }
}
