/*
 * AVX2+FMA+F16C instance of the matmul kernels (template: matmul_simd.inc). Compiled for the
 * avx2 tier only by target pragmas; hy_matmul_avx2() must only be called after
 * kernels/cpu/dispatch.c checked the CPU. 8 fp32 lanes, 16 registers: float GEMM tiles of 3
 * rows x 4 tokens, 3 x 3 over bf16 weights read in place. No bf16 dot product: HY_ACT_BF16
 * rounds operands to bf16 and keeps fp32 FMAs (no speed-up over fp32 activations; bf16
 * weights take the same in-place tiles, the tokens rounded as they are de-interleaved). int8
 * dots via vpmaddubsw + vpmaddwd: Q4 nibbles (<= 15) times int8 cannot saturate the 16-bit
 * pair sums; Q8 uses the sign trick (|w| times sign-adjusted x, both <= 127), so its weights
 * carry no zero point here.
 *
 * Compiled three times: as is (tuned on Zen 3; hy_matmul_avx2), by matmul_avx2_intel.c with
 * MM_AVX2_INTEL (hy_matmul_avx2_intel, for Intel cores without AVX-512: other prefetch and
 * one-token Q8 / Q4 tiles, below; the same sums and the same layouts asked of the loader), and
 * by matmul_avx2_vnni.c with MM_AVX2_VNNI too (hy_matmul_avx2_vnni: Q8 / Q4 dot products by
 * AVX-VNNI's vpdpbusd, Q8's zero point 128 as on the avx512 tier; integer sums, the same
 * results). kernels/cpu/dispatch.c picks one by the CPU's vendor (HYLA_TUNE) and features.
 */
#include "kernels/matmul.h"

#if defined(__x86_64__)

#ifdef MM_AVX2_VNNI
#define HY_AVX2_VNNI 1
#endif
#include "kernels/cpu/avx2_begin.h"

#include <stdbool.h>
#include <string.h>

typedef __m256 vf;
typedef __m256i vm;
typedef __m256i vi;
#define VL 8
#define MM_VREGS 16 /* vector registers */
#define RV 8
/* GEMM tiles: 3 rows x 4 tokens (12 accumulators), 3 x 3 where bf16 weights are converted in
 * registers (GCC spilled accumulators of larger tiles there, or loaded each token vector once
 * per row), in blocks of 128 rows (FP8's scale blocks) x 24 tokens. Zen 3, one thread, T = 512,
 * both builds in one process alternated 15 times, 3 rounds, same results bit for bit: 0.8B
 * shapes, bf16 weights 1.22-1.48x the 2 x 6 tiles in blocks of 64 x 48 (whose inner loop
 * loaded every token vector twice and spilled one accumulator), fp32 weights 1.05-1.11x, bf16
 * activations 1.06-1.07x, FP8 1.07-1.13x and 1.12-1.14x more with 128-row blocks (96 split
 * every scale block in two); 3 x 3 everywhere gave fp32 +1-5%, 3 x 4 everywhere bf16 +3-16%. */
#define MM_MR 3
#define MM_NT 4
#define MM_NT_BF16 3
#define MM_MC 128
#define MM_NB 24
#define MM_MR_V 4
/* one-token bf16 decode: 4 rows per tile, the MM_PF_DIST prefetch at every width, and panel
 * matrices walked by these tiles too (not gemv_bf16_panels' one row at a time: its one chain of
 * two dependent FMAs per 16 weights reads ~14 GB/s from L2 on Zen 3, 4 rows ~45). Zen 3, one
 * thread, 0.8B and 27B shapes from DRAM on huge pages (bench_matmul --decode --only bf16,
 * builds alternated 3 rounds): 0.70-0.91 of the read bandwidth against 0.50-0.66 (4-row tiles
 * without the prefetch, one-row panel walk); 8 rows, 16-64 KiB ahead or T0 measured the same. */
