/*
 * Fuzz target: a whole safetensors file image -> hy_st_header_parse (length
 * prefix, JSON, entry validation, range and overlap checks), then the
 * invariants the rest of the loader relies on for every accepted tensor:
 * its bytes lie inside the buffer and do not overlap the next tensor's.
 */
#include "io/safetensors.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hy_st_header h;
    hy_err err = {0};
    if (hy_st_header_parse(&h, data, size, "fuzz.safetensors", &err) != 0) {
        HY_ASSERT(err.msg[0] != 0);
        return 0;
    }
    HY_ASSERT(8 + h.header_len + h.data_len == size);
    const uint8_t *data_start = data + 8 + h.header_len;
    for (int i = 0; i < h.n_tensors; i++) {
        const hy_st_tensor *t = &h.tensors[i];
        const uint8_t *p = t->data;
        HY_ASSERT(p >= data_start && t->nbytes <= h.data_len && (uint64_t)(p - data_start) <= h.data_len - t->nbytes);
        HY_ASSERT(t->ndim >= 0 && t->ndim <= HY_MAX_DIMS);
        uint64_t n = hy_dtype_size(t->dtype);
        for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
        HY_ASSERT(n == t->nbytes);
        if (i + 1 < h.n_tensors) HY_ASSERT(t->offset + t->nbytes <= h.tensors[i + 1].offset);
        /* touch the first and last byte: ASan catches a wrong range */
        if (t->nbytes) {
            volatile uint8_t x = p[0];
            x = p[t->nbytes - 1];
            (void)x;
        }
    }
    hy_st_header_release(&h);
    return 0;
}
