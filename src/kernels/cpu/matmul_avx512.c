/*
 * AVX-512 instance of the matmul kernels (template: matmul_simd.inc). Compiled for the avx512
 * tier only, inside the target region of kernels/cpu/avx512_begin.h; hy_matmul_avx512() must
 * only be called after kernels/cpu/dispatch.c checked the CPU. 16 fp32 lanes, 32 registers: float tiles of 4 rows x
 * 6 tokens (24 accumulators) with fp32 activations, the bf16-activation GEMM of
 * matmul_gemm.inc (vdpbf16ps), int8 through vpdpbusd with the
 * weights unsigned (zero point 128 for Q8, 8 for Q4) in tiles of 64 rows x 2 tokens (measured
 * faster on Zen 4 than 32 x 4, 32 x 3, 16 x 6 or 64 x 3; on Intel 32 x 4 is: below).
 *
 * Two instances: this file (tuned on Zen 4) and matmul_avx512_intel.c, which defines
 * MM_AVX512_INTEL and includes this file, for Intel cores (dispatch.c picks it by the CPU's
 * vendor, or HYLA_TUNE). On a given matrix both compute the same sums in the same order, except
 * FP8 under the fast decode (exact on Intel: MM_FP8_GEMV_DP); they differ in software prefetch,
 * in tile shapes, and in the layouts they ask the loader for (the Intel one row groups for BF16
 * and FP8: below). On Zen 4 the hardware prefetchers fed one-token
 * bf16 rows of up to ~4096 columns and Q8 / Q4 records best alone (prefetching every line was
 * 5-12% slower). An Intel core (Xeon, AVX-512 BF16, 2 vCPUs, 15 GB/s per core from DRAM) keeps
 * too few lines in flight while it computes: prefetching every line 32 KiB ahead (into L2) read
 * 1.18-1.20x the bytes per second of bf16 rows of 1024 columns (the 0.8B lm_head), 1.13-1.22x
 * of bf16 panels, 1.09-1.11x of Q8 and 1.16-1.20x of Q4 (both threads from DRAM, the
 * instances alternated in one process). One-token Q8 / Q4 tiles have since become several row
 * vectors on Intel, each a prefetched stream (MM_Q_T1_STREAM_PF below).
 */
#include "kernels/matmul.h"

#if defined(__x86_64__)

#include "kernels/cpu/avx512_begin.h"
#include <stdbool.h>
#include <string.h>

typedef __m512 vf;
typedef __mmask16 vm;
typedef __m512i vi;
#define VL 16
#define MM_VREGS 32 /* vector registers */
#define RV 16
#define MM_MR 4
#define MM_NT 6
#define MM_MR_V 4
/* one-token bf16 decode: 1 row per GEMV tile. Zen 4, both threads streaming 0.8B / 27B shapes:
 * ~0.8-0.93 of the read bandwidth against ~0.56-0.76 with 4 rows and ~0.7-0.83 with 2 (same
 * runs, alternated); FP8 stays at 4 rows (bound by its conversion; 1 row was 20% slower) */
#define MM_MR_V_BF16_T1 1
#ifdef MM_AVX512_INTEL
#define MM_BF16_T1_PF_COLS 0 /* every width */
#define MM_BF16_PANEL_PF 1   /* gemv_bf16_panels prefetches every line */
#else
#define MM_BF16_T1_PF_COLS 4096
#endif
/* FP8 (row-major codes) under the fast decode: vdpbf16ps (gemv_fp8dp) on Zen 4, the exact GEMV on
 * Intel cores, where vdpbf16ps runs at half the FMA rate: one thread, 65536 x 5120 from DRAM,
 * gemv_fp8dp against the exact GEMV T = 1 0.85x, 4 0.66x, 8 0.84x, 16 0.83x. (The AMX instance
 * takes FP8G, which the Intel instance asks the loader for, through its tiles; plain FP8 stays
 * where a checkpoint is read in place from the mmap.) */
