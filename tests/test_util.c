#include "test_util.h"

#include "kernels/cpu/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *hy_test_data_path(const char *rel) {
    const char *dir = getenv("HYLA_DATA_DIR");
    if (!dir) dir = "tests/data";
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

unsigned char *hy_test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long sz = ftell(f);
    if (sz < 0) { fclose(f); return NULL; }
    rewind(f);
    unsigned char *buf = malloc((size_t)sz + 1);
    if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { buf[sz] = 0; if (len) *len = (size_t)sz; }
    return buf;
}

double hy_test_max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(d)) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}

int hy_test_isa_tiers(const char *names[], int cap) {
    const char *env = getenv("HYLA_ISA");
    if (env && env[0] && strcmp(env, "auto")) {
        names[0] = env;
        return 1;
    }
    hy_cpu_features f;
    hy_cpu_detect(&f);
    int n = 0;
#if HY_TEST_SANITIZED
    /* Under sanitizers the point is memory checking, not tier coverage (the kernel
     * tests compare every tier with its scalar twin): the best tier only keeps the
     * ASan run of the model tests within CI's time. */
    if (cap > 0) {
        names[0] = hy_isa_name(hy_isa_best(&f));
        return 1;
    }
#endif
    for (int i = 0; i < HY_ISA_COUNT && n < cap; i++)
        if (hy_isa_supported(&f, (hy_isa)i) && hy_gdn_ops_get((hy_isa)i) && hy_attn_ops_get((hy_isa)i))
            names[n++] = hy_isa_name((hy_isa)i);
    return n;
}

int32_t *hy_test_json_ids(const json_t *arr, int *n) {
    *n = (int)json_array_size(arr);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(*n > 0 ? *n : 1));
    if (!ids) abort();
    for (int i = 0; i < *n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, (size_t)i));
    return ids;
}

int hy_test_argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}
