/* io/safetensors: single and sharded sets written by the test itself, the
 * hash lookup, and one case per header/index validation error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "io/safetensors.h"
#include "st_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_single_file(void **st) {
    (void)st;
    char *dir = stw_tmpdir();
    assert_non_null(dir);
    stw *w = stw_new();
    STW_ADD(w, "b.weight", HY_DTYPE_BF16, 3, 5);
    STW_ADD(w, "a.weight", HY_DTYPE_F32, 2, 2);
    STW_ADD(w, "c.bias", HY_DTYPE_F8_E4M3, 7);
    STW_ADD(w, "empty", HY_DTYPE_F32, 0, 4);
    char *p = stw_path(dir, "model.safetensors");
    assert_int_equal(stw_write(w, p), 0);

    hy_st_set *s = NULL;
    hy_err err = {0};
    assert_int_equal(hy_st_open_dir(&s, dir, &err), 0);
    assert_int_equal(hy_st_count(s), 4);
    assert_int_equal(hy_st_n_files(s), 1);
    assert_string_equal(hy_st_file_path(s, 0), p);
    /* name order */
    assert_string_equal(hy_st_at(s, 0)->name, "a.weight");
    assert_string_equal(hy_st_at(s, 3)->name, "empty");
    assert_null(hy_st_at(s, 4));
    const hy_st_tensor *t = hy_st_find(s, "b.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, HY_DTYPE_BF16);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 3);
    assert_int_equal(t->shape[1], 5);
    assert_int_equal(t->nbytes, 30);
    /* data pattern: byte j of tensor index 0 ("b.weight" was added first) */
    const unsigned char *d = t->data;
    for (int j = 0; j < 30; j++) assert_int_equal(d[j], (0 * 31 + j) & 0xff);
    const hy_st_tensor *c = hy_st_find(s, "c.bias");
    assert_int_equal(((const unsigned char *)c->data)[3], (2 * 31 + 3) & 0xff);
    assert_null(hy_st_find(s, "nope"));
    assert_int_equal(hy_st_index_of(s, "nope"), -1);
    hy_tensor v;
    hy_st_view(t, &v);
    assert_string_equal(v.name, "b.weight");
    assert_int_equal(v.ndim, 2);
    assert_int_equal(hy_tensor_numel(&v), 15);
    assert_ptr_equal(v.data, t->data);
    assert_null(v.scale_inv);
    hy_st_free(s);
    free(p);
    free(w);
    stw_rmdir(dir);
}

static void test_no_weights(void **st) {
    (void)st;
    char *dir = stw_tmpdir();
    hy_st_set *s = NULL;
    hy_err err = {0};
    assert_int_equal(hy_st_open_dir(&s, dir, &err), HY_E_NOT_FOUND);
    assert_null(s);
    assert_non_null(strstr(err.msg, "no weights"));
    stw_rmdir(dir);
}

/* Writes tensors 0..n-1 of w into two shards plus an index mapping each to
 * its shard (or to `lie_shard` for tensor `lie`). */
static void write_sharded(const char *dir, stw *w, int split, const char *extra_map) {
    char *p1 = stw_path(dir, "model-00001-of-00002.safetensors");
    char *p2 = stw_path(dir, "model-00002-of-00002.safetensors");
    assert_int_equal(stw_write_range(w, 0, split, p1), 0);
    assert_int_equal(stw_write_range(w, split, w->n, p2), 0);
    char idx[8192];
    size_t o = (size_t)snprintf(idx, sizeof idx, "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {");
    for (int i = 0; i < w->n; i++)
        o += (size_t)snprintf(idx + o, sizeof idx - o, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "",
                              w->t[i].name, i < split ? 1 : 2);
    snprintf(idx + o, sizeof idx - o, "%s}}", extra_map ? extra_map : "");
    char *pi = stw_path(dir, "model.safetensors.index.json");
    assert_int_equal(stw_write_text(pi, idx), 0);
    free(p1);
    free(p2);
    free(pi);
}

