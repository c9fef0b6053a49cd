#include "base/dtype.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} k_dtypes[HY_DTYPE_COUNT] = {
    [HY_DTYPE_F32] = {"F32", 4},     [HY_DTYPE_F16] = {"F16", 2},         [HY_DTYPE_BF16] = {"BF16", 2},
    [HY_DTYPE_F8_E4M3] = {"F8_E4M3", 1}, [HY_DTYPE_F8_E5M2] = {"F8_E5M2", 1}, [HY_DTYPE_F64] = {"F64", 8},
    [HY_DTYPE_I8] = {"I8", 1},       [HY_DTYPE_U8] = {"U8", 1},           [HY_DTYPE_I16] = {"I16", 2},
    [HY_DTYPE_I32] = {"I32", 4},     [HY_DTYPE_I64] = {"I64", 8},         [HY_DTYPE_BOOL] = {"BOOL", 1},
};

size_t hy_dtype_size(hy_dtype t) { return (unsigned)t < HY_DTYPE_COUNT ? k_dtypes[t].size : 0; }
const char *hy_dtype_name(hy_dtype t) { return (unsigned)t < HY_DTYPE_COUNT ? k_dtypes[t].name : "?"; }

int hy_dtype_parse(const char *s) {
    for (int i = 0; i < HY_DTYPE_COUNT; i++)
        if (!strcmp(s, k_dtypes[i].name)) return i;
    return -1;
}
