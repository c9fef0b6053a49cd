/* base/cpu + kernels/cpu/dispatch: feature detection is self-consistent, ISA selection follows
 * request > HYLA_ISA > best, and an unavailable or unknown tier is a clear error. base/peak:
 * the op counts of the peak loops, and an on-the-spot measurement reports a figure exactly for
 * the instructions this CPU has (values, never timings). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/cpu.h"
#include "base/peak.h"
#include "base/threadpool.h"
#include "kernels/cpu/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_detect(void **st) {
    (void)st;
    hy_cpu_features f;
    hy_cpu_detect(&f);
    char desc[256];
    hy_cpu_describe(&f, desc, sizeof desc);
    printf("detected: %s; best tier %s\n", desc, hy_isa_name(hy_isa_best(&f)));
    /* "usable" implies the OS saves the registers */
    if (f.avx2 || f.fma) assert_true(f.os_avx);
    if (f.avx512f || f.avx512_bf16 || f.avx512_vnni) assert_true(f.os_avx512);
    assert_true(hy_isa_supported(&f, HY_ISA_REF));
    assert_true(hy_isa_supported(&f, hy_isa_best(&f)));
}

static void test_names(void **st) {
    (void)st;
    for (int i = 0; i < HY_ISA_COUNT; i++) assert_int_equal(hy_isa_parse(hy_isa_name((hy_isa)i)), i);
    assert_int_equal(hy_isa_parse("avx512f"), -1);
    assert_int_equal(hy_isa_parse(""), -1);
    assert_int_equal(hy_isa_parse(NULL), -1);
}

