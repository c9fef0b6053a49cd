/*
 * The fast prefill's grouped-query attention (kernels/attn.h, hy_attn_ops_amx): the flash-style
 * loop of attn_simd.inc (key blocks of HY_ATTN_KB outside, tiles of query rows inside, online
 * softmax) with both products on AMX tiles. Intel CPUs with AMX-BF16 only (kernels/cpu/dispatch.c
 * offers it where the matmuls use AMX); the emulated avx512 test build has none, the emulated
 * AMX one (make test-amxemu, kernels/cpu/amx_tile_emu.h) runs it on any AVX-512 CPU.
 *
 * Why: the fp32 kernels ran prefill attention at ~85-150 GFLOP/s per core (under 2/3 of the fp32
 * FMA peak); at 32K tokens of the 0.8B shape that is over half of the prompt's time. TDPBF16PS
 * multiplies bf16 at an order of magnitude more, so the products are not what bounds this
 * kernel any more: the softmax's exps and the conversions are.
 * Measured on a 2-core AMX Xeon (bench_attn, one thread, head_dim 256, 64 tokens x 4 heads):
 * 430-680 GFLOP/s at 512-32K keys, 2.5-3.6x the fp32 avx512 kernel, ~15% of the tiles' peak
 * (300-340 when bench_attn's buffers were 16-byte aligned: most of the gain since is theirs).
 * Leaving one part out at a time (then): the score tiles ~1/3 of the time, P·V ~1/4, packing K
 * and V ~1/4 (the fp32 cache is read once per call; 128-token calls ran 1.1-1.15x), the
 * softmax ~1/9. The tile loads bound the products: a B tile (1 KiB) per TDPBF16PS, K and V
 * blocks (32 KiB each) not both in L1. Engine: 32K tokens of the 0.8B shape, --fast-prefill,
 * 65 s against 168 s with the fp32 attention of then (64 s now; the exact default 173 s).
 *
 * Layout per call (the scratch, hy_attn_amx_work_floats): the call's query rows rounded to bf16
 * once ([row][dp], dims padded to dp = a multiple of 32 with zeros); per key block, its keys as
 * B tiles (per 32 dims and 16 keys: row p holds dims 2p, 2p+1 of each key, an interleave of two
 * rows of the transposed block) and its values as B tiles (per 32 keys and 16 dims: row p holds
 * keys 2p, 2p+1 of each dim, an interleave), each converted once and used by every row tile of
 * the call;
 * fp32 accumulators [row][dp] that the P·V tiles load, add to and store (C tiles cannot hold
 * head_dim 256 for 16 rows: 16 tiles of 8).
 *
 * Numerics (the contract in attn.h): scores are TDPBF16PS sums of bf16(q)·bf16(k) over the
 * dims in steps of 32 (the order of matmul_amx.c), times scale in fp32; the probabilities
 * p = exp(s - m) with the vector exp, rounded to bf16 for P·V, and the row's sum l adds those
 * rounded values, so the weights applied to V sum to 1 up to fp32 rounding; P·V sums
 * bf16(p)·bf16(v) in fp32. Keys past a row's causal limit get p = 0 exactly and keys past the
 * block's end are zero rows, so a row's result depends on its own query only: not on its tile
 * mates, the call's row count, the thread count or how the prompt was split into calls.
 */
#include "kernels/attn.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

_Static_assert(HY_ATTN_KB == 64, "a key block is 4 key tiles of 16 and 2 P·V steps of 32");

static size_t rows16(int rows) { return ((size_t)rows + 15) / 16 * 16; }
static size_t dims32(int dh) { return ((size_t)dh + 31) / 32 * 32; }

size_t hy_attn_amx_work_floats(int rows, int dh) {
    const size_t rp = rows16(rows), dp = dims32(dh);
    return 2 * rp                  /* running max and sum per row */
           + rp * dp               /* fp32 accumulators */
           + rp * dp / 2           /* bf16 queries */
           + 16 * HY_ATTN_KB       /* one row tile's scores */
           + 16 * HY_ATTN_KB / 2   /* its probabilities, bf16 */
           + dp / 32 * 4 * 256     /* the block's keys: 4 B tiles (256 floats each) per 32 dims */
           + 2 * (dp / 16) * 256;  /* its values: a B tile per 32 keys and 16 dims */
}