#ifdef MM_AVX512_INTEL
#define MM_FP8_GEMV_DP 0
#else
#define MM_FP8_GEMV_DP 1
#endif
/* One-token FP8 rows of every length take gemv_t1_fp8q_long on Intel cores (each row of a
 * 4-row tile its own prefetched stream; Zen 4 keeps it for rows past 8192 columns, where it
 * measured it). FP8 is row-major here where a checkpoint is read in place (--mmap, or too big
 * to copy). Intel Xeon, one thread from DRAM, bench_matmul --decode, against gemv_tile_fp8q
 * alternated twice: 0.8B shapes (1024 / 3584 columns) 10.5-11.7 -> 13.6-15.2 GB/s, the 27B
 * gate / up (5120) 11.7-11.9 -> 15.1-15.2; engine, tg read in place, alternated twice: 0.8B
 * fp8 73.9-74.6% -> 78.6% of the bandwidth, 27B slice:4 83.6-84.9% -> 90.3-91.0%.
 * (MR = 2 or 8, prefetching 8-64 KiB ahead, or into L1: within +-5%.) */
#ifdef MM_AVX512_INTEL
#define MM_FP8Q_LONG 0
#endif
/* one-token calls on bf16 panel matrices: gemv_bf16_panels (matmul_simd.inc) */
#define MM_BF16_T1_PANEL_WALK 1
#define MM_NT_V 4
/* BF16 row groups (HY_WFMT_BF16G): on Zen 4 computed (tests), not asked of the loader. On Intel
 * the loader copies bf16 matrices into them: one-token tiles of 4 groups, each prefetched 2 KiB
 * ahead, 1-32 tokens the tiles of grp_run, more (or bf16 activations from 8 on) the GEMM of
 * converted panels (matmul_grp.inc). Intel Xeon, both threads, against the row-major / panel
 * bf16 of this instance alternated in one process: T = 1 from DRAM 0.99-1.18x (the 0.8B lm_head
 * 0.99x; one group per tile without the prefetch 0.86-0.95x), T = 8 1.26-1.61x, T = 16 / 32
 * 1.35-1.39x (the GEMM at 16-32: 0.70-0.92x these tiles), T = 512 1.39-1.47x (~280 GFLOP/s
 * on 5120 x 5120), bf16 activations 1.34x (its vdpbf16ps runs at half the fp32 FMA rate on
 * this core). */
#ifdef MM_AVX512_INTEL
#define MM_BF16_GROUPS 1
#define MM_G_T1_NG 4
#define MM_G_PF1 2048
#else
#define MM_BF16_GROUPS 0
#define MM_G_T1_NG 1 /* one token: one group per tile, as 1-3 tokens (not measured with more) */
#endif
#define MM_G_NG 2
#define MM_G_NG1 1
#define MM_G_NT 8
/* FP8G GEMV tiles of several tokens (t and u of each vector stay in registers): Zen 4 one group
 * x 4 tokens. On Intel 2 groups x 8 tokens (16 chains; 1 x 4 was bound by its 4 chains'
 * latency and by converting each quad for only 4 tokens): both threads from DRAM, alternated in
 * one process, 0.8B and 27B shapes, T = 2-6 1.10-1.38x, 8 1.20-1.35x, 12-15 1.22-1.48x; 2 x 8
 * against 2 x 4 1.0-1.18x. These read 1.19-1.48x the converted-panel GEMM at T = 16-32, which
 * takes over only past HY_MATMUL_GEMV_MAX_T there. */
#ifdef MM_AVX512_INTEL
#define MM_G8_NT 8
#define MM_G8_NGT 2
#else
#define MM_G8_NT 4
#endif
#define MM_G8_NG1 4 /* FP8G, one token: groups per tile */
/* FP8 row groups (HY_WFMT_FP8G) on Intel: the loader copies FP8 matrices into them, read by
 * one-token tiles of 4 groups that prefetch 2 KiB ahead of each group, tiles of 2 groups x 8
 * tokens (above), and past HY_MATMUL_GEMV_MAX_T tokens by the GEMM of converted panels
 * (matmul_grp.inc); the figures below for T > 1 are those of the 1 x 4 tiles and, at 16-32, of
 * the GEMM, which ran from 16 tokens on then. Intel Xeon, 2 threads from DRAM, alternated in
 * one process against the row-major FP8 of this instance (whose 4-row tile with its 32 KiB
 * prefetch read at most 0.85 of the bandwidth even with the conversion taken out): T = 1
 * 1.30-1.58x with 2 groups (0.8B and 27B shapes, 20-29 GB/s of the ~29 that the threads read;
 * 4 groups 1.03-1.13x more; 1 or 4 KiB ahead the same), T = 4 1.11-1.27x, T = 8 1.10-1.29x,
 * T = 16 1.21-1.28x, T = 32 1.24-1.30x (the GEMM: the tiles were 0.92-0.97x), T = 64 1.36x.
 * Engine, 2 threads, alternated with the previous build: tg64 0.78-0.79 -> 0.90-0.93 of the
 * bandwidth (0.8B), 0.87-0.88 -> 1.02-1.03 (27B slice:4); pp512 1.28x (0.8B), 1.38x (27B).
 * Where the prefetch passes the end of a group it goes into the next tile's (grp_pf1): 0.8B
 * fp8 tg64 0.918-0.929 -> 0.959-0.976 of the bandwidth, alternated twice.
 * On Zen 4 the row-major FP8 stays (not measured there). */