#define MM_MR_V_BF16_T1 4
#define MM_BF16_T1_PF_COLS 0
#define MM_BF16_T1_PANEL_WALK 0
#define MM_NT_V 2
/* BF16 row groups (HY_WFMT_BF16G): the loader copies bf16 matrices into them on this tier.
 * Tiles of one group (2 vectors) x 5 tokens, 10 accumulators, 2 weight loads and 5
 * broadcasts per 10 FMAs (6 tokens: GCC 12 spilled 3 values in the loop, 5-8% slower, one
 * thread, T = 512, alternated in one process 3 rounds); 1-3 tokens: 2 groups (two sequential
 * streams). Zen 3, one thread, the same kernel file on row-major / panel bf16 and on groups
 * alternated in one process (6-token tiles then): T = 512 1.31-1.48x (0.8B and 27B MLP
 * shapes), bf16 activations 1.28-1.38x; T = 1 from DRAM 1.15-1.27x (0.90-1.04x with one group
 * per tile: one chain pair per stream was bound by the FMA latency; T = 2 from L3 likewise
 * 0.62x). With 5-token tiles one thread runs the 27B down_proj at ~90 GFLOP/s. */
#define MM_BF16_GROUPS 1
#define MM_FP8_GROUPS 1 /* FP8 likewise (HY_WFMT_FP8G: below) */
#define MM_G_NG 2
#define MM_G_NG1 2
/* One token: 4 groups per tile, unit by unit (grp_tile1). Zen 3, one thread, against 2 groups
 * in one process: 1.26x from L2, 1.19x from DRAM (0.8B lm_head); engine, 2 threads, 0.8B bf16
 * tg64 alternated 3 times: 95.9-102.5% of the bandwidth measured in the run against 90.7-91.9%.
 * A software prefetch on top was slower (88.8-89.6%). */
#define MM_G_T1_NG 4
/* The Intel instance (MM_AVX2_INTEL) prefetches 2 KiB ahead of each group, as the avx512 tier's
 * does: Intel Xeon forced to this tier, engine, 2 threads, 0.8B bf16 tg64 (lm_head 508 MB of
 * the 1.5 GB a token reads) 91% of the bandwidth without it, 97-99% with it. */
#ifdef MM_AVX2_INTEL
#define MM_G_PF1 2048
#endif
#define MM_G_NT 5
/* FP8G tiles: 4 tokens (t and u of each vector stay in registers). Zen 3, one thread, FP8 and
 * FP8G alternated in one process: T = 512 1.21-1.25x, T = 1 from DRAM 1.14-1.33x, T = 8
 * 1.54x. One token: 4 groups (8 chains), and a prefetch MM_G8_PF bytes ahead in each group:
 * the conversion keeps this tier near 20 GB/s of codes per core even from L1, so the DRAM
 * stream needs the head start. Zen 3, engine, 0.8B fp8 tg64 alternated 3 times: 87.6-91.1% of
 * the bandwidth against 85.8-86.6% (2 groups, no prefetch); each alone gave about half. */
#define MM_G8_NT 4
#define MM_G8_NG1 4
#define MM_G8_PF 2048
/* The GEMV tiles do not look for codes of exponent 0 (matmul_grp.inc): 3 more operations per
 * 32 codes, which on the Intel Xeon forced to this tier cost the 0.8B fp8 decode 4% (86% of
 * the bandwidth against 90%, alternated twice) at 1e-4 subnormal codes, and this tier's
 * conversion already bounds Zen 3's decode (whose FMAs were not measured with denormals). The
 * GEMM converts every code without a denormal either way. */
#define MM_FP8_E0_GEMV 0
/* The Intel instances: one-token FP8 rows of every length through gemv_t1_fp8q_long, as the
 * avx512 tier's Intel instance (a checkpoint read in place). Xeon forced to this tier, one
 * thread from DRAM, against gemv_tile_fp8q alternated twice: 0.8B shapes 10.4-10.9 -> 11.0-13.2
 * GB/s, the 27B gate / up 10.7-10.9 -> 14.2-14.8; engine, 0.8B fp8 tg --mmap 64.1-66.1% ->
 * 67.7-70.1% of the bandwidth. */
#ifdef MM_AVX2_INTEL
#define MM_FP8Q_LONG 0
#endif
/* FP8G GEMM of converted panels (matmul_grp.inc): one group (2 vectors) x 6 tokens. BF16G keeps
 * its tiles that widen bf16 in registers: on the Intel Xeon, running this tier, converted panels
 * read 0.93-0.99x them at T = 512 (FP8G 1.19-1.26x its old tiles); Zen 3 not measured. */
