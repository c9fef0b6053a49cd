/* io/safetensors_write: round trip through the io reader (hy_st_open_*) — every dtype size,
 * 0-d and empty tensors, data streamed in odd-sized pieces across tensor boundaries, metadata,
 * alignment ordering, shard index; every writer error (duplicate/empty names, bad shapes,
 * writing past the end, finishing early removes the partial file). Also the fp32 -> e4m3
 * encoder the fp8 checkpoints use (base/fp.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/fp.h"
#include "io/safetensors.h"
#include "io/safetensors_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

static int setup(void **st) {
    (void)st;
    snprintf(g_dir, sizeof g_dir, "/tmp/hyla_stw_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **st) {
    (void)st;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *buf, size_t cap, const char *file) { snprintf(buf, cap, "%s/%s", g_dir, file); }

static int exists(const char *p) {
    struct stat s;
    return stat(p, &s) == 0;
}

/* byte k of tensor i: a pattern that differs per tensor and per byte */
static uint8_t pat(int i, uint64_t k) { return (uint8_t)(k * 131u + (uint64_t)i * 17u + (k >> 8)); }

static const hy_st_wtensor k_tensors[] = {
    {"b.bf16", HY_DTYPE_BF16, 2, {3, 5}},
    {"a.f32", HY_DTYPE_F32, 3, {2, 3, 7}},
    {"c.fp8", HY_DTYPE_F8_E4M3, 2, {9, 13}},
    {"d.i64", HY_DTYPE_I64, 1, {4}},
    {"e.scalar", HY_DTYPE_F32, 0, {0}},
    {"f.empty", HY_DTYPE_BF16, 2, {0, 8}},
    {"g.\"quoted\\name\"", HY_DTYPE_U8, 1, {3}},
};
#define NT ((int)(sizeof k_tensors / sizeof k_tensors[0]))

static void test_round_trip(void **st) {
    (void)st;
    hy_st_wtensor t[NT];
    memcpy(t, k_tensors, sizeof t);
    hy_st_sort_for_alignment(t, NT);
    /* sorted by element size, stable */
    for (int i = 1; i < NT; i++) assert_true(hy_dtype_size(t[i - 1].dtype) >= hy_dtype_size(t[i].dtype));
    assert_string_equal(t[0].name, "d.i64");
    assert_string_equal(t[1].name, "a.f32");

    char path[512];
    path_of(path, sizeof path, "rt.safetensors");
    hy_err e = {0};
    hy_st_writer *w;
    const char *meta[] = {"who", "test", "seed", "42", NULL};
    assert_int_equal(hy_st_writer_create(&w, path, t, NT, meta, &e), 0);
    uint64_t total = 0;
    for (int i = 0; i < NT; i++) total += hy_st_wtensor_bytes(&t[i]);
    assert_int_equal(hy_st_writer_data_bytes(w), total);
    /* the data stream in pieces of 1, 2, 3, ... bytes, crossing tensor boundaries */
    uint8_t *all = malloc(total);
    assert_non_null(all);
    uint64_t o = 0;
    for (int i = 0; i < NT; i++)
        for (uint64_t k = 0; k < hy_st_wtensor_bytes(&t[i]); k++) all[o++] = pat(i, k);
    size_t step = 1;
    for (uint64_t p = 0; p < total; p += step, step++) {
        size_t m = total - p < step ? (size_t)(total - p) : step;
        assert_int_equal(hy_st_writer_write(w, all + p, m, &e), 0);
    }
    assert_int_equal(hy_st_writer_written(w), total);
    assert_int_equal(hy_st_writer_finish(w, &e), 0);

    hy_st_set *set;
    assert_int_equal(hy_st_open_file(&set, path, &e), 0);
    assert_int_equal(hy_st_count(set), NT);
    for (int i = 0; i < NT; i++) {
        const hy_st_tensor *r = hy_st_find(set, t[i].name);
        assert_non_null(r);
        assert_int_equal(r->dtype, t[i].dtype);
        assert_int_equal(r->ndim, t[i].ndim);
        for (int d = 0; d < t[i].ndim; d++) assert_int_equal(r->shape[d], t[i].shape[d]);
        assert_int_equal(r->nbytes, hy_st_wtensor_bytes(&t[i]));
        const uint8_t *b = r->data;
        for (uint64_t k = 0; k < r->nbytes; k++) assert_int_equal(b[k], pat(i, k));
        if (r->nbytes) assert_int_equal((uintptr_t)r->data % hy_dtype_size(r->dtype), 0);
    }
    hy_st_free(set);

    /* the raw header: 8-byte aligned data start, metadata present */
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t len8[8];
    assert_int_equal(fread(len8, 1, 8, f), 8);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)len8[i] << (8 * i);
    assert_int_equal((8 + hl) % 8, 0);
    char *hdr = calloc(hl + 1, 1);
    assert_non_null(hdr);
    assert_int_equal(fread(hdr, 1, hl, f), hl);
    fseek(f, 0, SEEK_END);
    assert_int_equal((uint64_t)ftell(f), 8 + hl + total);
    fclose(f);
    assert_non_null(strstr(hdr, "\"__metadata__\":{\"format\":\"pt\",\"who\":\"test\",\"seed\":\"42\"}"));
    printf("round trip: %d tensors, %llu data bytes, header %llu bytes\n", NT, (unsigned long long)total,
           (unsigned long long)hl);
    free(hdr);
    free(all);
}