#if defined(__x86_64__) && !defined(HY_AVX512_EMU)

#include "kernels/cpu/amx_begin.h"

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/vec_avx512.inc"
#include "kernels/cpu/vf_exp.inc"

/* Two rows of 16 floats as bf16 (nearest even) pairs: dword i = (a_i, b_i) */
static inline __m512i pair16(__m512 a, __m512 b) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
}

/* Elements i .. i + min(n, 16) of a K / V array (kernels/attn.h's HY_ATTN_KV_*: fp32, or bf16 /
 * fp8 widened exactly) as fp32, zeros past them: pair16 then gives a bf16 cache's values back
 * unchanged, and an fp8 one's (e4m3 values are bf16 values) */
static inline __m512 kv_load16(const void *p, size_t i, int n, int fmt) {
    if (fmt == HY_ATTN_KV_F32) return amx_load16((const float *)p + i, n);
    if (fmt == HY_ATTN_KV_FP8)
        return n >= 16 ? vf_load_e4m3((const uint8_t *)p + i) : n > 0 ? vf_load_e4m3n((const uint8_t *)p + i, n) : _mm512_setzero_ps();
    return n >= 16 ? vf_load_bf16((const uint16_t *)p + i) : n > 0 ? vf_load_bf16n((const uint16_t *)p + i, n) : _mm512_setzero_ps();
}

/* Keys [0, nb) of the block kt (transposed: dim d's keys at kt + d·HY_ATTN_KB) as B tiles
 * kb[s][n] (s: 32 dims, n: 16 keys, the first nkt of them): row p pairs dims 2p and 2p + 1 of
 * the tile's keys, two rows of the block; zeros past dh and past nb (whatever the block holds
 * there). */
static void pack_keys(const void *kt, int fmt, int nb, int nkt, int dh, int nds, uint16_t *kb) {
    for (int s = 0; s < nds; s++)
        for (int n = 0; n < nkt; n++)
            for (int p = 0; p < 16; p++) {
                const int d0 = 32 * s + 2 * p, nk = nb - 16 * n; /* keys of this tile */
                const __m512 a = kv_load16(kt, (size_t)d0 * HY_ATTN_KB + 16 * n, d0 < dh ? nk : 0, fmt);
                const __m512 b = kv_load16(kt, (size_t)(d0 + 1) * HY_ATTN_KB + 16 * n, d0 + 1 < dh ? nk : 0, fmt);
                _mm512_storeu_si512(kb + (((size_t)s * 4 + (size_t)n) * 16 + (size_t)p) * 32, pair16(a, b));
            }
}

/* Values [0, nb) of the block at v as B tiles vb[ks][dt] (ks: 32 keys, the first nks; dt: 16
 * dims of ndt), zeros past dh and past nb. */
static void pack_values(const void *v, int fmt, size_t ld, int nb, int nks, int dh, int ndt, uint16_t *vb) {
    for (int ks = 0; ks < nks; ks++)
        for (int p = 0; p < 16; p++) {
            const int j0 = 32 * ks + 2 * p, j1 = j0 + 1;
            const size_t v0 = (size_t)j0 * ld, v1 = (size_t)j1 * ld;
            for (int dt = 0; dt < ndt; dt++) {
                const int n = dh - 16 * dt;
                const __m512 a = kv_load16(v, v0 + 16 * (size_t)dt, j0 < nb ? n : 0, fmt),
                             b = kv_load16(v, v1 + 16 * (size_t)dt, j1 < nb ? n : 0, fmt);
                _mm512_storeu_si512(vb + (((size_t)ks * ndt + (size_t)dt) * 16 + (size_t)p) * 32, pair16(a, b));
            }
        }
}

/* Scores of 16 query rows (bf16, dp apart) against the block's first nkt key tiles into
 * S [16][HY_ATTN_KB], unscaled. */
