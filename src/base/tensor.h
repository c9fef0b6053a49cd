/*
 * A read-only view of one weight tensor: dtype, shape, and a pointer into an
 * mmapped safetensors file (or a buffer the model owns after a load-time
 * conversion). Views never own memory; whoever created the data frees it.
 */
#ifndef HY_BASE_TENSOR_H
#define HY_BASE_TENSOR_H

#include "base/dtype.h"

#include <stddef.h>
#include <stdint.h>

#define HY_MAX_DIMS 8

typedef struct hy_tensor {
    const char *name;           /* checkpoint name, NULL for an unset slot */
    hy_dtype dtype;
    int ndim;
    int64_t shape[HY_MAX_DIMS]; /* row-major, PyTorch order ([out, in] for linears) */
    const void *data;           /* NULL for an unset slot */
    size_t nbytes;
    /* fp8 block-quantized weights: the companion `<name>_scale_inv` tensor
     * ([ceil(out/128), ceil(in/128)] fp32/bf16), NULL otherwise. */
    const struct hy_tensor *scale_inv;
} hy_tensor;

static inline int64_t hy_tensor_numel(const hy_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

#endif