#define MM_GC_NG 1
#define MM_GC_NT 6
#define MM_BFG_GEMM_CONV 0
#define MM_G_MC 128
#define MM_G_NB 20
/* One token: q4 one 16-row block (2 vectors) a tile with every line prefetched; q8 four blocks
 * (8 vectors, four sequential streams for the hardware prefetchers) and no software prefetch.
 * Zen 3, engine, 0.8B q8 tg64, each thread's q8 matmuls timed against the bf16 lm_head in the
 * same run (rdtsc, 5 rounds alternated): 0.90-0.92 of the lm_head's bytes per cycle against
 * 0.78-0.86 with q4's tile; two threads over 3584 x 1024 from DRAM alternated in one process
 * 1.08-1.13x, bit for bit. For q4 neither 2 blocks nor dropping the prefetch gained (0.75-0.88
 * against 0.78-0.90).
 * The Intel instance: both formats four blocks a tile, each block a stream prefetched 2 KiB
 * ahead into L1 (MM_Q_T1_STREAM_PF), as the avx512 tier's Intel instance. Intel Xeon forced to
 * this tier, one thread from DRAM, bench_matmul --decode, 0.8B shapes (down / gate-up /
 * lm_head), the two instances alternated twice: q4 11.4-11.9 GB/s -> 13.2-16.5, q8 12.8-15.0
 * -> 14.1-16.8 (4 KiB ahead measured the same, 8 KiB and 8 blocks less). The q4 tiles are not
 * what bound it: with the matrix in L2 they read 28-31 GB/s. Engine: README. */
#define MM_Q8_NV1 8
#ifdef MM_AVX2_INTEL
#define MM_Q4_NV1 8
#define MM_Q_T1_STREAM_PF 2048
#else
#define MM_Q4_NV1 2
#endif
#define MM_Q8_T1_PF 0
#define MM_Q4_T1_PF 1
/* Several tokens: tiles of 2 row vectors x 2 tokens; the Intel instances 2 x 4, as the avx512
 * tier's Intel instance. Intel Xeon forced to this tier, bench_matmul --prefill, alternated
 * twice, GFLOP/s: with AVX-VNNI's one instruction per dot product, one thread, T = 512 q8
 * 138-168 -> 164-189, q4 140 -> 167-173, two threads T = 4 / 8 q8 110-155 -> 147-176 (1 x 4,
 * 2 x 3 and 4 x 2 less); without it (vpmaddubsw), T = 512 q8 76-89 -> 91-93, q4 110-122 ->
 * 119-122, two threads T = 4 / 8 q8 134-186 -> 146-187, q4 196-249 -> 215-237. */
#define MM_Q_NV2 2
#ifdef MM_AVX2_INTEL
#define MM_Q_NT 4
#else
#define MM_Q_NT 2
#endif
#define MM_HAVE_DPBF16 0
#ifdef MM_AVX2_VNNI
#define Q8_ZP 128
#else
#define Q8_ZP 0
#endif
#define Q4_ZP 8

static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_set1(float x) { return _mm256_set1_ps(x); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vm vm_first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vm vm_range(int a, int b) { return _mm256_andnot_si256(vm_first(a), vm_first(b)); }
static inline vf vf_loadm(const float *p, vm m) { return _mm256_maskload_ps(p, m); }
static inline void vf_storem(float *p, vm m, vf v) { _mm256_maskstore_ps(p, m, v); }
static inline vf vf_fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline float vf_hsum(vf a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline vf vf_from_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
static inline vf vf_load_bf16(const uint16_t *p) { return vf_from_bf16(_mm_loadu_si128((const __m128i *)p)); }
static inline vf vf_load_bf16m(const uint16_t *p, int n) {
    uint16_t t[8] = {0};
    memcpy(t, p, (size_t)n * 2);
    return vf_load_bf16(t);
}
static inline vf vf_load_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline vf vf_load_f16m(const uint16_t *p, int n) {
    uint16_t t[8] = {0};
    memcpy(t, p, (size_t)n * 2);
    return vf_load_f16(t);
}
/* e4m3 -> fp16 bits of value·2^-8 (see matmul_avx512.c) */
static inline vf vf_from_fp8(__m128i b) {
    const __m128i w = _mm_slli_epi16(_mm_cvtepi8_epi16(b), 7);
    return _mm256_cvtph_ps(_mm_and_si128(w, _mm_set1_epi16((short)0xbf80)));
}
static inline vf vf_load_fp8(const uint8_t *p) { return vf_from_fp8(_mm_loadl_epi64((const __m128i *)p)); }
static inline vf vf_load_fp8m(const uint8_t *p, int n) {
    uint8_t t[8] = {0};
    memcpy(t, p, (size_t)n);
    return vf_load_fp8(t);
}
/* 4·VL e4m3 bytes -> fp32 of value·2^-120 in the quad order (see matmul_avx512.c) */
static inline void vf_fp8x_quad(__m256i d, vf w[4]) {
    const __m256i m = _mm256_set1_epi32((int)0x87f00000u);
    const __m256i t = _mm256_srai_epi16(d, 4), u = _mm256_srai_epi16(_mm256_slli_epi16(d, 8), 4);
    w[0] = _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(u, 16), m));
    w[1] = _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(t, 16), m));
    w[2] = _mm256_castsi256_ps(_mm256_and_si256(u, m));
    w[3] = _mm256_castsi256_ps(_mm256_and_si256(t, m));
}
/* vf_fp8x_quad in two steps, for the FP8G tiles (which keep t and u, not four vectors):
 * column j of the 4 (lane l = byte 4l + j) from t and u */
