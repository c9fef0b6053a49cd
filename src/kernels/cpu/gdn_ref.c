/*
 * Scalar fp32 reference of the Gated DeltaNet kernels declared in kernels/gdn.h: the oracle
 * for later SIMD/GPU variants and, until those exist, the production path.
 *
 * Threading: no globals; each call touches only heads [h0,h1) / channels [c0,c1) of its
 * outputs and state, plus the caller's per-thread scratch (chunked form).
 *
 * Shape of the chunked form (spec §6): per value head, per chunk of L <= C tokens,
 *   hy_gdn_chunk_prepare()  everything that does not depend on the state: pairwise decays Λ,
 *                           the strictly-lower A, the exact forward substitution giving U and
 *                           W, and the masked Q·Kᵀ⊙Λ. Chunks are mutually independent here.
 *   hy_gdn_chunk_scan()     the sequential part: Δ = U − W·S, output, state update.
 * Callers may prepare many (head, chunk) pairs in parallel and then scan per head; the record
 * layout (kernels/cpu/gdn_layout.h) is shared with the SIMD variants so the sizes agree.
 *
 * Decay numerics: instead of differences of a cumulative sum (γ_r − γ_s, which cancels badly
 * when one g is -1e4 and the others are tiny), the log-decay over (s, r] is accumulated
 * directly as a running sum of the non-positive g's, only for s <= r (the upper triangle is
 * never formed), then exponentiated. Every exponent is therefore <= 0: exp never overflows and
 * an underflow to 0 is the correct limit. The last (partial) chunk is run at its true length,
 * so no padding rows exist.
 */
#include "kernels/gdn.h"

#include "base/error.h"
#include "kernels/cpu/gdn_layout.h"

#include <math.h>
#include <string.h>

/* Columns of the state processed together by the recurrent kernel: the recurrence is
 * independent per value column j, so blocking over j needs only a small stack buffer. */
#define GDN_REC_JB 64

void hy_gdn_recurrent(const hy_gdn_dims *d, int T, int h0, int h1,
                      const float *q, const float *k, const float *v,
                      const float *g, const float *beta, float *state, float *out) {
    HY_ASSERT(d && d->Hk > 0 && d->Hv % d->Hk == 0 && d->dk > 0 && d->dv > 0);
    HY_ASSERT(0 <= h0 && h0 <= h1 && h1 <= d->Hv && T >= 0);
    const int Hk = d->Hk, Hv = d->Hv, dk = d->dk, dv = d->dv, rep = Hv / Hk;
    for (int h = h0; h < h1; h++) {
        const int kh = h / rep;
        float *S = state + (size_t)h * dk * dv;
        for (int t = 0; t < T; t++) {
            const float *qt = q + ((size_t)t * Hk + kh) * dk;
            const float *kt = k + ((size_t)t * Hk + kh) * dk;
            const float *vt = v + ((size_t)t * Hv + h) * dv;
            float *ot = out + ((size_t)t * Hv + h) * dv;
            const float alpha = expf(g[(size_t)t * Hv + h]);
            const float bt = beta[(size_t)t * Hv + h];
            for (int j0 = 0; j0 < dv; j0 += GDN_REC_JB) {
                const int nj = dv - j0 < GDN_REC_JB ? dv - j0 : GDN_REC_JB;
                float m[GDN_REC_JB], o[GDN_REC_JB];
                for (int j = 0; j < nj; j++) m[j] = 0.0f;
                /* decay and prediction m = Sᵀk in one pass */
                for (int i = 0; i < dk; i++) {
                    float *Si = S + (size_t)i * dv + j0;
                    const float ki = kt[i];
                    for (int j = 0; j < nj; j++) {
                        Si[j] *= alpha;
                        m[j] += Si[j] * ki;
                    }
                }
                for (int j = 0; j < nj; j++) {
                    m[j] = bt * (vt[j0 + j] - m[j]); /* now δ */
                    o[j] = 0.0f;
                }
                /* rank-1 write, then read with the updated state */
                for (int i = 0; i < dk; i++) {
                    float *Si = S + (size_t)i * dv + j0;
                    const float ki = kt[i], qi = qt[i];
                    for (int j = 0; j < nj; j++) {
                        Si[j] += ki * m[j];
                        o[j] += Si[j] * qi;
                    }
                }
                memcpy(ot + j0, o, (size_t)nj * sizeof(float));
            }
        }
    }
}

size_t hy_gdn_chunk_prep_floats(const hy_gdn_dims *d, int C) { return gdn_prep_floats_(d, C); }
size_t hy_gdn_chunk_work_floats(const hy_gdn_dims *d, int C) { return gdn_work_floats_(d, C); }
size_t hy_gdn_chunked_scratch_floats(const hy_gdn_dims *d, int C) {
    return gdn_prep_floats_(d, C) + gdn_work_floats_(d, C);
}