#ifdef MM_AVX512_INTEL
#define MM_FP8_GROUPS 1
#define MM_FP8Q_E0 1 /* row-major FP8 (read in place) without denormal FMAs too (matmul_simd.inc) */
#define MM_G8_PF 2048
#else
#define MM_FP8_GROUPS 0
#define MM_G8_PF 0 /* FP8G, one token: no software prefetch (not measured on Zen 4) */
#endif
#ifndef MM_AVX512_INTEL
#define MM_G8_GEMM_T 16 /* FP8G: the GEMM from this many tokens on (GEMV below) */
#endif
#define MM_G_MC 128
#define MM_G_NB 32
/* One-token Q8 / Q4: on Zen 4 one row vector per tile, its records prefetched one line each
 * (matmul_simd.inc). An Intel core read them at 0.75-0.85 of the bandwidth as one stream with
 * every line prefetched 32 KiB ahead into L2. Several row vectors per tile, each a stream of its
 * own prefetched 4 KiB ahead into L1, read more (both threads from DRAM, alternated in one
 * process): Q8 with four 1.02-1.13x on the 0.8B shapes and 1.06-1.08x on the 27B ones; Q4 with
 * four 0.96-1.14x and 1.10x, with two 1.05-1.11x on the 0.8B shapes (two against four:
 * 0.93-1.07x, 27B 0.98-1.02x), as the engine's 0.8B q4 decode, which read 0.98x with four and
 * 1.00-1.01x with two (q4 is the heavier of the two to compute: its tiles read 64 GB/s from L2
 * against Q8's 75-100). 2 or 8 KiB ahead, or hint T1, were no better. */
#ifdef MM_AVX512_INTEL
#define MM_Q8_NV1 4
#define MM_Q4_NV1 2
#define MM_Q_T1_STREAM_PF 4096
#else
#define MM_Q8_NV1 1
#define MM_Q4_NV1 1
#endif
#define MM_Q8_T1_PF 1
#define MM_Q4_T1_PF 1
/* Q8 / Q4, several tokens: the header's 4 row vectors x 2 tokens on Zen 4. On Intel 2 x 4 (both
 * threads from DRAM, alternated in one process, 0.8B and 27B shapes): T = 2-3 1.03-1.14x, 4
 * 1.05-1.09x, 8 1.05-1.16x, 16 1.05-1.14x, prefill (T = 512, 580-660 GOP/s) 1.06-1.08x; 4 x 4
 * read less at 2-4 tokens, 3 x 4 the same, 2 x 6 and 2 x 8 less in prefill. */
#ifdef MM_AVX512_INTEL
#define MM_Q_NV2 2
#define MM_Q_NT 4
#else
#define MM_Q_NV2 4
#define MM_Q_NT 2
#endif
/* The no-BF16 instance (matmul_avx512_nobf16.c, AVX-512 CPUs before Cooper Lake / Zen 4):
 * bf16 activations are rounded in integer code and multiplied with fp32 FMAs, as on avx2 */
#ifdef MM_AVX512_NOBF16
#define MM_HAVE_DPBF16 0
#else
#define MM_HAVE_DPBF16 1
#endif
#define Q8_ZP 128
#define Q4_ZP 8

