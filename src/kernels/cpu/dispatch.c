/*
 * Tier selection and table resolution for the CPU kernels (see dispatch.h). The per-tier tables
 * are const statics in each kernel file; this file only chooses among them.
 */
#include "kernels/cpu/dispatch.h"

#include <stdlib.h>
#include <string.h>

const hy_gdn_ops *hy_gdn_ops_get(hy_isa isa) {
    switch (isa) {
    case HY_ISA_REF: return hy_gdn_ops_ref();
    case HY_ISA_AVX2: return hy_gdn_ops_avx2();
    case HY_ISA_AVX512: return hy_gdn_ops_avx512();
    default: return NULL;
    }
}

const hy_attn_ops *hy_attn_ops_get(hy_isa isa) {
    switch (isa) {
    case HY_ISA_REF: return hy_attn_ops_ref();
    case HY_ISA_AVX2: return hy_attn_ops_avx2();
    case HY_ISA_AVX512: return hy_attn_ops_avx512();
    default: return NULL;
    }
}

static void isa_missing(const hy_cpu_features *f, hy_isa isa, char *buf, size_t cap) {
    buf[0] = '\0';
    const struct { bool have; const char *name; } need[] = {
        {f->avx2, "avx2"}, {f->fma, "fma"}, {f->f16c, "f16c"},
        {f->avx512f || isa < HY_ISA_AVX512, "avx512f"}, {f->avx512bw || isa < HY_ISA_AVX512, "avx512bw"},
        {f->avx512dq || isa < HY_ISA_AVX512, "avx512dq"}, {f->avx512vl || isa < HY_ISA_AVX512, "avx512vl"},
        {f->avx512_vnni || isa < HY_ISA_AVX512, "avx512_vnni"},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (need[i].have) continue;
        if (buf[0]) strncat(buf, " ", cap - strlen(buf) - 1);
        strncat(buf, need[i].name, cap - strlen(buf) - 1);
    }
}

int hy_isa_select(const hy_cpu_features *f, const char *request, const char *env, hy_isa *out, hy_err *e) {
    const char *src = "request";
    const char *want = request;
    if (!want || !want[0] || !strcmp(want, "auto")) {
        want = env;
        src = "HYLA_ISA";
    }
    if (!want || !want[0] || !strcmp(want, "auto")) {
        *out = hy_isa_best(f);
        return 0;
    }
    const int isa = hy_isa_parse(want);
    if (isa < 0)
        return hy_err_set(e, HY_E_INVALID, "%s: unknown instruction set '%s' (expected ref, avx2, avx512 or auto)",
                          src, want);
    if (!hy_isa_supported(f, (hy_isa)isa)) {
        char miss[160];
        isa_missing(f, (hy_isa)isa, miss, sizeof miss);
        return hy_err_set(e, HY_E_UNSUPPORTED, "%s: instruction set '%s' is not supported by this CPU/OS "
                          "(missing: %s); best available is '%s'", src, want, miss[0] ? miss : "OS register state",
                          hy_isa_name(hy_isa_best(f)));
    }
    *out = (hy_isa)isa;
    return 0;
}

/* AVX-512 BF16 instructions run here (the hardware's, or the emulated avx512 tier's) */
static bool avx512_bf16(const hy_cpu_features *f) { return f->avx512_bf16 || f->avx512_emu; }

int hy_cpu_tune_select(const hy_cpu_features *f, hy_isa isa, const char *env, bool *intel, hy_err *e) {
    const bool bf16 = isa != HY_ISA_AVX512 || avx512_bf16(f); /* the zen instance can run */
    if (!env || !env[0] || !strcmp(env, "auto")) {
        *intel = !bf16 || !strcmp(f->vendor, "GenuineIntel");
        return 0;
    }
    if (strcmp(env, "intel") && strcmp(env, "zen"))
        return hy_err_set(e, HY_E_INVALID, "HYLA_TUNE: unknown value '%s' (expected intel, zen or auto)", env);
    *intel = !strcmp(env, "intel");
    if (!*intel && !bf16)
        return hy_err_set(e, HY_E_UNSUPPORTED, "HYLA_TUNE=zen: the zen instance needs avx512_bf16, which this CPU "
                          "lacks (expected intel or auto)");
    return 0;
}

int hy_cpu_amx_select(const hy_cpu_features *f, const char *env, bool intel, bool *amx, hy_err *e) {
    *amx = false;
    const bool off = env && !strcmp(env, "0"), on = env && !strcmp(env, "1");
    if (env && env[0] && !off && !on && strcmp(env, "auto"))
        return hy_err_set(e, HY_E_INVALID, "HYLA_AMX: unknown value '%s' (expected 0, 1 or auto)", env);
    if (off || !intel) return 0;
    if (!hy_matmul_avx512_amx() || !(f->amx_bf16 || f->amx_emu) || f->avx512_emu || !hy_cpu_amx_permit(f)) {
        if (on)
            return hy_err_set(e, HY_E_UNSUPPORTED, "HYLA_AMX=1: AMX is not usable here (%s)",
                              !hy_matmul_avx512_amx() ? "not compiled into this build"
                              : !(f->amx_bf16 || f->amx_emu) || f->avx512_emu ? "the CPU or OS lacks AMX-BF16"
                                                              : "the OS refused the tile state");
        return 0;
    }
    *amx = true;
    return 0;
}

int hy_cpu_kernels_init(hy_cpu_kernels *k, const char *request, hy_err *e) {
    memset(k, 0, sizeof *k);
    hy_cpu_detect(&k->cpu);
    hy_isa isa;
    int rc = hy_isa_select(&k->cpu, request, getenv("HYLA_ISA"), &isa, e);
    if (rc) return rc;
    k->gdn = hy_gdn_ops_get(isa);
    k->attn = hy_attn_ops_get(isa);
    k->ops = *hy_ops_ref();
    k->ops.name = hy_isa_name(isa);
    k->ops.matmul = hy_matmul_get(isa);
    k->tune = "";
    bool intel = false;
    if (isa == HY_ISA_AVX2 || isa == HY_ISA_AVX512) {
        rc = hy_cpu_tune_select(&k->cpu, isa, getenv("HYLA_TUNE"), &intel, e);
        if (rc) return rc;
        k->tune = intel ? "intel" : "zen";
    }
    if (isa == HY_ISA_AVX2 && intel) {
        const hy_matmul_fn vnni = k->cpu.avx_vnni ? hy_matmul_avx2_vnni() : NULL;
        k->ops.matmul = vnni ? vnni : hy_matmul_avx2_intel();
    }
    if (isa == HY_ISA_AVX512) {
        if (intel) k->ops.matmul = avx512_bf16(&k->cpu) ? hy_matmul_avx512_intel() : hy_matmul_avx512_nobf16();
        bool amx;
        rc = hy_cpu_amx_select(&k->cpu, getenv("HYLA_AMX"), intel, &amx, e);
        if (rc) return rc;
        if (amx) k->ops.matmul = hy_matmul_avx512_amx(), k->attn_bf16 = hy_attn_ops_amx();
        k->amx = amx;
    }
    if (!k->gdn || !k->attn || !k->ops.matmul)
        return hy_err_set(e, HY_E_UNSUPPORTED, "instruction set '%s' is not compiled into this build",
                          hy_isa_name(isa));
    k->isa = isa;
    return 0;
}