static inline void vi_fp8x_tu(__m256i d, __m256i *t, __m256i *u) {
    *t = _mm256_srai_epi16(d, 4);
    *u = _mm256_srai_epi16(_mm256_slli_epi16(d, 8), 4);
}
static inline vf vf_fp8x_col(__m256i t, __m256i u, int j) {
    const __m256i s = j & 1 ? t : u;
    return _mm256_castsi256_ps(_mm256_and_si256(j < 2 ? _mm256_slli_epi32(s, 16) : s, _mm256_set1_epi32((int)0x87f00000u)));
}
/* vf_fp8x_col's codes as e4m3·2^-8 with no denormal; vi_fp8x_e0: whether d holds codes of
 * exponent 0 (see fp8x_avx512.h) */
static inline vf vf_fp8x_col8(__m256i t, __m256i u, int j) {
    const __m256i s = j & 1 ? t : u;
    const __m256i b = _mm256_and_si256(j < 2 ? _mm256_slli_epi32(s, 16) : s, _mm256_set1_epi32((int)0x87f00000u));
    const __m256 v = _mm256_castsi256_ps(_mm256_add_epi32(b, _mm256_set1_epi32(112 << 23)));
    const __m256 c = _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_and_si256(b, _mm256_set1_epi32((int)0x80000000u)), _mm256_set1_epi32(113 << 23)));
    const __m256 e0 = _mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x07800000)), _mm256_setzero_si256()));
    return _mm256_add_ps(v, _mm256_and_ps(e0, _mm256_sub_ps(v, c)));
}
static inline bool vi_fp8x_e0(__m256i d) {
    return _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(d, _mm256_set1_epi8(0x78)), _mm256_setzero_si256())) != 0;
}
static inline __m256i vi_load_u8m(const uint8_t *p, int n) {
    uint8_t t[32] = {0};
    memcpy(t, p, (size_t)n);
    return _mm256_loadu_si256((const __m256i *)t);
}
/* v[0..3] into the quad order in place: v[j] lane l = element 4l+j (the avx2 tier is the
 * fallback, so plain stores and loads) */
static inline void vf_quad4(vf v[4]) {
    float a[32], b[32];
    for (int j = 0; j < 4; j++) _mm256_storeu_ps(a + 8 * j, v[j]);
    for (int l = 0; l < 8; l++)
        for (int j = 0; j < 4; j++) b[8 * j + l] = a[4 * l + j];
    for (int j = 0; j < 4; j++) v[j] = _mm256_loadu_ps(b + 8 * j);
}
/* round to the nearest bf16 value (ties to even), kept as fp32 */
static inline vf vf_round_bf16(vf v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd);
    return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u)));
}

static inline vi vi_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline vi vi_set1(int32_t v) { return _mm256_set1_epi32(v); }
/* 2·VL bf16 as one integer vector (n < 2·VL: the first n, zeros after), and its even / odd
 * elements as fp32 (the pair GEMV order, matmul_simd.inc) */