static void test_errors(void **st) {
    (void)st;
    char path[512];
    path_of(path, sizeof path, "err.safetensors");
    hy_err e = {0};
    hy_st_writer *w;
    hy_st_wtensor dup[2] = {{"x", HY_DTYPE_F32, 1, {2}}, {"x", HY_DTYPE_BF16, 1, {2}}};
    assert_int_equal(hy_st_writer_create(&w, path, dup, 2, NULL, &e), HY_E_INVALID);
    assert_non_null(strstr(e.msg, "declared twice"));
    hy_st_wtensor empty[1] = {{"", HY_DTYPE_F32, 1, {2}}};
    assert_int_equal(hy_st_writer_create(&w, path, empty, 1, NULL, &e), HY_E_INVALID);
    hy_st_wtensor reserved[1] = {{"__metadata__", HY_DTYPE_F32, 1, {2}}};
    assert_int_equal(hy_st_writer_create(&w, path, reserved, 1, NULL, &e), HY_E_INVALID);
    hy_st_wtensor neg[1] = {{"n", HY_DTYPE_F32, 1, {-1}}};
    assert_int_equal(hy_st_writer_create(&w, path, neg, 1, NULL, &e), HY_E_INVALID);
    printf("bad shape: %s\n", e.msg);
    hy_st_wtensor huge[1] = {{"h", HY_DTYPE_F32, 3, {1ll << 40, 1ll << 40, 1ll << 40}}};
    assert_int_equal(hy_st_writer_create(&w, path, huge, 1, NULL, &e), HY_E_INVALID);
    hy_st_wtensor baddt[1] = {{"d", (hy_dtype)99, 1, {2}}};
    assert_int_equal(hy_st_writer_create(&w, path, baddt, 1, NULL, &e), HY_E_INVALID);
    const char *badmeta[] = {"key", NULL};
    hy_st_wtensor ok[1] = {{"ok", HY_DTYPE_F32, 1, {2}}};
    assert_int_equal(hy_st_writer_create(&w, path, ok, 1, badmeta, &e), HY_E_INVALID);
    assert_false(exists(path));

    /* past the end */
    assert_int_equal(hy_st_writer_create(&w, path, ok, 1, NULL, &e), 0);
    const float v[3] = {1, 2, 3};
    assert_int_equal(hy_st_writer_write(w, v, 12, &e), HY_E_RANGE);
    printf("past the end: %s\n", e.msg);
    assert_int_equal(hy_st_writer_write(w, v, 4, &e), 0);
    /* finishing early is an error and leaves no file */
    assert_int_equal(hy_st_writer_finish(w, &e), HY_E_STATE);
    printf("early finish: %s\n", e.msg);
    assert_false(exists(path));
    /* abort removes the file */
    assert_int_equal(hy_st_writer_create(&w, path, ok, 1, NULL, &e), 0);
    assert_true(exists(path));
    hy_st_writer_abort(w);
    assert_false(exists(path));
    hy_st_writer_abort(NULL);
    /* unwritable path */
    assert_int_equal(hy_st_writer_create(&w, "/nonexistent-dir/x.safetensors", ok, 1, NULL, &e), HY_E_IO);
    printf("unwritable: %s\n", e.msg);
}