static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_set1(float x) { return _mm512_set1_ps(x); }
static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vm vm_first(int n) { return (vm)(n >= 16 ? 0xffffu : ((1u << n) - 1u)); }
static inline vm vm_range(int a, int b) { return (vm)(((1u << b) - 1u) & ~((1u << a) - 1u)); }
static inline vf vf_loadm(const float *p, vm m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void vf_storem(float *p, vm m, vf v) { _mm512_mask_storeu_ps(p, m, v); }
static inline vf vf_fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
/* fixed tree: halves, quarters, then the last four lanes as SSE */
static inline float vf_hsum(vf v) {
    const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

static inline vf vf_from_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
/* bf16 -> fp32 in one shuffle: word j goes to the high half of lane j, the low halves are zeroed
 * by the mask (Zen 4: one vpermw instead of vpmovzxwd + vpslld, measured 20% more GEMV
 * throughput from L2). */
static inline vf vf_load_bf16(const uint16_t *p) {
    const __m512i idx = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5, 0, 4, 0,
                                         3, 0, 2, 0, 1, 0, 0, 0);
    return _mm512_castsi512_ps(
        _mm512_maskz_permutexvar_epi16(0xaaaaaaaau, idx, _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p))));
}
static inline vf vf_load_bf16m(const uint16_t *p, int n) { return vf_from_bf16(_mm256_maskz_loadu_epi16(vm_first(n), p)); }
/* 2·VL bf16 as one integer vector (n < 2·VL: the first n, zeros after), and its even / odd
 * elements as fp32: one AND or shift each, no shuffle (the pair GEMV order, matmul_simd.inc) */
static inline vi vi_load_u16m(const uint16_t *p, int n) {
    return _mm512_maskz_loadu_epi16(n >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << n) - 1), p);
}
/* (a | b) de-interleaved: the even elements of the 2·VL, then the odd ones */
static inline void vf_deint(vf a, vf b, vf *even, vf *odd) {
    const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i io = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    *even = _mm512_permutex2var_ps(a, ie, b);
    *odd = _mm512_permutex2var_ps(a, io, b);
}
static inline vf vf_bf16_even(vi v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
static inline vf vf_bf16_odd(vi v) { return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u))); }
static inline vf vf_load_f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline vf vf_load_f16m(const uint16_t *p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(vm_first(n), p)); }
/* e4m3 byte -> fp16 bits of the value times 2^-8: sign-extend, shift the exponent+mantissa
 * into place, clear the bit the sign extension left in the fp16 exponent. Exact for every
 * finite code (subnormals become fp16 subnormals); the NaN codes read as ±480·2^-8. */
static inline vf vf_from_fp8(__m128i b) {
    const __m256i w = _mm256_slli_epi16(_mm256_cvtepi8_epi16(b), 7);
    return _mm512_cvtph_ps(_mm256_and_si256(w, _mm256_set1_epi16((short)0xbf80)));
}
static inline vf vf_load_fp8(const uint8_t *p) { return vf_from_fp8(_mm_loadu_si128((const __m128i *)p)); }
static inline vf vf_load_fp8m(const uint8_t *p, int n) { return vf_from_fp8(_mm_maskz_loadu_epi8(vm_first(n), p)); }
#include "kernels/cpu/fp8x_avx512.h" /* vf_fp8x_quad, vi_fp8x_tu, vf_fp8x_col */
/* the first n < 4·VL bytes, zeros after */
static inline vi vi_load_u8m(const uint8_t *p, int n) { return _mm512_maskz_loadu_epi8(((__mmask64)1 << n) - 1, p); }
/* v[0..3] (4·VL consecutive floats) into the quad order in place: v[j] lane l = element 4l+j */
static inline void vf_quad4(vf v[4]) {
    const __m512i i0 = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 28, 24, 20, 16, 12, 8, 4, 0);
    vf o[4];
    for (int j = 0; j < 4; j++) {
        const __m512i ij = _mm512_add_epi32(i0, _mm512_set1_epi32(j));
        const vf lo = _mm512_permutex2var_ps(v[0], ij, v[1]), hi = _mm512_permutex2var_ps(v[2], ij, v[3]);
        o[j] = _mm512_insertf32x8(lo, _mm512_castps512_ps256(hi), 1);
    }
    for (int j = 0; j < 4; j++) v[j] = o[j];
}
#if MM_HAVE_DPBF16 || defined(HY_AVX512_EMU)
static inline vf vf_round_bf16(vf v) { return vf_from_bf16((__m256i)_mm512_cvtneps_pbh(v)); }
#else
/* vcvtneps2bf16's rounding in integer code, kept as fp32. (The emulated test build, whose
 * header has vcvtneps2bf16 and not these integer ops, takes the line above: the same values.) */