static void tile_scores(const uint16_t *q, size_t dp, const uint16_t *kb, int nds, int nkt, float *S) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int s = 0; s < nds; s++) {
        const uint16_t *b = kb + (size_t)s * 4 * 512;
        _tile_loadd(4, q + 32 * s, dp * 2);
        _tile_loadd(5, b, 64);
        _tile_dpbf16ps(0, 4, 5);
        if (nkt > 1) {
            _tile_loadd(6, b + 512, 64);
            _tile_dpbf16ps(1, 4, 6);
        }
        if (nkt > 2) {
            _tile_loadd(7, b + 1024, 64);
            _tile_dpbf16ps(2, 4, 7);
        }
        if (nkt > 3) {
            _tile_loadd(5, b + 1536, 64);
            _tile_dpbf16ps(3, 4, 5);
        }
    }
    _tile_stored(0, S, HY_ATTN_KB * 4);
    if (nkt > 1) _tile_stored(1, S + 16, HY_ATTN_KB * 4);
    if (nkt > 2) _tile_stored(2, S + 32, HY_ATTN_KB * 4);
    if (nkt > 3) _tile_stored(3, S + 48, HY_ATTN_KB * 4);
}

/* Online-softmax update of one row: scores s (the first lim visible, 0 < lim <= 64) times
 * scale; probabilities to p (64 bf16, zeros where masked); returns the factor the row's
 * accumulators must be scaled by. */
static float row_softmax(const float *s, int lim, float scale, float *m, float *l, uint16_t *p) {
    const vf ninf = vf_set1(-INFINITY), sc = vf_set1(scale);
    vf x[4];
    for (int v = 0; v < 4; v++) {
        const vm mk = vm_first(lim - 16 * v > 0 ? lim - 16 * v : 0);
        x[v] = _mm512_mask_mul_ps(ninf, mk, _mm512_maskz_loadu_ps(mk, s + 16 * v), sc);
    }
    const float bm = vf_hmax(vf_max(vf_max(x[0], x[1]), vf_max(x[2], x[3])));
    float corr = 1.0f;
    if (bm > *m) { /* as the oracle: rescale only when the max grows (exp(-inf) = 0 at the start) */
        corr = expf(*m - bm);
        *m = bm;
    }
    const vf mv = vf_set1(*m);
    vf sum = vf_zero();
    for (int v = 0; v < 4; v += 2) {
        const __m512bh pb = _mm512_cvtne2ps_pbh(vf_exp(vf_sub(x[v + 1], mv)), vf_exp(vf_sub(x[v], mv)));
        _mm512_storeu_si512(p + 16 * v, (__m512i)pb);
        const __m512i w = (__m512i)pb; /* the rounded values back to fp32: bf16 << 16 */
        sum = vf_add(sum, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(w)), 16)));
        sum = vf_add(sum, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(w, 1)), 16)));
    }
    *l = *l * corr + vf_hsum(sum);
    return corr;
}