static float gdn_dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void gdn_check_chunk(const hy_gdn_dims *d, int T, int C, int h, int c) {
    HY_ASSERT(d && d->Hk > 0 && d->Hv % d->Hk == 0 && d->dk > 0 && d->dv > 0);
    HY_ASSERT(C >= 1 && 0 <= h && h < d->Hv && c >= 0 && (long)c * C < (long)T);
}

/* State-independent part of chunk c (tokens [t0, t0+L)) for value head h. */
void hy_gdn_chunk_prepare(const hy_gdn_dims *d, int T, int C, int h, int c, const float *q, const float *k,
                          const float *v, const float *g, const float *beta, float *prep_buf, float *work_buf) {
    gdn_check_chunk(d, T, C, h, c);
    const int Hk = d->Hk, Hv = d->Hv, dk = d->dk, dv = d->dv, kh = h / (Hv / Hk);
    gdn_prep ch;
    gdn_work wk;
    gdn_prep_bind(&ch, d, T, C, c, prep_buf);
    gdn_work_bind(&wk, d, C, work_buf);
    const int t0 = ch.t0, L = ch.L;
    float gam = 0.0f;
    for (int r = 0; r < L; r++) {
        const size_t tr = (size_t)(t0 + r);
        const float gr = fminf(g[tr * Hv + h], 0.0f);
        const float br = beta[tr * Hv + h];
        const float *kr = k + (tr * Hk + kh) * dk;
        const float *qr = q + (tr * Hk + kh) * dk;
        gam += gr;
        ch.eg[r] = expf(gam);
        /* dacc[s] = Σ_{s<u<=r} g_u for s < r; the diagonal is 0 (Λ[r][r] = 1) */
        for (int s = 0; s < r; s++) wk.dacc[s] += gr;
        wk.dacc[r] = 0.0f;
        float *lam = wk.lam + (size_t)r * C, *akk = wk.akk + (size_t)r * C;
        float *qk = ch.qk + (size_t)r * C;
        for (int s = 0; s <= r; s++) {
            const float *ks = k + ((size_t)(t0 + s) * Hk + kh) * dk;
            lam[s] = expf(wk.dacc[s]);
            qk[s] = gdn_dot(qr, ks, dk) * lam[s];
            akk[s] = s < r ? br * gdn_dot(kr, ks, dk) * lam[s] : 0.0f;
        }
        for (int s = r + 1; s < C; s++) qk[s] = 0.0f;
        /* forward substitution, row r of (I + A) [U | W] = [Vβ | Kβ⊙exp(γ)] */
        float *ur = ch.u + (size_t)r * dv, *wr = ch.w + (size_t)r * dk;
        const float *vr = v + (tr * Hv + h) * dv;
        const float wb = br * ch.eg[r];
        for (int j = 0; j < dv; j++) ur[j] = br * vr[j];
        for (int i = 0; i < dk; i++) wr[i] = wb * kr[i];
        for (int s = 0; s < r; s++) {
            const float a = akk[s];
            if (a == 0.0f) continue;
            const float *us = ch.u + (size_t)s * dv, *ws = ch.w + (size_t)s * dk;
            for (int j = 0; j < dv; j++) ur[j] -= a * us[j];
            for (int i = 0; i < dk; i++) wr[i] -= a * ws[i];
        }
    }
    for (int r = 0; r < L; r++) ch.egl[r] = expf(wk.dacc[r]);
}

/* Sequential part: consumes the state S of head h entering the chunk, writes the chunk's
 * outputs and leaves S as the state after the chunk. Δ overwrites U in the record. */
void hy_gdn_chunk_scan(const hy_gdn_dims *d, int T, int C, int h, int c, const float *q, const float *k,
                       float *prep_buf, float *state, float *out, float *work_buf) {
    gdn_check_chunk(d, T, C, h, c);
    (void)work_buf;
    const int Hk = d->Hk, Hv = d->Hv, dk = d->dk, dv = d->dv, kh = h / (Hv / Hk);
    gdn_prep ch;
    gdn_prep_bind(&ch, d, T, C, c, prep_buf);
    const int t0 = ch.t0, L = ch.L;
    float *S = state + (size_t)h * dk * dv;
    for (int r = 0; r < L; r++) {
        float *dr = ch.u + (size_t)r * dv; /* U row becomes Δ row */
        const float *wr = ch.w + (size_t)r * dk;
        for (int i = 0; i < dk; i++) {
            const float wi = wr[i];
            const float *Si = S + (size_t)i * dv;
            for (int j = 0; j < dv; j++) dr[j] -= wi * Si[j];
        }
    }
    for (int r = 0; r < L; r++) {
        const size_t tr = (size_t)(t0 + r);
        const float *qr = q + (tr * Hk + kh) * dk;
        float *orow = out + (tr * Hv + h) * dv;
        const float egr = ch.eg[r];
        for (int j = 0; j < dv; j++) orow[j] = 0.0f;
        if (egr != 0.0f) {
            for (int i = 0; i < dk; i++) {
                const float qi = qr[i] * egr;
                const float *Si = S + (size_t)i * dv;
                for (int j = 0; j < dv; j++) orow[j] += qi * Si[j];
            }
        }
        const float *qk = ch.qk + (size_t)r * C;
        for (int s = 0; s <= r; s++) {
            const float a = qk[s];
            const float *ds = ch.u + (size_t)s * dv;
            for (int j = 0; j < dv; j++) orow[j] += a * ds[j];
        }
    }
    const float egL = ch.eg[L - 1];
    for (int i = 0; i < dk; i++) {
        float *Si = S + (size_t)i * dv;
        for (int j = 0; j < dv; j++) Si[j] *= egL;
        for (int r = 0; r < L; r++) {
            const float cf = k[((size_t)(t0 + r) * Hk + kh) * dk + i] * ch.egl[r];
            if (cf == 0.0f) continue;
            const float *dr = ch.u + (size_t)r * dv;
            for (int j = 0; j < dv; j++) Si[j] += cf * dr[j];
        }
    }
}