#include "kernels/cpu/bf16r_avx512.h"
static inline vf vf_round_bf16(vf v) { return _mm512_castsi512_ps(bf16r_bits(v)); }
#endif

static inline vi vi_load(const void *p) { return _mm512_loadu_si512(p); }
static inline vi vi_set1(int32_t v) { return _mm512_set1_epi32(v); }
static inline vi vi_bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
static inline vi vi_lo4(vi w) { return _mm512_and_si512(w, _mm512_set1_epi8(0x0f)); }
static inline vi vi_hi4(vi w) { return _mm512_and_si512(_mm512_srli_epi16(w, 4), _mm512_set1_epi8(0x0f)); }
static inline vi vi_dot_q8(vi acc, vi w, vi x) { return _mm512_dpbusd_epi32(acc, w, x); }
static inline vi vi_dot_q4(vi acc, vi w, vi x) { return _mm512_dpbusd_epi32(acc, w, x); }
static inline vf vi_to_vf(vi v) { return _mm512_cvtepi32_ps(v); }
static inline vf vf_load_h16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
/* for the activation quantizer */
static inline vf vf_abs(vf a) { return _mm512_abs_ps(a); }
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline float vf_hmax(vf a) { return _mm512_reduce_max_ps(a); }
static inline bool vf_any_nan(vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) != 0; }
static inline vi vi_cvt_rne(vf a) { return _mm512_cvtps_epi32(a); }
static inline vi vi_clamp127(vi a) {
    return _mm512_max_epi32(_mm512_min_epi32(a, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
}
static inline vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
static inline int32_t vi_hsum(vi a) { return _mm512_reduce_add_epi32(a); }
static inline void vi_store_i8(int8_t *p, vi a) { _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(a)); }

#include "kernels/cpu/matmul_simd.inc"

/* The int8 path's activation quantizer of the Intel instances, for the AMX one (matmul.h) */
#if defined(MM_AVX512_NOBF16)
void hy_quant_act_row_avx512_nobf16(const float *x, int cols, int zp, int8_t *xq, float *sx, int32_t *corr) {
    quant_act_row(x, cols, zp, xq, sx, corr);
}
#elif defined(MM_AVX512_INTEL)
void hy_quant_act_row_avx512_intel(const float *x, int cols, int zp, int8_t *xq, float *sx, int32_t *corr) {
    quant_act_row(x, cols, zp, xq, sx, corr);
}
#endif

#include "kernels/cpu/avx512_end.h"

#if defined(MM_AVX512_NOBF16)
hy_matmul_fn hy_matmul_avx512_nobf16(void) { return mm_simd; }
#elif defined(MM_AVX512_INTEL)
hy_matmul_fn hy_matmul_avx512_intel(void) { return mm_simd; }
bool hy_matmul_avx512_intel_bf16_groups(void) { return MM_BF16_GROUPS; }
bool hy_matmul_avx512_intel_fp8_groups(void) { return MM_FP8_GROUPS; }
#else
hy_matmul_fn hy_matmul_avx512(void) { return mm_simd; }
bool hy_matmul_avx512_panel_walk(void) { return MM_BF16_T1_PANEL_WALK; }
bool hy_matmul_avx512_bf16_groups(void) { return MM_BF16_GROUPS; }
bool hy_matmul_avx512_fp8_groups(void) { return MM_FP8_GROUPS; }
#endif

#elif defined(MM_AVX512_NOBF16)
hy_matmul_fn hy_matmul_avx512_nobf16(void) { return NULL; }
#elif defined(MM_AVX512_INTEL)
hy_matmul_fn hy_matmul_avx512_intel(void) { return NULL; }
bool hy_matmul_avx512_intel_bf16_groups(void) { return false; }
bool hy_matmul_avx512_intel_fp8_groups(void) { return false; }
#else
hy_matmul_fn hy_matmul_avx512(void) { return NULL; }
bool hy_matmul_avx512_panel_walk(void) { return false; }
bool hy_matmul_avx512_bf16_groups(void) { return false; }
bool hy_matmul_avx512_fp8_groups(void) { return false; }
#endif
