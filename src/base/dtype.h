/* Element types of checkpoint tensors (safetensors dtype strings) and their sizes. */
#ifndef HY_BASE_DTYPE_H
#define HY_BASE_DTYPE_H

#include <stddef.h>

typedef enum hy_dtype {
    HY_DTYPE_F32 = 0,
    HY_DTYPE_F16,
    HY_DTYPE_BF16,
    HY_DTYPE_F8_E4M3,
    HY_DTYPE_F8_E5M2,
    HY_DTYPE_F64,
    HY_DTYPE_I8,
    HY_DTYPE_U8,
    HY_DTYPE_I16,
    HY_DTYPE_I32,
    HY_DTYPE_I64,
    HY_DTYPE_BOOL,
    HY_DTYPE_COUNT
} hy_dtype;

/* Bytes per element. */
size_t hy_dtype_size(hy_dtype t);
/* The safetensors spelling ("F32", "BF16", "F8_E4M3", ...). */
const char *hy_dtype_name(hy_dtype t);
/* Parses a safetensors dtype string; returns -1 if unknown. */
int hy_dtype_parse(const char *s);

#endif