static inline vi vi_load_u16m(const uint16_t *p, int n) {
    uint16_t t[16] = {0};
    memcpy(t, p, (size_t)(n < 16 ? n : 16) * 2);
    return vi_load(t);
}
/* (a | b) de-interleaved: the even elements of the 2·VL, then the odd ones */
static inline void vf_deint(vf a, vf b, vf *even, vf *odd) {
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
}
static inline vf vf_bf16_even(vi v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
static inline vf vf_bf16_odd(vi v) { return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u))); }
static inline vi vi_bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
static inline vi vi_lo4(vi w) { return _mm256_and_si256(w, _mm256_set1_epi8(0x0f)); }
static inline vi vi_hi4(vi w) { return _mm256_and_si256(_mm256_srli_epi16(w, 4), _mm256_set1_epi8(0x0f)); }
#ifdef MM_AVX2_VNNI
static inline vi vi_dot_q4(vi acc, vi w, vi x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
static inline vi vi_dot_q8(vi acc, vi w, vi x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
#else
static inline vi vi_dot_q4(vi acc, vi w, vi x) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
}
/* Q4 in 16-bit sums (MM_Q4_I16): a group's 8 vpmaddubsw results added in 16 bits, widened by
 * one vpmaddwd */
#define MM_Q4_I16 1
static inline vi vi_mul_q4(vi w, vi x) { return _mm256_maddubs_epi16(w, x); }
static inline vi vi_add16(vi a, vi b) { return _mm256_add_epi16(a, b); }
static inline vi vi_sum16(vi acc, vi p) { return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1))); }
static inline vi vi_dot_q8(vi acc, vi w, vi x) {
    const __m256i ws = _mm256_xor_si256(w, _mm256_set1_epi8((char)0x80)); /* back to signed */
    const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(ws), _mm256_sign_epi8(x, ws));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}
#endif
static inline vf vi_to_vf(vi v) { return _mm256_cvtepi32_ps(v); }
static inline vf vf_load_h16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
/* for the activation quantizer */
static inline vf vf_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline float vf_hmax(vf a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}
static inline bool vf_any_nan(vf a) { return _mm256_movemask_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)) != 0; }
static inline vi vi_cvt_rne(vf a) { return _mm256_cvtps_epi32(a); }
static inline vi vi_clamp127(vi a) {
    return _mm256_max_epi32(_mm256_min_epi32(a, _mm256_set1_epi32(127)), _mm256_set1_epi32(-127));
}
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
static inline int32_t vi_hsum(vi a) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}
static inline void vi_store_i8(int8_t *p, vi a) { /* 8 int32 in [-127, 127] -> 8 bytes */
    const __m256i w = _mm256_packs_epi32(a, a);  /* per 128-bit lane: a0..3 a0..3 | a4..7 a4..7 */
    const __m256i b = _mm256_packs_epi16(w, w);  /* bytes: a0..3 x4 | a4..7 x4 */
    const __m256i c = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    _mm_storel_epi64((__m128i *)p, _mm256_castsi256_si128(c));
}

#include "kernels/cpu/matmul_simd.inc"

#include "kernels/cpu/avx2_end.h"

#if defined(MM_AVX2_VNNI)
hy_matmul_fn hy_matmul_avx2_vnni(void) { return mm_simd; }
#elif defined(MM_AVX2_INTEL)
hy_matmul_fn hy_matmul_avx2_intel(void) { return mm_simd; }
#else
hy_matmul_fn hy_matmul_avx2(void) { return mm_simd; }
bool hy_matmul_avx2_panel_walk(void) { return MM_BF16_T1_PANEL_WALK; }
bool hy_matmul_avx2_bf16_groups(void) { return MM_BF16_GROUPS; }
bool hy_matmul_avx2_fp8_groups(void) { return MM_FP8_GROUPS; }
#endif

#elif defined(MM_AVX2_VNNI)
hy_matmul_fn hy_matmul_avx2_vnni(void) { return NULL; }
#elif defined(MM_AVX2_INTEL)
hy_matmul_fn hy_matmul_avx2_intel(void) { return NULL; }
#else
hy_matmul_fn hy_matmul_avx2(void) { return NULL; }
bool hy_matmul_avx2_panel_walk(void) { return false; }
bool hy_matmul_avx2_bf16_groups(void) { return false; }
bool hy_matmul_avx2_fp8_groups(void) { return false; }
#endif
