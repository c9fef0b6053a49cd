/*
 * CPU feature detection. cpuid says what the core implements; xgetbv(0) says which register
 * state the OS saves on context switch. AVX needs XCR0 bits 1-2 (SSE, YMM upper halves),
 * AVX-512 additionally bits 5-7 (opmask, ZMM0-15 upper halves, ZMM16-31). A feature is only
 * reported when both agree, so callers never need to know about XCR0.
 */
#include "base/cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t cpu_xgetbv0(void) {
    uint32_t lo, hi;
    /* raw opcode of xgetbv: no -mxsave needed, and only executed when OSXSAVE is set */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void cpu_trim(char *s) {
    size_t n = strlen(s), i = 0;
    while (i < n && s[i] == ' ') i++;
    memmove(s, s + i, n - i + 1);
    n = strlen(s);
    while (n > 0 && s[n - 1] == ' ') s[--n] = '\0';
}

void hy_cpu_detect(hy_cpu_features *f) {
    memset(f, 0, sizeof *f);
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    const unsigned max_leaf = a;
    memcpy(f->vendor, &b, 4);
    memcpy(f->vendor + 4, &d, 4);
    memcpy(f->vendor + 8, &c, 4);
    f->vendor[12] = '\0';

    unsigned ext_max = __get_cpuid_max(0x80000000u, NULL);
    if (ext_max >= 0x80000004u) {
        unsigned r[12];
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        memcpy(f->brand, r, 48);
        f->brand[48] = '\0';
        cpu_trim(f->brand);
    }

    if (max_leaf < 1) return;
    __get_cpuid(1, &a, &b, &c, &d);
    const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return;
    const uint64_t xcr0 = cpu_xgetbv0();
    f->os_avx = (xcr0 & 0x6) == 0x6;
    f->os_avx512 = f->os_avx && (xcr0 & 0xe0) == 0xe0;
    if (!f->os_avx) return;
    f->avx = true;
    f->fma = fma;
    f->f16c = f16c;
    if (max_leaf < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned max_sub7 = a;
    f->avx2 = (b >> 5) & 1;
#if defined(HY_AVX512_EMU)
    f->avx512_emu = f->avx2 && f->fma && f->f16c;
#endif
    /* leaf 7 subleaf 1 EAX: AVX-VNNI (bit 4), AVX512_BF16 (bit 5) */
    unsigned a71 = 0, b71, c71, d71;
    if (max_sub7 >= 1) __cpuid_count(7, 1, a71, b71, c71, d71);
    (void)b71, (void)c71, (void)d71;
    f->avx_vnni = (a71 >> 4) & 1;
    if (f->os_avx512) {
        f->avx512f = (b >> 16) & 1;
        f->avx512dq = (b >> 17) & 1;
        f->avx512bw = (b >> 30) & 1;
        f->avx512vl = (b >> 31) & 1;
        f->avx512_vnni = (c >> 11) & 1;
        f->avx512_bf16 = (a71 >> 5) & 1;
    }
    /* AMX: leaf 7 EDX bit 24 (tiles) and 22 (bf16); XCR0 bits 17-18 (tile config and data) */
    __cpuid_count(7, 0, a, b, c, d);
    f->amx_bf16 = f->os_avx512 && ((d >> 24) & 1) && ((d >> 22) & 1) && (xcr0 & 0x60000) == 0x60000;
#if defined(HY_AMX_EMU)
    f->amx_emu = f->avx512f && f->avx512bw && f->avx512dq && f->avx512vl;
#endif
}

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
bool hy_cpu_amx_permit(const hy_cpu_features *f) {
    if (f->amx_emu) return true; /* no tile state in use */
    if (!f->amx_bf16) return false;
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#else
bool hy_cpu_amx_permit(const hy_cpu_features *f) {
    (void)f;
    return false;
}
#endif
#else
void hy_cpu_detect(hy_cpu_features *f) { memset(f, 0, sizeof *f); }
bool hy_cpu_amx_permit(const hy_cpu_features *f) {
    (void)f;
    return false;
}
#endif

static const char *const k_isa_names[HY_ISA_COUNT] = {"ref", "avx2", "avx512"};

const char *hy_isa_name(hy_isa isa) { return (unsigned)isa < HY_ISA_COUNT ? k_isa_names[isa] : "?"; }

int hy_isa_parse(const char *s) {
    for (int i = 0; i < HY_ISA_COUNT; i++)
        if (s && !strcmp(s, k_isa_names[i])) return i;
    return -1;
}

bool hy_isa_supported(const hy_cpu_features *f, hy_isa isa) {
    switch (isa) {
    case HY_ISA_REF: return true;
    case HY_ISA_AVX2: return f->avx2 && f->fma && f->f16c;
    case HY_ISA_AVX512:
        return f->avx2 && f->fma && f->f16c &&
               (f->avx512_emu || (f->avx512f && f->avx512bw && f->avx512dq && f->avx512vl && f->avx512_vnni));
    default: return false;
    }
}

hy_isa hy_isa_best(const hy_cpu_features *f) {
    for (int i = HY_ISA_COUNT - 1; i > 0; i--)
        if (hy_isa_supported(f, (hy_isa)i)) return (hy_isa)i;
    return HY_ISA_REF;
}

void hy_cpu_describe(const hy_cpu_features *f, char *buf, int cap) {
    if (cap <= 0) return;
    snprintf(buf, (size_t)cap, "%s%s%s:%s%s%s%s%s%s%s%s%s%s%s%s%s%s", f->brand[0] ? f->brand : "unknown CPU",
             f->vendor[0] ? " / " : "", f->vendor, f->avx2 ? " avx2" : "", f->fma ? " fma" : "",
             f->f16c ? " f16c" : "", f->avx_vnni ? " avx_vnni" : "", f->avx512f ? " avx512f" : "",
             f->avx512bw ? " avx512bw" : "",
             f->avx512dq ? " avx512dq" : "", f->avx512vl ? " avx512vl" : "", f->avx512_bf16 ? " avx512_bf16" : "",
             f->avx512_vnni ? " avx512_vnni" : "", f->amx_bf16 ? " amx_bf16" : "", f->os_avx512 ? "" : (f->os_avx ? " (os: no zmm state)" : ""),
             f->avx512_emu ? " (avx512 tier emulated)" : "", f->amx_emu ? " (amx tiles emulated)" : "");
}
