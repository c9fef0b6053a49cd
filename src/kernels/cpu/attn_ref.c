/*
 * Scalar grouped-query attention (see kernels/attn.h): hy_ref_attn_head (kernels/ops.h) for
 * every query row, so the ref tier of the forward pass computes exactly what it did before the
 * grouped kernels existed. Also the home of the size rule every variant shares.
 * Threading: stateless.
 */
#include "kernels/attn.h"

#include "kernels/ops.h"

static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* running max and sum per row, then one score/probability tile of HY_ATTN_MR_MAX rows */
size_t hy_attn_work_floats(int rows) {
    return 2 * pad16((size_t)(rows > 0 ? rows : 1)) + (size_t)HY_ATTN_MR_MAX * HY_ATTN_KB;
}

size_t hy_attn_kv_work_floats(int dh) { return 2 * (size_t)HY_ATTN_KB * (size_t)(dh > 0 ? dh : 1); }

void hy_attn_gqa_ref(const hy_attn_args *a, float *work) {
    (void)work;
    for (int t = 0; t < a->nt; t++)
        for (int i = 0; i < a->ng; i++) {
            const float *q = a->q + (size_t)t * a->ldq_t + (size_t)i * a->ldq_h;
            float *out = a->out + (size_t)t * a->ldo_t + (size_t)i * a->ldo_h;
            hy_ref_attn_head_kv(q, a->k, a->v, a->ld, a->n_past + t + 1, a->dh, a->scale, a->kv_fmt, out);
        }
}

static const hy_attn_ops k_attn_ref = {.name = "ref", .gqa = hy_attn_gqa_ref};

const hy_attn_ops *hy_attn_ops_ref(void) { return &k_attn_ref; }