/* o[16][dp] += P[16][32·nks] · V over dims in tiles of 16, four C tiles at a time */
static void tile_pv(float *o, size_t dp, const uint16_t *P, const uint16_t *vb, int nks, int ndt) {
    _tile_loadd(4, P, HY_ATTN_KB * 2);
    if (nks > 1) _tile_loadd(5, P + 32, HY_ATTN_KB * 2);
    const size_t ol = dp * 4, vs = (size_t)ndt * 512;
    for (int dt = 0; dt < ndt; dt += 4) {
        const int nq = ndt - dt < 4 ? ndt - dt : 4; /* 2 or 4: ndt is even */
        float *od = o + 16 * dt;
        const uint16_t *b = vb + (size_t)dt * 512;
        _tile_loadd(0, od, ol);
        _tile_loadd(1, od + 16, ol);
        _tile_loadd(6, b, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b + 512, 64);
        _tile_dpbf16ps(1, 4, 7);
        if (nks > 1) {
            _tile_loadd(6, b + vs, 64);
            _tile_dpbf16ps(0, 5, 6);
            _tile_loadd(7, b + vs + 512, 64);
            _tile_dpbf16ps(1, 5, 7);
        }
        _tile_stored(0, od, ol);
        _tile_stored(1, od + 16, ol);
        if (nq > 2) {
            _tile_loadd(2, od + 32, ol);
            _tile_loadd(3, od + 48, ol);
            _tile_loadd(6, b + 1024, 64);
            _tile_dpbf16ps(2, 4, 6);
            _tile_loadd(7, b + 1536, 64);
            _tile_dpbf16ps(3, 4, 7);
            if (nks > 1) {
                _tile_loadd(6, b + vs + 1024, 64);
                _tile_dpbf16ps(2, 5, 6);
                _tile_loadd(7, b + vs + 1536, 64);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(2, od + 32, ol);
            _tile_stored(3, od + 48, ol);
        }
    }
}

static void amx_gqa(const hy_attn_args *a, float *work) {
    const int R = a->nt * a->ng, dh = a->dh;
    const size_t rp = rows16(R), dp = dims32(dh);
    const int nds = (int)(dp / 32), ndt = (int)(dp / 16);
    float *M = work, *L = M + rp, *O = L + rp;
    uint16_t *Q = (uint16_t *)(O + rp * dp);
    float *S = (float *)(Q + rp * dp);
    uint16_t *P = (uint16_t *)(S + 16 * HY_ATTN_KB);
    uint16_t *kb = P + 16 * HY_ATTN_KB, *vb = kb + (size_t)nds * 4 * 512;

    amx_config();
    memset(O, 0, rp * dp * sizeof(float));
    for (size_t r = 0; r < rp; r++) {
        M[r] = -INFINITY;
        L[r] = 0.0f;
        uint16_t *qd = Q + r * dp;
        const float *qs = (int)r < R ? a->q + (r / (size_t)a->ng) * a->ldq_t + (r % (size_t)a->ng) * a->ldq_h : NULL;
        for (int s = 0; s < nds; s++)
            _mm512_storeu_si512(qd + 32 * s, qs ? amx_bf16x32(qs + 32 * s, dh - 32 * s) : _mm512_setzero_si512());
    }
    const int kmax = a->n_past + a->nt;
    for (int j0 = 0; j0 < kmax; j0 += HY_ATTN_KB) {
        const int nb = kmax - j0 < HY_ATTN_KB ? kmax - j0 : HY_ATTN_KB;
        const size_t es = hy_attn_kv_es(a->kv_fmt);
        pack_keys((const char *)a->k + hy_attn_key_block_at(j0, dh) * es, a->kv_fmt, nb, (nb + 15) / 16, dh, nds, kb);
        pack_values((const char *)a->v + (size_t)j0 * a->ld * es, a->kv_fmt, a->ld, nb, (nb + 31) / 32, dh, ndt, vb);
        for (int r0 = 0; r0 < R; r0 += 16) {
            const int mr = R - r0 < 16 ? R - r0 : 16;
            /* rows are in token order, so the tile's last row sees the most keys */
            const int rmax = a->n_past + (r0 + mr - 1) / a->ng + 1;
            if (j0 >= rmax) continue;
            const int nbe = nb < rmax - j0 ? nb : rmax - j0;
            tile_scores(Q + (size_t)r0 * dp, dp, kb, nds, (nbe + 15) / 16, S);
            for (int u = 0; u < 16; u++) {
                const int r = r0 + u, lim = u < mr ? a->n_past + r / a->ng + 1 - j0 : 0;
                uint16_t *p = P + (size_t)u * HY_ATTN_KB;
                if (lim <= 0) {
                    memset(p, 0, HY_ATTN_KB * 2);
                    continue;
                }
                const float corr = row_softmax(S + (size_t)u * HY_ATTN_KB, lim < nbe ? lim : nbe, a->scale, &M[r], &L[r], p);
                if (corr != 1.0f) {
                    float *o = O + (size_t)r * dp;
                    const vf c = vf_set1(corr);
                    for (size_t d = 0; d < dp; d += 16) vf_store(o + d, vf_mul(c, vf_load(o + d)));
                }
            }
            tile_pv(O + (size_t)r0 * dp, dp, P, vb, (nbe + 31) / 32, ndt);
        }
    }
    for (int r = 0; r < R; r++) {
        float *out = a->out + (size_t)(r / a->ng) * a->ldo_t + (size_t)(r % a->ng) * a->ldo_h;
        const float *o = O + (size_t)r * dp;
        const vf inv = vf_set1(1.0f / L[r]);
        for (int d = 0; d < dh; d += 16) {
            const vm mk = vm_first(dh - d);
            vf_storem(out + d, mk, vf_mul(vf_loadm(o + d, mk), inv));
        }
    }
}

#include "kernels/cpu/amx_end.h"

static const hy_attn_ops k_attn_amx = {.name = "amx", .gqa = amx_gqa};
const hy_attn_ops *hy_attn_ops_amx(void) { return &k_attn_amx; }

#else
const hy_attn_ops *hy_attn_ops_amx(void) { return NULL; }
#endif
