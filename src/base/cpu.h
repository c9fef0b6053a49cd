/*
 * Runtime CPU feature detection (x86-64: cpuid + xgetbv) and the ISA tiers the CPU kernels
 * are built for. The default binary is compiled for baseline x86-64; SIMD code is compiled
 * per file with target pragmas and only ever called after these checks said the CPU and the
 * OS (register state enabled in XCR0) support it, so no build runs into SIGILL.
 *
 * Threading: hy_cpu_detect fills a caller-owned struct; no globals, no caching.
 */
#ifndef HY_BASE_CPU_H
#define HY_BASE_CPU_H

#include <stdbool.h>

typedef struct hy_cpu_features {
    char vendor[13];   /* "GenuineIntel", "AuthenticAMD", "" when not x86 */
    char brand[49];    /* processor brand string, trimmed; "" if unavailable */
    bool os_avx;       /* XCR0 has SSE+AVX state (YMM) */
    bool os_avx512;    /* XCR0 has opmask + ZMM state */
    bool avx, avx2, fma, f16c;
    bool avx512f, avx512bw, avx512dq, avx512vl;
    bool avx512_bf16, avx512_vnni;
    bool avx_vnni;     /* the VEX-encoded vpdpbusd on ymm (Alder Lake and later Intel cores) */
    bool amx_bf16;     /* AMX-TILE + AMX-BF16 with their register state in XCR0; on Linux a
                          process must still ask for the tile data (hy_cpu_amx_permit) */
    bool avx512_emu;   /* test build with HY_AVX512_EMU on an AVX2 CPU: the avx512 tier runs
                          emulated (kernels/cpu/avx512_emu.h); the avx512* bits above stay the
                          hardware's, since code outside that tier uses them for real */
    bool amx_emu;      /* test build with HY_AMX_EMU on a CPU with AVX-512 F/BW/DQ/VL: the AMX
                          kernels run with their tiles emulated (kernels/cpu/amx_emu.h); amx_bf16
                          stays the hardware's */
} hy_cpu_features;

/* Fills f (all false on non-x86 builds). Feature bits are reported only when the OS also
 * enables the matching register state, so "true" always means "usable". */
void hy_cpu_detect(hy_cpu_features *f);

/* Asks the OS for the AMX tile data state for this process (Linux: arch_prctl
 * ARCH_REQ_XCOMP_PERM; it is process-wide and idempotent, so every thread, existing or later,
 * may then use tiles). Returns whether AMX may be used: false without f->amx_bf16, on other
 * systems, or when the kernel refuses. */
bool hy_cpu_amx_permit(const hy_cpu_features *f);

/* Instruction-set tiers of the CPU kernels, lowest first. */
typedef enum hy_isa {
    HY_ISA_REF = 0, /* portable scalar C: the oracle */
    HY_ISA_AVX2,    /* AVX2 + FMA + F16C */
    HY_ISA_AVX512,  /* AVX-512 F/BW/DQ/VL + BF16 + VNNI (+ AVX2/FMA/F16C) */
    HY_ISA_COUNT
} hy_isa;

const char *hy_isa_name(hy_isa isa);          /* "ref" | "avx2" | "avx512" */
int hy_isa_parse(const char *s);              /* hy_isa, or -1 if unknown */
bool hy_isa_supported(const hy_cpu_features *f, hy_isa isa);
hy_isa hy_isa_best(const hy_cpu_features *f); /* highest supported tier */
/* One line listing the detected features, for logs and benchmarks. */
void hy_cpu_describe(const hy_cpu_features *f, char *buf, int cap);

#endif
