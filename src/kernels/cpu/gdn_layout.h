/*
 * Internal to kernels/cpu/gdn_*.c: how a chunk's prepare record and per-thread work buffer are
 * carved up, shared by every ISA so the sizes in gdn.h hold for all of them. Each piece starts
 * on a 16-float (64-byte) boundary relative to the buffer start.
 */
#ifndef HY_KERNELS_CPU_GDN_LAYOUT_H
#define HY_KERNELS_CPU_GDN_LAYOUT_H

#include "kernels/gdn.h"

#include <stddef.h>

static inline size_t gdn_pad16(size_t n) { return (n + 15) & ~(size_t)15; }
/* Row stride of Kᵀ: padded off a multiple of 64 floats so that walking down a column does not
 * hit the same few L1 sets (C = 64 would give a 256-byte stride). */
static inline int gdn_ldkt(int C) { return (int)gdn_pad16((size_t)(C > 0 ? C : 1)) + 16; }

/* State-independent results of one chunk of one head (written by prepare, consumed by scan). */
typedef struct gdn_prep {
    int t0, L;  /* first token, tokens in this chunk (<= C) */
    float *eg;  /* [C]     exp(γ_r), γ_r = Σ_{u<=r} g_u */
    float *egl; /* [C]     exp(γ_{L-1} − γ_r) */
    float *qk;  /* [C][C]  (q_r·k_s) Λ[r][s] for s <= r, 0 above the diagonal */
    float *u;   /* [C][dv] U = (I+A)^{-1} Vβ; scan turns it into Δ = U − W·S in place */
    float *w;   /* [C][dk] W = (I+A)^{-1} (Kβ ⊙ exp(γ)) */
    float *kt;  /* [dk][ldkt] Kᵀ of the chunk (SIMD forms only) */
    int ldkt;
} gdn_prep;

/* Per-thread temporaries. */
typedef struct gdn_work {
    float *lam;  /* [C][C]  Λ[r][s] = exp(Σ_{s<u<=r} g_u), s <= r */
    float *akk;  /* [C][C]  A[r][s] = β_r (k_r·k_s) Λ[r][s], s < r */
    float *dacc; /* [C]     running log-decay sums */
    float *ds;   /* [C][dv] Δ rows scaled by egl (SIMD scan) */
    float *bsc;  /* [2C]    row scales of the forward substitution (SIMD prepare) */
} gdn_work;

static inline size_t gdn_prep_floats_(const hy_gdn_dims *d, int C) {
    const size_t c = (size_t)(C > 0 ? C : 1);
    return 2 * gdn_pad16(c) + gdn_pad16(c * c) + gdn_pad16(c * (size_t)d->dv) + gdn_pad16(c * (size_t)d->dk) +
           (size_t)d->dk * (size_t)gdn_ldkt(C);
}

static inline size_t gdn_work_floats_(const hy_gdn_dims *d, int C) {
    const size_t c = (size_t)(C > 0 ? C : 1);
    return 2 * gdn_pad16(c * c) + gdn_pad16(c) + gdn_pad16(c * (size_t)d->dv) + gdn_pad16(2 * c);
}

static inline void gdn_prep_bind(gdn_prep *p, const hy_gdn_dims *d, int T, int C, int c, float *buf) {
    const size_t n = (size_t)C;
    p->t0 = c * C;
    p->L = T - p->t0 < C ? T - p->t0 : C;
    p->eg = buf;                 buf += gdn_pad16(n);
    p->egl = buf;                buf += gdn_pad16(n);
    p->qk = buf;                 buf += gdn_pad16(n * n);
    p->u = buf;                  buf += gdn_pad16(n * (size_t)d->dv);
    p->w = buf;                  buf += gdn_pad16(n * (size_t)d->dk);
    p->kt = buf;
    p->ldkt = gdn_ldkt(C);
}

static inline void gdn_work_bind(gdn_work *w, const hy_gdn_dims *d, int C, float *buf) {
    const size_t n = (size_t)C;
    w->lam = buf;  buf += gdn_pad16(n * n);
    w->akk = buf;  buf += gdn_pad16(n * n);
    w->dacc = buf; buf += gdn_pad16(n);
    w->ds = buf;   buf += gdn_pad16(n * (size_t)d->dv);
    w->bsc = buf;
}

#endif