/* Two shards + index, opened as a directory by the reader. */
static void test_index(void **st) {
    (void)st;
    char sub[400], path[512];
    snprintf(sub, sizeof sub, "%s/sharded", g_dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    hy_st_wtensor s1[2] = {{"w.a", HY_DTYPE_F32, 1, {4}}, {"w.b", HY_DTYPE_BF16, 2, {2, 2}}};
    hy_st_wtensor s2[1] = {{"w.c", HY_DTYPE_F32, 1, {3}}};
    const float fa[4] = {1, 2, 3, 4}, fc[3] = {5, 6, 7};
    const uint16_t hb[4] = {0x3f80, 0x4000, 0x4040, 0x4080};
    hy_err e = {0};
    hy_st_writer *w;
    snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", sub);
    assert_int_equal(hy_st_writer_create(&w, path, s1, 2, NULL, &e), 0);
    assert_int_equal(hy_st_writer_write(w, fa, sizeof fa, &e), 0);
    assert_int_equal(hy_st_writer_write(w, hb, sizeof hb, &e), 0);
    assert_int_equal(hy_st_writer_finish(w, &e), 0);
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", sub);
    assert_int_equal(hy_st_writer_create(&w, path, s2, 1, NULL, &e), 0);
    assert_int_equal(hy_st_writer_write(w, fc, sizeof fc, &e), 0);
    assert_int_equal(hy_st_writer_finish(w, &e), 0);
    const char *names[3] = {"w.c", "w.a", "w.b"};
    const char *files[3] = {"model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors",
                            "model-00001-of-00002.safetensors"};
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", sub);
    assert_int_equal(hy_st_write_index(path, names, files, 3, 36, &e), 0);
    const char *dupn[2] = {"w.a", "w.a"};
    char bad[512];
    snprintf(bad, sizeof bad, "%s/bad.index.json", sub);
    assert_int_equal(hy_st_write_index(bad, dupn, files, 2, 0, &e), HY_E_INVALID);

    hy_st_set *set;
    assert_int_equal(hy_st_open_dir(&set, sub, &e), 0);
    assert_int_equal(hy_st_count(set), 3);
    assert_int_equal(hy_st_n_files(set), 2);
    const hy_st_tensor *c = hy_st_find(set, "w.c"), *b = hy_st_find(set, "w.b");
    assert_non_null(c);
    assert_non_null(b);
    assert_true(((const float *)c->data)[2] == 7.0f);
    assert_int_equal(((const uint16_t *)b->data)[3], 0x4080);
    hy_st_free(set);
    printf("sharded set of 2 files + index opens with the io reader\n");
}

static void test_fp8_encode(void **st) {
    (void)st;
    /* every finite code survives decode -> encode */
    for (int c = 0; c < 256; c++) {
        if ((c & 0x7f) == 0x7f) continue; /* NaN */
        const float f = hy_fp8_e4m3_to_f32((uint8_t)c);
        assert_int_equal(hy_f32_to_fp8_e4m3(f), c);
    }
    assert_int_equal(hy_f32_to_fp8_e4m3(1000.0f), 0x7e); /* saturates */
    assert_int_equal(hy_f32_to_fp8_e4m3(-1e30f), 0xfe);
    assert_int_equal(hy_f32_to_fp8_e4m3(INFINITY), 0x7e);
    assert_int_equal(hy_f32_to_fp8_e4m3(NAN) & 0x7f, 0x7f);
    assert_int_equal(hy_f32_to_fp8_e4m3(1e-5f), 0x00);   /* below half the smallest subnormal */
    /* ties to even: halfway between 1.0 (0x38) and 1.125 (0x39) -> 1.0; 1.1875 -> 1.25 (0x3a) */
    assert_int_equal(hy_f32_to_fp8_e4m3(1.0625f), 0x38);
    assert_int_equal(hy_f32_to_fp8_e4m3(1.1875f), 0x3a);
    /* random values round to the nearest code */
    uint64_t s = 12345;
    double worst = 0;
    for (int i = 0; i < 100000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const float x = (float)(((double)(s >> 11) * 0x1p-53 - 0.5) * 900.0);
        const uint8_t q = hy_f32_to_fp8_e4m3(x);
        const float y = hy_fp8_e4m3_to_f32(q);
        /* no other code is closer */
        for (int d = -1; d <= 1; d += 2) {
            int c2 = (q & 0x7f) + d;
            if (c2 < 0 || c2 > 0x7e) continue;
            const float z = hy_fp8_e4m3_to_f32((uint8_t)((q & 0x80) | c2));
            assert_true(fabsf(x - y) <= fabsf(x - z) || fabsf(x) > 448.0f);
        }
        if (fabsf(x) <= 448.0f && fabsf(x) > 0x1p-6f && fabs((double)(y - x) / x) > worst)
            worst = fabs((double)(y - x) / x);
    }
    printf("fp8 e4m3 encode: all 254 finite codes round-trip; max rel error on normals %.4f (bound 1/16)\n", worst);
    assert_true(worst <= 0.0625 + 1e-7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_fp8_encode),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