void hy_gdn_chunked(const hy_gdn_dims *d, int T, int C, int h0, int h1,
                    const float *q, const float *k, const float *v,
                    const float *g, const float *beta, float *state, float *out, float *scratch) {
    HY_ASSERT(d && d->Hk > 0 && d->Hv % d->Hk == 0 && d->dk > 0 && d->dv > 0);
    HY_ASSERT(0 <= h0 && h0 <= h1 && h1 <= d->Hv && T >= 0 && C >= 1 && scratch);
    float *prep = scratch, *work = scratch + gdn_prep_floats_(d, C);
    const int nc = (T + C - 1) / C;
    for (int h = h0; h < h1; h++) {
        for (int c = 0; c < nc; c++) {
            hy_gdn_chunk_prepare(d, T, C, h, c, q, k, v, g, beta, prep, work);
            hy_gdn_chunk_scan(d, T, C, h, c, q, k, prep, state, out, work);
        }
    }
}

static float gdn_silu(float x) { return x / (1.0f + expf(-x)); }

void hy_gdn_conv_silu(int T, int C, int K, int c0, int c1, const float *x, const float *w,
                      float *state, float *y) {
    HY_ASSERT(T >= 0 && K >= 1 && 0 <= c0 && c0 <= c1 && c1 <= C);
    const int P = K - 1; /* rows of state */
    for (int t = 0; t < T; t++) {
        for (int c = c0; c < c1; c++) {
            float acc = 0.0f;
            for (int j = 0; j < K; j++) {
                const int p = t - P + j; /* absolute index among the new tokens */
                const float xv = p >= 0 ? x[(size_t)p * C + c] : state[(size_t)(P + p) * C + c];
                acc += w[(size_t)j * C + c] * xv;
            }
            y[(size_t)t * C + c] = gdn_silu(acc);
        }
    }
    /* New state row m holds input position T-P+m. Increasing m only ever reads old state rows
     * at index T+m > m (when T < P), i.e. rows not yet overwritten, so in place is safe. */
    for (int m = 0; m < P; m++) {
        const int p = T - P + m;
        for (int c = c0; c < c1; c++) {
            state[(size_t)m * C + c] = p >= 0 ? x[(size_t)p * C + c] : state[(size_t)(P + p) * C + c];
        }
    }
}

void hy_gdn_gates(int T, int Hv, const float *a, const float *b, const float *A_log,
                  const float *dt_bias, float *g, float *beta) {
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < Hv; h++) {
            const size_t i = (size_t)t * Hv + h;
            const float xa = a[i] + dt_bias[h];
            const float sp = xa > 20.0f ? xa : log1pf(expf(xa));
            g[i] = -expf(A_log[h]) * sp;
            beta[i] = 1.0f / (1.0f + expf(-b[i]));
        }
    }
}

void hy_l2norm_scale(float *x, int n, int dim, float scale) {
    for (int r = 0; r < n; r++) {
        float *xr = x + (size_t)r * dim;
        float ss = 0.0f;
        for (int i = 0; i < dim; i++) ss += xr[i] * xr[i];
        const float f = scale / sqrtf(ss + 1e-6f);
        for (int i = 0; i < dim; i++) xr[i] *= f;
    }
}

void hy_silu_mul(int n, float *g, const float *u) {
    for (int i = 0; i < n; i++) g[i] = gdn_silu(g[i]) * u[i];
}

static const hy_gdn_ops k_gdn_ref = {
    .name = "ref",
    .recurrent = hy_gdn_recurrent,
    .chunked = hy_gdn_chunked,
    .chunk_prepare = hy_gdn_chunk_prepare,
    .chunk_scan = hy_gdn_chunk_scan,
    .conv_silu = hy_gdn_conv_silu,
    .gates = hy_gdn_gates,
    .l2norm_scale = hy_l2norm_scale,
    .silu_mul = hy_silu_mul,
};

const hy_gdn_ops *hy_gdn_ops_ref(void) { return &k_gdn_ref; }