static void test_sharded(void **st) {
    (void)st;
    char *dir = stw_tmpdir();
    stw *w = stw_new();
    STW_ADD(w, "x.0", HY_DTYPE_F32, 4);
    STW_ADD(w, "x.1", HY_DTYPE_BF16, 2, 2);
    STW_ADD(w, "y.0", HY_DTYPE_F16, 8);
    write_sharded(dir, w, 2, NULL);
    hy_st_set *s = NULL;
    hy_err err = {0};
    int rc = hy_st_open_dir(&s, dir, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(hy_st_n_files(s), 2);
    assert_int_equal(hy_st_count(s), 3);
    const hy_st_tensor *y = hy_st_find(s, "y.0");
    assert_non_null(y);
    assert_non_null(strstr(hy_st_file_path(s, y->file), "model-00002-of-00002.safetensors"));
    /* first tensor of the second shard: pattern index restarts at 2 */
    assert_int_equal(((const unsigned char *)y->data)[1], (2 * 31 + 1) & 0xff);
    assert_int_equal(hy_st_find(s, "x.0")->file, hy_st_find(s, "x.1")->file);
    hy_st_free(s);
    free(w);
    stw_rmdir(dir);
}

static void expect_index_error(stw *w, int split, const char *extra, const char *want) {
    char *dir = stw_tmpdir();
    write_sharded(dir, w, split, extra);
    hy_st_set *s = NULL;
    hy_err err = {0};
    int rc = hy_st_open_dir(&s, dir, &err);
    if (rc == 0 || !strstr(err.msg, want)) fprintf(stderr, "rc %d: \"%s\", wanted \"%s\"\n", rc, err.msg, want);
    assert_int_not_equal(rc, 0);
    assert_null(s);
    assert_non_null(strstr(err.msg, want));
    stw_rmdir(dir);
}

static void test_index_errors(void **st) {
    (void)st;
    stw *w = stw_new();
    STW_ADD(w, "x.0", HY_DTYPE_F32, 4);
    STW_ADD(w, "x.1", HY_DTYPE_F32, 4);
    /* mapped to a shard that does not hold it */
    expect_index_error(w, 1, ", \"ghost\": \"model-00001-of-00002.safetensors\"",
                       "tensor \"ghost\" is mapped to model-00001-of-00002.safetensors but is not in that file");
    /* a shard the index names but that does not exist */
    expect_index_error(w, 1, ", \"z\": \"model-00003-of-00003.safetensors\"", "names a shard that is missing");
    /* shard name escaping the directory */
    expect_index_error(w, 1, ", \"z\": \"../model.safetensors\"", "is not a plain file name");
    /* wrong value type */
    expect_index_error(w, 1, ", \"z\": 3", "weight_map.z: expected a file name string, found integer");
    /* duplicate across shards: same tensor in both files */
    stw *d = stw_new();
    STW_ADD(d, "x.0", HY_DTYPE_F32, 4);
    STW_ADD(d, "x.0", HY_DTYPE_F32, 4);
    {
        char *dir = stw_tmpdir();
        char *p1 = stw_path(dir, "a.safetensors"), *p2 = stw_path(dir, "b.safetensors");
        assert_int_equal(stw_write_range(d, 0, 1, p1), 0);
        assert_int_equal(stw_write_range(d, 1, 2, p2), 0);
        char *pi = stw_path(dir, "model.safetensors.index.json");
        /* the index names only a.safetensors for x.0, plus some tensor in b */
        stw_write_text(pi, "{\"weight_map\": {\"x.0\": \"a.safetensors\", \"other\": \"b.safetensors\"}}");
        hy_st_set *s = NULL;
        hy_err err = {0};
        assert_int_not_equal(hy_st_open_dir(&s, dir, &err), 0);
        assert_non_null(strstr(err.msg, "tensor \"x.0\" is present in two shards"));
        free(p1), free(p2), free(pi);
        stw_rmdir(dir);
    }
    /* mapped to the wrong shard */
    {
        char *dir = stw_tmpdir();
        char *p1 = stw_path(dir, "a.safetensors"), *p2 = stw_path(dir, "b.safetensors");
        assert_int_equal(stw_write_range(w, 0, 1, p1), 0);
        assert_int_equal(stw_write_range(w, 1, 2, p2), 0);
        char *pi = stw_path(dir, "model.safetensors.index.json");
        stw_write_text(pi, "{\"weight_map\": {\"x.0\": \"b.safetensors\", \"x.1\": \"a.safetensors\"}}");
        hy_st_set *s = NULL;
        hy_err err = {0};
        assert_int_not_equal(hy_st_open_dir(&s, dir, &err), 0);
        assert_non_null(strstr(err.msg, "is mapped to b.safetensors but is in a.safetensors"));
        free(p1), free(p2), free(pi);
        stw_rmdir(dir);
    }
    /* index that is not an object / has no weight_map */
    {
        char *dir = stw_tmpdir();
        char *pi = stw_path(dir, "model.safetensors.index.json");
        hy_st_set *s = NULL;
        hy_err err = {0};
        stw_write_text(pi, "[]");
        assert_int_not_equal(hy_st_open_dir(&s, dir, &err), 0);
        assert_non_null(strstr(err.msg, "expected a JSON object, found array"));
        stw_write_text(pi, "{\"metadata\": {}}");
        assert_int_not_equal(hy_st_open_dir(&s, dir, &err), 0);
        assert_non_null(strstr(err.msg, "weight_map: expected an object, found nothing"));
        stw_write_text(pi, "{\"weight_map\": {}}");
        assert_int_not_equal(hy_st_open_dir(&s, dir, &err), 0);
        assert_non_null(strstr(err.msg, "weight_map is empty"));
        free(pi);
        stw_rmdir(dir);
    }
    free(d);
    free(w);
}

/* 2,000 tensors: every one found through the hash, in name order. */
static void test_many_tensors(void **st) {
    (void)st;
    char *dir = stw_tmpdir();
    stw *w = stw_new();
    for (int i = 0; i < 2000; i++) {
        char n[64];
        snprintf(n, sizeof n, "model.layers.%d.w", i);
        STW_ADD(w, n, HY_DTYPE_U8, i % 3);
    }
    char *p = stw_path(dir, "model.safetensors");
    assert_int_equal(stw_write(w, p), 0);
    hy_st_set *s = NULL;
    hy_err err = {0};
    assert_int_equal(hy_st_open_file(&s, p, &err), 0);
    assert_int_equal(hy_st_count(s), 2000);
    for (int i = 0; i < 2000; i++) {
        const hy_st_tensor *t = hy_st_find(s, w->t[i].name);
        assert_non_null(t);
        assert_string_equal(t->name, w->t[i].name);
        assert_int_equal(t->shape[0], i % 3);
        assert_ptr_equal(hy_st_at(s, hy_st_index_of(s, t->name)), t);
    }
    for (int i = 1; i < 2000; i++) assert_true(strcmp(hy_st_at(s, i - 1)->name, hy_st_at(s, i)->name) < 0);
    hy_st_free(s);
    free(p);
    free(w);
    stw_rmdir(dir);
}

static void expect_header(const char *header, size_t data_len, int want_rc, const char *want) {
    size_t len;
    unsigned char *img = stw_image(header, data_len, &len);
    hy_st_header h;
    hy_err err = {0};
    int rc = hy_st_header_parse(&h, img, len, "f.safetensors", &err);
    if (rc != want_rc || (want && !strstr(err.msg, want)))
        fprintf(stderr, "header %.80s: rc %d \"%s\", wanted %d \"%s\"\n", header, rc, err.msg, want_rc, want ? want : "");
    assert_int_equal(rc, want_rc);
    if (want) {
        assert_non_null(strstr(err.msg, want));
        assert_null(strchr(err.msg, '\n'));
    } else {
        hy_st_header_release(&h);
    }
    free(img);
}

static void test_header_validation(void **st) {
    (void)st;
    const char *ok = "{\"__metadata__\": {\"format\": \"pt\"}, \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                     " \"b\": {\"dtype\": \"BF16\", \"shape\": [], \"data_offsets\": [8, 10]}}";
    expect_header(ok, 10, 0, NULL);
    expect_header("{}", 0, 0, NULL);
    expect_header(ok, 9, HY_E_RANGE, "tensor \"b\": data_offsets [8, 10] run past the end of the data (9 bytes)");
    expect_header("{\"a\": {\"dtype\": \"F4\", \"shape\": [2], \"data_offsets\": [0, 1]}}", 1, HY_E_UNSUPPORTED,
                  "tensor \"a\": dtype \"F4\" is unknown (known: F32");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", 8, HY_E_INVALID,
                  "tensor \"a\": shape[0] is negative (-2)");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8, HY_E_INVALID,
                  "data_offsets [0, 8] span 8 bytes but F32 x 3 elements needs 12");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8, HY_E_INVALID,
                  "end is before begin");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                  " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                  12, HY_E_INVALID, "tensors \"a\" [0, 8) and \"b\" [4, 12) overlap");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 4,
                  HY_E_UNSUPPORTED, "shape has 9 dimensions (at most 8)");
    expect_header("{\"a\": {\"dtype\": \"F64\", \"shape\": [4611686018427387904, 4], \"data_offsets\": [0, 8]}}", 8,
                  HY_E_RANGE, "element count overflows");
    expect_header("{\"a\": {\"dtype\": \"F64\", \"shape\": [1152921504606846976], \"data_offsets\": [0, 8]}}", 8,
                  HY_E_RANGE, "element count overflows");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", 8, HY_E_INVALID,
                  "data_offsets: expected an array [begin, end]");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, -8]}}", 8, HY_E_INVALID,
                  "two non-negative integers");
    expect_header("{\"a\": {\"dtype\": 3, \"shape\": [2], \"data_offsets\": [0, 8]}}", 8, HY_E_INVALID,
                  "dtype: expected a string, found integer");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": 2, \"data_offsets\": [0, 8]}}", 8, HY_E_INVALID,
                  "shape: expected an array, found integer");
    expect_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [2.5], \"data_offsets\": [0, 8]}}", 8, HY_E_INVALID,
                  "shape[0]: expected an integer, found number");
    expect_header("{\"a\": 5}", 0, HY_E_INVALID, "tensor \"a\": expected an object, found integer");
    expect_header("{\"__metadata__\": {\"k\": 1}}", 0, HY_E_INVALID, "__metadata__.k: expected a string, found integer");
    expect_header("{\"__metadata__\": []}", 0, HY_E_INVALID, "__metadata__: expected an object of strings");
    expect_header("[1]", 0, HY_E_INVALID, "header: expected a JSON object, found array");
    expect_header("{\"a\": {}, \"a\": {}}", 0, HY_E_INVALID, "f.safetensors: header: line 1, column");
    expect_header("{\"\xc3\x28\": {}}", 0, HY_E_INVALID, "header: line 1");
    expect_header("{\"a\": NaN}", 0, HY_E_INVALID, "header: line 1");
    expect_header("{\"\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [0, 0]}}", 0, HY_E_INVALID,
                  "empty name");

    /* length prefix */
    hy_st_header h;
    hy_err err = {0};
    unsigned char small[5] = {1, 2, 3, 4, 5};
    assert_int_equal(hy_st_header_parse(&h, small, 5, "f", &err), HY_E_INVALID);
    assert_non_null(strstr(err.msg, "file is 5 bytes, too short"));
    assert_int_equal(hy_st_header_parse(&h, small, 0, "f", &err), HY_E_INVALID);
    unsigned char big[16] = {0};
    big[0] = 1; /* n = 1 */
    assert_int_equal(hy_st_header_parse(&h, big, 16, "f", &err), HY_E_INVALID);
    assert_non_null(strstr(err.msg, "header length 1 is too small"));
    memset(big, 0, 8);
    big[7] = 0x80; /* n = 2^63 */
    assert_int_equal(hy_st_header_parse(&h, big, 16, "f", &err), HY_E_RANGE);
    assert_non_null(strstr(err.msg, "is more than the 100 MiB allowed"));
    memset(big, 0, 8);
    big[0] = 9; /* n = 9 > 16 - 8 */
    assert_int_equal(hy_st_header_parse(&h, big, 16, "f", &err), HY_E_RANGE);
    assert_non_null(strstr(err.msg, "header length 9 runs past the end of the file (16 bytes)"));
}

static void test_open_file_errors(void **st) {
    (void)st;
    char *dir = stw_tmpdir();
    char *p = stw_path(dir, "model.safetensors");
    hy_st_set *s = NULL;
    hy_err err = {0};
    stw_write_text(p, "");
    assert_int_equal(hy_st_open_dir(&s, dir, &err), HY_E_INVALID);
    assert_non_null(strstr(err.msg, "file is 0 bytes"));
    assert_non_null(strstr(err.msg, p));
    stw_write_bytes(p, "\x10\0\0\0\0\0\0\0{\"a\":", 13);
    assert_int_equal(hy_st_open_dir(&s, dir, &err), HY_E_RANGE);
    assert_non_null(strstr(err.msg, "runs past the end of the file"));
    assert_int_equal(hy_st_open_file(&s, "/nonexistent/x.safetensors", &err), HY_E_NOT_FOUND);
    free(p);
    stw_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_file),     cmocka_unit_test(test_no_weights),
        cmocka_unit_test(test_sharded),         cmocka_unit_test(test_index_errors),
        cmocka_unit_test(test_many_tensors),    cmocka_unit_test(test_header_validation),
        cmocka_unit_test(test_open_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
