/*
 * CPU kernel dispatch: picks the instruction-set tier once (at model/engine creation) and
 * resolves the function tables of that tier into a struct the caller owns. Nothing global:
 * two engines in one process may run different tiers (tests do exactly that).
 *
 * Selection: an explicit request ("ref" | "avx2" | "avx512"), else the environment variable
 * HYLA_ISA, else the best tier this CPU and OS support. Asking for a tier the machine cannot
 * run is an error (HY_E_UNSUPPORTED with a message naming the missing features), never a
 * SIGILL later.
 */
#ifndef HY_KERNELS_CPU_DISPATCH_H
#define HY_KERNELS_CPU_DISPATCH_H

#include "base/cpu.h"
#include "base/error.h"
#include "kernels/attn.h"
#include "kernels/gdn.h"
#include "kernels/ops.h"

typedef struct hy_cpu_kernels {
    hy_isa isa;             /* the selected tier */
    hy_cpu_features cpu;    /* what was detected */
    const hy_gdn_ops *gdn;  /* Gated DeltaNet kernels of that tier */
    const hy_attn_ops *attn; /* grouped-query attention over the KV cache (kernels/attn.h) */
    const hy_attn_ops *attn_bf16; /* its fast prefill variant (hy_attn_ops_amx) where amx, else NULL */
    hy_ops ops;             /* matmul kernels of that tier (kernels/ops.h); ops not yet
                               vectorised for a tier are the reference ones */
    const char *tune;       /* which instance of the tier's matmul kernels: "intel" or "zen"
                               (avx2, avx512: hy_cpu_tune_select), "" for ref; avx2's intel
                               one with AVX-VNNI where the CPU has it (hy_matmul_avx2_vnni) */
    bool amx;               /* the intel instance with AMX tiles (hy_matmul_avx512_amx) */
} hy_cpu_kernels;

/* request: tier name, or NULL / "" / "auto" to use $HYLA_ISA or else the best tier.
 * Returns 0, or HY_E_INVALID (unknown name) / HY_E_UNSUPPORTED (tier not runnable here). */
int hy_cpu_kernels_init(hy_cpu_kernels *k, const char *request, hy_err *e);

/* The selection rule alone, on given features (testable without the real CPU): request as
 * above; env is the value of HYLA_ISA (may be NULL). */
int hy_isa_select(const hy_cpu_features *f, const char *request, const char *env, hy_isa *out, hy_err *e);

/* The matmul instance of tier isa (avx2 or avx512; kernels/matmul.h): env (the value of
 * HYLA_TUNE) "intel" or "zen", else ("auto", empty or NULL) "intel" on a GenuineIntel CPU or,
 * for avx512, one without AVX512_BF16 (whose instance, hy_matmul_avx512_nobf16, is the Intel
 * one) and "zen" otherwise. Returns 0 and *intel, HY_E_INVALID for another value,
 * HY_E_UNSUPPORTED for avx512's "zen" without AVX512_BF16. */
int hy_cpu_tune_select(const hy_cpu_features *f, hy_isa isa, const char *env, bool *intel, hy_err *e);

/* Whether the avx512 tier's intel instance uses AMX (hy_matmul_avx512_amx): env (the value of
 * HYLA_AMX) "0" never, "1" always (HY_E_UNSUPPORTED where it cannot: no AMX-BF16, emulated
 * avx512 tier, not compiled, or the OS refused the tile state), "auto" / empty / NULL where it
 * can. Never for the zen instance. Asks the OS for the tile state (hy_cpu_amx_permit). */
int hy_cpu_amx_select(const hy_cpu_features *f, const char *env, bool intel, bool *amx, hy_err *e);

#endif