static void test_select_rules(void **st) {
    (void)st;
    hy_cpu_features none, avx2, all;
    memset(&none, 0, sizeof none);
    avx2 = none;
    avx2.os_avx = avx2.avx = avx2.avx2 = avx2.fma = avx2.f16c = true;
    all = avx2;
    all.os_avx512 = all.avx512f = all.avx512bw = all.avx512dq = all.avx512vl = true;
    all.avx512_bf16 = all.avx512_vnni = true;
    hy_isa isa;
    hy_err e = {0};
    assert_int_equal(hy_isa_select(&all, NULL, NULL, &isa, &e), 0);
    assert_int_equal(isa, HY_ISA_AVX512);
    assert_int_equal(hy_isa_select(&avx2, "auto", "", &isa, &e), 0);
    assert_int_equal(isa, HY_ISA_AVX2);
    assert_int_equal(hy_isa_select(&none, NULL, NULL, &isa, &e), 0);
    assert_int_equal(isa, HY_ISA_REF);
    /* env applies when there is no request; a request wins over env */
    assert_int_equal(hy_isa_select(&all, NULL, "avx2", &isa, &e), 0);
    assert_int_equal(isa, HY_ISA_AVX2);
    assert_int_equal(hy_isa_select(&all, "ref", "avx2", &isa, &e), 0);
    assert_int_equal(isa, HY_ISA_REF);
    /* AVX-512 without BF16 (Skylake-SP to Ice Lake) is the avx512 tier (its no-bf16 matmuls);
     * without VNNI it is not */
    hy_cpu_features nobf = all;
    nobf.avx512_bf16 = false;
    assert_int_equal(hy_isa_select(&nobf, NULL, NULL, &isa, &e), 0);
    assert_int_equal(isa, HY_ISA_AVX512);
    nobf.avx512_vnni = false;
    assert_int_equal(hy_isa_select(&nobf, NULL, NULL, &isa, &e), 0);
    assert_int_equal(isa, HY_ISA_AVX2);
    assert_int_equal(hy_isa_select(&nobf, "avx512", NULL, &isa, &e), HY_E_UNSUPPORTED);
    printf("error: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "avx512_vnni"));
    assert_int_equal(hy_isa_select(&none, NULL, "avx2", &isa, &e), HY_E_UNSUPPORTED);
    printf("error: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "HYLA_ISA"));
    assert_int_equal(hy_isa_select(&all, "sse9", NULL, &isa, &e), HY_E_INVALID);
    printf("error: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "sse9"));
}

/* The avx512 and avx2 matmul instances: HYLA_TUNE's value, else the vendor; anything else is
 * refused. */
static void test_tune_rules(void **st) {
    (void)st;
    hy_cpu_features intel = {0}, amd = {0};
    strcpy(intel.vendor, "GenuineIntel");
    strcpy(amd.vendor, "AuthenticAMD");
    intel.avx512_bf16 = amd.avx512_bf16 = true;
    hy_cpu_features old = intel, amd_old = amd; /* without AVX512_BF16 */
    old.avx512_bf16 = amd_old.avx512_bf16 = false;
    const struct {
        const hy_cpu_features *f;
        hy_isa isa;
        const char *env;
        int rc;
        bool intel;         /* the choice, where rc is 0 */
        const char *msg[2]; /* in the error message, where it is not */
    } cases[] = {
        {&intel, HY_ISA_AVX512, NULL, 0, true, {0}},
        {&amd, HY_ISA_AVX512, "auto", 0, false, {0}},
        {&intel, HY_ISA_AVX512, "zen", 0, false, {0}},
        {&amd, HY_ISA_AVX512, "intel", 0, true, {0}},
        {&amd, HY_ISA_AVX512, "skylake", HY_E_INVALID, false, {"HYLA_TUNE", "skylake"}},
        /* without AVX512_BF16 only the intel instance (hy_matmul_avx512_nobf16) */
        {&old, HY_ISA_AVX512, "auto", 0, true, {0}},
        {&old, HY_ISA_AVX512, "zen", HY_E_UNSUPPORTED, false, {"avx512_bf16"}},
        /* avx2: the vendor or HYLA_TUNE; AVX512_BF16 plays no part */
        {&old, HY_ISA_AVX2, NULL, 0, true, {0}},
        {&amd_old, HY_ISA_AVX2, "auto", 0, false, {0}},
        {&old, HY_ISA_AVX2, "zen", 0, false, {0}},
        {&amd_old, HY_ISA_AVX2, "intel", 0, true, {0}},
        {&amd_old, HY_ISA_AVX2, "haswell", HY_E_INVALID, false, {"haswell"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hy_err e = {0};
        bool in = !cases[i].intel;
        assert_int_equal(hy_cpu_tune_select(cases[i].f, cases[i].isa, cases[i].env, &in, &e), cases[i].rc);
        if (!cases[i].rc) {
            assert_true(in == cases[i].intel);
            continue;
        }
        printf("error: %s\n", e.msg);
        for (int m = 0; m < 2 && cases[i].msg[m]; m++) assert_non_null(strstr(e.msg, cases[i].msg[m]));
    }
}

/* HYLA_AMX: 0 never, 1 where usable (else an error naming why), auto where usable; never for
 * the zen instance; other values rejected. "Usable" is this machine's answer. */
static void test_amx_rules(void **st) {
    (void)st;
    hy_cpu_features none = {0}, real;
    hy_cpu_detect(&real);
    const bool here = real.amx_bf16 && !real.avx512_emu && hy_matmul_avx512_amx() && hy_cpu_amx_permit(&real);
    hy_err e = {0};
    bool amx = true;
    assert_int_equal(hy_cpu_amx_select(&none, NULL, true, &amx, &e), 0);
    assert_false(amx);
    assert_int_equal(hy_cpu_amx_select(&none, "1", true, &amx, &e), HY_E_UNSUPPORTED);
    printf("error: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "HYLA_AMX"));
    assert_int_equal(hy_cpu_amx_select(&real, "auto", true, &amx, &e), 0);
    assert_int_equal(amx, here);
    assert_int_equal(hy_cpu_amx_select(&real, "1", true, &amx, &e), here ? 0 : HY_E_UNSUPPORTED);
    assert_int_equal(hy_cpu_amx_select(&real, "0", true, &amx, &e), 0);
    assert_false(amx);
    assert_int_equal(hy_cpu_amx_select(&real, "auto", false, &amx, &e), 0);
    assert_false(amx);
    assert_int_equal(hy_cpu_amx_select(&real, "yes", true, &amx, &e), HY_E_INVALID);
    assert_non_null(strstr(e.msg, "yes"));
    printf("AMX here: %s\n", here ? "yes" : "no");
}

static void test_kernels_init(void **st) {
    (void)st;
    hy_cpu_kernels k;
    hy_err e = {0};
    assert_int_equal(hy_cpu_kernels_init(&k, "ref", &e), 0);
    assert_ptr_equal(k.gdn, hy_gdn_ops_ref());
    assert_string_equal(k.gdn->name, "ref");
    /* every tier the CPU supports resolves to its own table */
    for (int i = 0; i < HY_ISA_COUNT; i++) {
        hy_cpu_kernels kk;
        int rc = hy_cpu_kernels_init(&kk, hy_isa_name((hy_isa)i), &e);
        if (hy_isa_supported(&k.cpu, (hy_isa)i)) {
            assert_int_equal(rc, 0);
            assert_int_equal(kk.isa, i);
            assert_string_equal(kk.gdn->name, hy_isa_name((hy_isa)i));
        } else {
            assert_int_equal(rc, HY_E_UNSUPPORTED);
        }
    }
    /* HYLA_ISA is honoured when no request is given */
    setenv("HYLA_ISA", "ref", 1);
    assert_int_equal(hy_cpu_kernels_init(&k, NULL, &e), 0);
    assert_int_equal(k.isa, HY_ISA_REF);
    setenv("HYLA_ISA", "bogus", 1);
    assert_int_equal(hy_cpu_kernels_init(&k, NULL, &e), HY_E_INVALID);
    unsetenv("HYLA_ISA");
    assert_int_equal(hy_cpu_kernels_init(&k, NULL, &e), 0);
    assert_int_equal(k.isa, hy_isa_best(&k.cpu));
}

static void test_peak(void **st) {
    (void)st;
    /* twelve chains x lanes x ops per lane, per iteration */
    assert_true(hy_peak_loop_ops(HY_PEAK_FP32_YMM, 10) == 10.0 * 12 * 8 * 2);
    assert_true(hy_peak_loop_ops(HY_PEAK_FP32_ZMM, 10) == 10.0 * 12 * 16 * 2);
    assert_true(hy_peak_loop_ops(HY_PEAK_BF16_ZMM, 10) == 10.0 * 12 * 16 * 4);
    assert_true(hy_peak_loop_ops(HY_PEAK_INT8_ZMM, 10) == 10.0 * 12 * 16 * 8);
    hy_cpu_features f;
    hy_cpu_detect(&f);
    assert_int_equal(hy_peak_kernel_ok(&f, HY_PEAK_FP32_YMM), f.avx2 && f.fma);
    assert_int_equal(hy_peak_kernel_ok(&f, HY_PEAK_BF16_ZMM), f.avx512f && f.avx512_bf16);
    hy_threadpool *tp = NULL;
    hy_err e = {0};
    assert_int_equal(hy_threadpool_create(&tp, 2, &e), 0);
    hy_peak pk;
    hy_peak_measure(tp, 1 << 12, 2, true, &pk);
    const bool fp32 = hy_peak_kernel_ok(&f, HY_PEAK_FP32_YMM) || hy_peak_kernel_ok(&f, HY_PEAK_FP32_ZMM);
    assert_int_equal(pk.fp32_wall > 0 && pk.fp32_cpu > 0, fp32);
    assert_int_equal(pk.bf16_wall > 0 && pk.bf16_cpu > 0, hy_peak_kernel_ok(&f, HY_PEAK_BF16_ZMM));
    assert_int_equal(pk.amx_wall > 0 && pk.amx_cpu > 0, hy_peak_kernel_ok(&f, HY_PEAK_AMX_BF16));
    hy_threadpool_free(tp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_select_rules),
        cmocka_unit_test(test_tune_rules),
        cmocka_unit_test(test_amx_rules),
        cmocka_unit_test(test_kernels_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
