/* base/: fp conversions, dtype table, arena. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/fp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static void test_bf16_round_trip(void **st) {
    (void)st;
    assert_int_equal(hy_f32_to_bf16(1.0f), 0x3f80);
    /* 1 + 2^-8 is exactly halfway between bf16 1.0 and 1+2^-7: ties to even -> 1.0 */
    assert_int_equal(hy_f32_to_bf16(1.00390625f), 0x3f80);
    /* 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: ties to even -> up */
    assert_int_equal(hy_f32_to_bf16(1.01171875f), 0x3f82);
    assert_true(isnan(hy_bf16_to_f32(hy_f32_to_bf16(NAN))));
    assert_true(hy_bf16_to_f32(hy_f32_to_bf16(INFINITY)) == INFINITY);
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = hy_bf16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        assert_int_equal(hy_f32_to_bf16(f), h);
    }
}

static void test_f16_and_fp8(void **st) {
    (void)st;
    assert_true(hy_f16_to_f32(0x3c00) == 1.0f);
    assert_true(hy_f16_to_f32(0xc000) == -2.0f);
    assert_true(hy_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(hy_f16_to_f32(0x7c00) == INFINITY);
    assert_true(hy_fp8_e4m3_to_f32(0x7e) == 448.0f);
    assert_true(hy_fp8_e4m3_to_f32(0x38) == 1.0f);
    assert_true(hy_fp8_e4m3_to_f32(0x01) == 0x1p-9f);
    assert_true(hy_fp8_e4m3_to_f32(0xb8) == -1.0f);
    assert_true(isnan(hy_fp8_e4m3_to_f32(0x7f)));
    assert_true(hy_fp8_e5m2_to_f32(0x3c) == 1.0f);
}

static void test_dtype_table(void **st) {
    (void)st;
    assert_int_equal(hy_dtype_parse("BF16"), HY_DTYPE_BF16);
    assert_int_equal(hy_dtype_parse("F8_E4M3"), HY_DTYPE_F8_E4M3);
    assert_int_equal(hy_dtype_parse("bf16"), -1);
    assert_int_equal(hy_dtype_size(HY_DTYPE_F32), 4);
    assert_string_equal(hy_dtype_name(HY_DTYPE_I64), "I64");
}

static void test_arena(void **st) {
    (void)st;
    hy_arena a;
    assert_int_equal(hy_arena_init(&a, 1024), 0);
    void *p = hy_arena_alloc(&a, 10);
    void *q = hy_arena_alloc(&a, 10);
    assert_non_null(p);
    assert_int_equal((uintptr_t)q % 64, 0);
    assert_null(hy_arena_alloc(&a, 2000));
    hy_arena_reset(&a);
    assert_ptr_equal(hy_arena_alloc(&a, 10), p);
    hy_arena_release(&a);
}

static void test_alloc_pages(void **st) {
    (void)st;
    const size_t sizes[] = {1, 4096, 5000, (size_t)3 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = hy_alloc_pages(sizes[i]);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % ((size_t)2 << 20), 0); /* huge pages can back it from byte 0 */
        assert_int_equal(p[0] | p[sizes[i] - 1], 0);            /* zeroed */
        memset(p, 0x5a, sizes[i]);
        hy_free_pages(p, sizes[i]);
    }
    assert_null(hy_alloc_pages(SIZE_MAX - 4096));
    hy_free_pages(NULL, 123);
    assert_true(hy_mem_available() > 0); /* Linux: /proc/meminfo */
}

static void test_err(void **st) {
    (void)st;
    hy_err e;
    hy_err_clear(&e);
    assert_int_equal(hy_err_set(&e, HY_E_INVALID, "field %s", "x"), HY_E_INVALID);
    hy_err_wrap(&e, "config.json");
    assert_string_equal(e.msg, "config.json: field x");
    assert_int_equal(hy_err_set(NULL, HY_E_IO, "ignored"), HY_E_IO);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_round_trip), cmocka_unit_test(test_f16_and_fp8),
        cmocka_unit_test(test_dtype_table),     cmocka_unit_test(test_arena), cmocka_unit_test(test_alloc_pages),
        cmocka_unit_test(test_err),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
