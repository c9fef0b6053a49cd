/*
 * Matrix products of the forward pass (y = W·x for every linear layer): the weight formats,
 * the kernel contract every ISA implements, the scalar reference (the oracle of the tests),
 * and the load-time quantizers.
 *
 * Formats (hy_wfmt):
 *   F32 / BF16 / F16  [rows][cols] row-major, read in place from the checkpoint mmap.
 *                     BF16 checkpoint matrices of more than HY_PANEL_COLS columns that the loader
 *                     copies into memory (model/linears.c) are stored in column panels instead
 *                     (hy_mat.panel, below), or, on tiers that ask for it, every copied BF16
 *                     matrix in row groups (BF16G, below); FP8 likewise (FP8G).
 *   FP8               e4m3fn [rows][cols] row-major + fp32 block scales ("weight_scale_inv",
 *                     blocks of bs0 x bs1, normally 128 x 128) as in the official *-FP8
 *                     checkpoints; either read in place or produced at load.
 *   Q8 / Q4           produced at load: groups of HY_Q_GROUP (32) columns, each group one fp16
 *                     scale relative to a per-row fp32 scale; packed in blocks of HY_Q_ROWS (16)
 *                     rows interleaved 4 columns at a time (see the layout below), the shape
 *                     int8 dot-product instructions (vpdpbusd) consume without shuffles.
 *
 * Semantics (what every kernel computes, for output o and token t):
 *   float formats, activations HY_ACT_F32 (the default, "exact"):
 *       y = Σ_k w(o,k)·x(t,k) in fp32 with w(o,k) the weight as fp32;
 *       FP8: y = Σ_k e4m3(o,k)·fl32(scale(o,k)·x(t,k)): the block scale multiplies the
 *       activation (once per row block) instead of the weight (once per weight), which leaves
 *       the decode GEMV nothing to multiply per weight (it was bound by that). Where
 *       scale·x is subnormal (below 2^-126) kernels may keep more of its bits (the SIMD tiers
 *       keep it down to 2^-134, as fl32(scale·2^8·x)).
 *   float formats, HY_ACT_BF16 (opt-in "fast" prefill): Σ_k w(o,k)·x(t,k) with x and w(o,k)
 *       first rounded to bf16 (round-to-nearest-even; FP8: w = fl32(e4m3·scale)), products
 *       summed in fp32 (vdpbf16ps). Kernels may use it only for T >= HY_MATMUL_GEMM_MIN_T
 *       tokens (decode keeps fp32 activations).
 *   BF16 weights, HY_ACT_BF16_GEMV (opt-in "fast" decode, or-ed into either mode): calls of up
 *       to HY_MATMUL_GEMV_MAX_T tokens compute the HY_ACT_BF16 sum too (x rounded to bf16,
 *       exact products, fp32 sums; hy_act_rounds says when), one chain of vdpbf16ps steps per
 *       output where the ISA has it (matmul_simd.inc), in the fp32 GEMV tiles elsewhere. Why:
 *       a batched decode step of 8-32 sequences is bound by the fp32 FMAs, vdpbf16ps does two
 *       products per lane in one.
 *   FP8 weights, HY_ACT_BF16_GEMV, on the avx512 tier's Zen instance (hy_matmul_avx512(): the
 *       others stay exact, its Intel instances too, where vdpbf16ps runs at half rate; except
 *       FP8G on AMX, below): y = Σ_k ftz(e4m3(o,k))·bf16(fl32(scale(o,k)·2^120)·x(t,k))·2^-120, one chain of
 *       vdpbf16ps steps per output, where ftz reads the subnormal codes (below 2^-6, under
 *       1/28672 of the block's largest) as 0 (vdpbf16ps treats denormal bf16 inputs as 0, and
 *       the codes go to it as bf16 bits of e4m3·2^-120); a row block whose scaled activations
 *       are not finite takes the exact sum instead. Why: the one-token GEMV with fp32
 *       activations converts 64 codes with 9 integer operations and 4 FMAs, which on a Zen 4
 *       core streams ~30 GB/s from L2, no more than a core reads from DRAM in the fast minutes;
 *       this one takes 5 and 2 vdpbf16ps, and a batched step half the FMAs. On the AMX
 *       instance (FP8G): the same products and the same fallback, summed in the AMX order of
 *       BF16G (below), for every call of up to HY_MATMUL_GEMV_MAX_T tokens.
 *   BF16G weights, HY_ACT_BF16_GEMV, on the AMX instance (hy_matmul_avx512_amx): the sums of
 *       HY_ACT_BF16 on AMX (below: x rounded to bf16, TDPBF16PS's order), for every call of up to
 *       HY_MATMUL_GEMV_MAX_T tokens; calls of few tokens compute them with fp32 FMAs, bit for bit
 *       (kernels/cpu/matmul_amx.c); FP8G likewise with FP8's products (above). Why: a batched
 *       step of 8-32 sequences reads the weights once for 8-32 tokens of products, which the
 *       tiles compute 1.4-2.3x (bf16) and 1.4-3.9x (fp8) as fast.
 *   Q8 / Q4 / other row groups ignore the flag.
 *   Q8 / Q4: x(t,:) is quantized per group of 32 to int8 (hy_quant_act_row: scale amax/127,
 *       round-to-nearest-even); per group g the integer dot i_g = Σ q_w·q_x is exact, and
 *           acc = 0; for g in order: acc = fma((float)i_g, fl32(h(o,g)·s_x(t,g)), acc);
 *           y = fl32(acc · d(o))
 *       This is bit-reproducible, so every ISA and the reference agree exactly, with either
 *       activation mode; except HY_ACT_BF16 on AMX (hy_matmul_avx512_amx), which multiplies
 *       bf16(fl32(fl32(d(o)·h(o,g))·q)) by bf16 x in the AMX order of BF16G (below).
 *   Float formats: the summation order is the kernel's, but each kernel uses ONE order per
 *   (output, token) that depends only on the number of columns: never on T, on the row range,
 *   or on the thread, so results are bit-identical across thread counts and batch sizes.
 *   (HY_ACT_BF16 on AVX-512 BF16 has its own order, one fp32 chain of vdpbf16ps steps over
 *   the column pairs: kernels/cpu/matmul_gemm.inc. It too depends on the column count only.
 *   BF16G, the row-group layout below, fixes the order for every kernel: one fma chain per
 *   output in column order, so its results are bit-identical across tiers too; except
 *   HY_ACT_BF16 on AMX (hy_matmul_avx512_amx, kernels/cpu/matmul_amx.c), and its fast decode
 *   of BF16G: one fp32 accumulator per output over steps of 32 columns (zero padded), each
 *   step what TDPBF16PS computes (Intel SDM): with denormal inputs read as zero and denormal
 *   results flushed, an fma chain from zero over the step's even columns and one over its odd
 *   columns, acc = acc + (even + odd). That order too depends on the column count only.
 *   BF16G with fp32 activations (the exact sums) on AMX: the same steps, three per step of 32
 *   columns, one for each bf16 part of x = x1 + x2 + x3 (each part the top 16 bits of what the
 *   previous ones left: truncated, so the parts hold every fp32 x exactly; parts below 2^-126
 *   read as zero; a non-finite x is its first part, NaN quieted, and zeros), in that order, for
 *   every T (kernels/cpu/matmul_amx.c). The products are exact, as in the fma chain; only the
 *   order of the fp32 sums differs, and its steps of 32 make it closer to the exact sum
 *   (test_golden: worst logit error against the fp64 forward 3.1e-6 against 8.3e-6 on the
 *   trained fixture). Why: the tiles run it at ~2x the fp32 FMAs' rate; but an AMX machine's
 *   exact sums are not bit-identical to another machine's.)
 *
 * Threading: a call computes rows [o0, o1) for all T tokens and touches only those outputs
 * and its own scratch (hy_matmul_scratch_bytes, one buffer per thread). Callers split rows;
 * row ranges starting at multiples of hy_matmul_row_align keep the SIMD tiles full.
 */
#ifndef HY_KERNELS_MATMUL_H
#define HY_KERNELS_MATMUL_H

#include "base/cpu.h"
#include "base/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum hy_wfmt {
    HY_WFMT_F32 = 0,
    HY_WFMT_BF16,
    HY_WFMT_F16,
    HY_WFMT_FP8,
    HY_WFMT_Q8,
    HY_WFMT_Q4,
    HY_WFMT_BF16G, /* bf16 in row groups (below) */
    HY_WFMT_FP8G,  /* fp8 e4m3 in row groups (below), FP8's block scales */
    HY_WFMT_COUNT
} hy_wfmt;

const char *hy_wfmt_name(hy_wfmt f); /* "f32" "bf16" "f16" "fp8" "q8" "q4" "bf16g" "fp8g" */

#define HY_Q_ROWS 16  /* rows per packed q8/q4 block */
#define HY_Q_GROUP 32 /* columns per quantization group */

/*
 * Packed Q8/Q4 layout. Rows are padded to a multiple of 16 (nb blocks), columns to a multiple
 * of 32 (G groups); padding holds the value 0. Block b is hy_q_block_bytes(f, G) bytes at
 * data + b*hy_q_block_bytes; the record of its group g (R = 512 bytes for Q8, 256 for Q4) at
 * hy_q_rec_offset(f, g) in it holds, for j = row in block (0..15):
 *   Q8: byte [v][j][i] (v = 0..7, i = 0..3) = 128 + q of column 4v+i          (q in [-127, 127])
 *   Q4: byte [v][j][i] (v = 0..3, i = 0..3): low nibble = 8 + q of column 8v+i,
 *                                            high nibble = 8 + q of column 8v+4+i  (q in [-8, 7])
 * so 64 consecutive bytes are 16 rows x 4 columns: one 512-bit vector, one int32 lane per row.
 * Group scales h (fp16, |h| <= 1; 16 of a group, row j at [j]: hy_q_gscale) and row scales d
 * (scale: fp32 [nb*16]). Weight of (row, column) = d(row) · h(row, group) · q.
 * A block is ceil(G/2) units of 64 + 2·R bytes: a line with the scales of groups 2u (bytes
 * 0..31) and 2u+1 (32..63), then the records of 2u and 2u+1 (an odd G's last unit holds one;
 * its scale line's second half is zero). Why: as a separate array the scales were a second
 * stream beside the records (32 bytes per R), and a Zen 4 core streaming both from DRAM in the
 * fastest minutes (two threads, ~60 GB/s) read Q4 at 0.82-0.85 of the read bandwidth against
 * 0.98-1.00 with them inside the records' stream (248320 x 1024, two threads, alternated with
 * the read). Q8's scales are half as dense and a matrix that size read as fast either way, but
 * the engine's 0.8B matrices (0.5-3.5 MiB a thread a call) read faster in units in the fast
 * minutes (hyla bench --profile, builds alternated: out_proj 0.77-0.82 -> 0.84-0.85 of the
 * bandwidth, down_proj 0.82-0.85 -> 0.87-0.88), the 27B's the same.
 */
/*
 * BF16 column panels (hy_mat.panel): columns in panels of HY_PANEL_COLS (the last one
 * narrower), panel c = columns [c·P, c·P + w_c) of every row, [rows][w_c] row-major, the panels
 * one after another: element (r, k) of panel c at data + rows·c·P + r·w_c + (k - c·P).
 * Why: a one-token GEMV walking a row reads all of x (fp32, 4 bytes per column) for every row;
 * from about 3000 columns on, x no longer stays in L1, and its refetches from L2 halve what the
 * hardware prefetchers stream of the weights. Panel by panel, x stays in L1 (8 KiB) and the
 * weights are still one sequential stream (rows of a panel back to back). One Zen 4 core
 * streaming from DRAM (bench_matmul --decode --threads 1, builds alternated, 3 rounds): 27B
 * down_proj (5120x17408) 29.5-31.4 against 23.4-25.3 GB/s row-major, 0.8B down_proj (1024x3584)
 * 29.7-31.7 against 24.3-28.1. Kernels compute the same sums in the same order in either
 * layout.
 */
#define HY_PANEL_COLS 2048
/*
 * BF16 row groups (HY_WFMT_BF16G): the same bf16 values, rows padded to a multiple of
 * HY_G_ROWS (zero rows), columns taken in pairs (an odd last column pairs with a zero): pair j
 * of group g is 64 bytes at data + (g·ceil(K/2) + j)·64, dword i = row HY_G_ROWS·g + i's
 * columns 2j (low half) and 2j+1 (high half). A group is one sequential stream, and a vector
 * of 8 or 16 rows of one column is one shift or AND of a load: the "outer product" form, where
 * an accumulator holds consecutive rows of one token and takes each column's weights times
 * that token's value broadcast. Its order (every kernel, any T): per (row, token) ONE fp32
 * chain over the columns in order, acc = 0; for k < K: acc = fma(w(o,k), x(t,k), acc); y =
 * acc (HY_ACT_BF16: x(t,k) rounded to bf16 first). No horizontal sums, so no lane order:
 * every tier computes the same bits. The tier decides whether the loader uses it
 * (hy_matmul_bf16_groups): on Zen 3 (avx2, 16 registers) this form kept both FMA pipes busier
 * than the inner-product tiles, which load a vector of the token too for every one of weights.
 */
#define HY_G_ROWS 16
/*
 * FP8 row groups (HY_WFMT_FP8G): the e4m3 codes of FP8 in groups of HY_G_ROWS rows (zero
 * rows and columns pad to whole groups and column quads): quad q of group g is 64 bytes at
 * data + (g·ceil(K/4) + q)·64, byte 4i + j = row HY_G_ROWS·g + i, column 4q + j; block scales
 * as FP8 (scale, bs0 a multiple of HY_G_ROWS, bs1 of 32). 32 bytes are 8 rows x 4 columns,
 * which the FP8 kernels' shift / AND conversion turns into four vectors of 8 rows of one
 * column each: the outer-product form of BF16G. Order (every kernel, any T): per (row, token)
 * one fp32 chain over the columns in order, acc = fma(e4m3(o,k), fl32(scale(o,k)·x(t,k)),
 * acc) (the FP8 semantics above; HY_ACT_BF16 is not applied: exact, except on AMX, which
 * applies it: w = bf16(fl32(e4m3·scale)) times bf16 x, in the AMX order of BF16G, and its fast
 * decode: FP8's sum of HY_ACT_BF16_GEMV in that order). The tier's
 * instance decides whether the loader uses it (hy_matmul_fp8_groups).
 */
/* Rows of a panel the one-token GEMV reads before moving to the next panel (fewer when the call
 * has fewer): callers splitting rows hand out at least this many at a time where they can. */
#define HY_PANEL_ROWS 256

typedef struct hy_mat {
    hy_wfmt fmt;
    int rows, cols;
    const void *data;
    bool panel; /* BF16 only: data in column panels (above) instead of row-major */
    /* FP8: block scales [ceil(rows/bs0)][ceil(cols/bs1)]; Q8/Q4: row scales d [nb*16] */
    const float *scale;
    int bs0, bs1;           /* FP8 block size (rows, columns) */
    const char *name;       /* for messages; may be NULL */
} hy_mat;

/* Activation handling for float weight formats (see the semantics above).
 * HY_ACT_KEEP_X may be or-ed in: x, T and ldx are those of the previous call on this scratch
 * and x has not changed since (the pieces of one matmul, gate_proj and up_proj of one FFN).
 * The int8 path then reuses the activations it quantized into the scratch, if that call had
 * as many columns and the same zero point, and the FP8 GEMV the activations it multiplied by
 * the block scales, if that call was on the same matrix and row block, and the AMX GEMM the
 * tokens it converted to bf16, if they fit one block of its tokens (else they do it again);
 * results are the same. */
typedef enum hy_act { HY_ACT_F32 = 0, HY_ACT_BF16 = 1, HY_ACT_KEEP_X = 2, HY_ACT_BF16_GEMV = 4 } hy_act;
#define HY_ACT_MODE(a) ((hy_act)((a) & HY_ACT_BF16))
/* Bytes at the start of a scratch that the SIMD tiers keep for themselves (what the int8
 * path last quantized there, the FP8 GEMV scaled, the AMX GEMM converted to bf16;
 * kernels/cpu/matmul_blk.h); included in hy_matmul_scratch_bytes. */
#define HY_MATMUL_SCRATCH_HDR 128

/* Fewest tokens for which the kernels switch from GEMV tiles to the blocked GEMM (and, with
 * HY_ACT_BF16, to bf16 activations). */
#define HY_MATMUL_GEMM_MIN_T 8
/* With HY_ACT_F32 the SIMD kernels keep the GEMV tiles up to this many tokens (batched decode:
 * one pass over the weights for all the sequences; bench_streams measured it faster than the
 * GEMM at 8..32 tokens). Results are the same either way. */
#define HY_MATMUL_GEMV_MAX_T 32

/* Whether a call of T tokens is one the fast decode (HY_ACT_BF16_GEMV, or-ed in) applies to: up
 * to HY_MATMUL_GEMV_MAX_T tokens, unless HY_ACT_BF16's GEMM takes the call. */
static inline bool hy_act_gemv_bf16(hy_act a, int T) {
    return (a & HY_ACT_BF16_GEMV) && T <= HY_MATMUL_GEMV_MAX_T && !((a & HY_ACT_BF16) && T >= HY_MATMUL_GEMM_MIN_T);
}
/* Whether a call of T tokens on weights of format fmt computes HY_ACT_BF16's sum (x and w
 * rounded to bf16; the semantics above): from HY_MATMUL_GEMM_MIN_T tokens on with HY_ACT_BF16,
 * any float format; BF16 weights in the calls of the fast decode. Q8 / Q4 follow their own
 * rule whatever this says, FP8 under the fast decode its own, BF16G under the AMX instance's
 * fast decode its own (above). */
static inline bool hy_act_rounds(hy_act a, hy_wfmt fmt, int T) {
    return ((a & HY_ACT_BF16) && T >= HY_MATMUL_GEMM_MIN_T) || (fmt == HY_WFMT_BF16 && hy_act_gemv_bf16(a, T));
}

/* For o in [o0, o1), t in [0, T): d = W[o,:]·x[t*ldx + :]; y[t*ldy + o] = d, or += d when
 * accumulate. scratch: hy_matmul_scratch_bytes(W->cols) bytes, 64-byte aligned, private to
 * the calling thread. */
typedef void (*hy_matmul_fn)(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0,
                             int o1, bool accumulate, hy_act act, void *scratch);

/* Scratch one thread needs for matrices of up to max_cols columns (any ISA, any format). */
size_t hy_matmul_scratch_bytes(int max_cols);
/* Row granularity of the kernels' tiles for this format (16 for Q8/Q4 and BF16G). */
int hy_matmul_row_align(hy_wfmt fmt);
/* Fewest rows a one-token call on W should get from tier isa's kernel where a caller hands out
 * rows in pieces (a multiple of hy_matmul_row_align): a tier whose one-token GEMV walks BF16
 * panels HY_PANEL_ROWS rows of a panel at a time (hy_matmul_panel_walk) asks for that many on
 * panel matrices, as fewer would cut that sequential stream into short runs; otherwise the
 * row alignment. */
int hy_matmul_min_rows(const hy_mat *W, hy_isa isa);
/* The kernel of an ISA tier; NULL when this build has none. Does not check the CPU. */
hy_matmul_fn hy_matmul_get(hy_isa isa);
hy_matmul_fn hy_matmul_avx2(void);
/* The avx2 kernels tuned for Intel cores (matmul_avx2_intel.c): the same sums in the same order
 * and the same layouts as hy_matmul_avx2(), other prefetch and one-token Q8 / Q4 tiles;
 * kernels/cpu/dispatch.c chooses. */
hy_matmul_fn hy_matmul_avx2_intel(void);
/* hy_matmul_avx2_intel() with AVX-VNNI's vpdpbusd for Q8 / Q4 (matmul_avx2_vnni.c): only for
 * CPUs with AVX-VNNI; the same results. */
hy_matmul_fn hy_matmul_avx2_vnni(void);
hy_matmul_fn hy_matmul_avx512(void);
/* The avx512 kernels tuned for Intel cores (matmul_avx512_intel.c): on a given matrix the same
 * sums in the same order as hy_matmul_avx512() (except FP8 under HY_ACT_BF16_GEMV: exact, see
 * the semantics above), other prefetch and tiles, and other layouts
 * asked of the loader (hy_matmul_bf16_groups / hy_matmul_fp8_groups with intel); kernels/cpu/
 * dispatch.c chooses. */
hy_matmul_fn hy_matmul_avx512_intel(void);
/* hy_matmul_avx512_intel() for CPUs without AVX512_BF16 (matmul_avx512_nobf16.c): no vdpbf16ps
 * and no vcvtneps2bf16; HY_ACT_BF16 keeps fp32 products of the rounded activations (as avx2),
 * HY_ACT_BF16_GEMV the exact sums. The layouts of the intel instance. */
hy_matmul_fn hy_matmul_avx512_nobf16(void);
/* hy_quant_act_row with those two instances' vectors, bit for bit (x86-64 builds only): the
 * activations the AMX instance's int8 tiles take */
void hy_quant_act_row_avx512_intel(const float *x, int cols, int zp, int8_t *xq, float *sx, int32_t *corr);
void hy_quant_act_row_avx512_nobf16(const float *x, int cols, int zp, int8_t *xq, float *sx, int32_t *corr);
/* hy_matmul_avx512_intel() with AMX tiles for BF16G, FP8G, Q8 and Q4 matrices with HY_ACT_BF16
 * and for BF16G and FP8G under HY_ACT_BF16_GEMV (matmul_amx.c, its header has the order). Only
 * for CPUs with AMX-BF16 whose OS granted the tile state (hy_cpu_amx_permit); NULL when this
 * build has none. */
hy_matmul_fn hy_matmul_avx512_amx(void);
/* Whether the tier's one-token BF16 GEMV walks column-panel matrices HY_PANEL_ROWS rows at a
 * time (its ISA file's choice; false for tiers this build lacks and for ref). */
bool hy_matmul_panel_walk(hy_isa isa);
bool hy_matmul_avx2_panel_walk(void);
bool hy_matmul_avx512_panel_walk(void);
/* Whether the tier reads BF16 matrices faster as row groups (HY_WFMT_BF16G) than row-major,
 * where the loader copies them anyway (its ISA file's choice; false for ref and absent tiers).
 * Every tier computes BF16G, this is only about speed. */
bool hy_matmul_bf16_groups(hy_isa isa, bool intel);
bool hy_matmul_avx2_bf16_groups(void);
bool hy_matmul_avx512_bf16_groups(void);
bool hy_matmul_avx512_intel_bf16_groups(void);
/* The same for FP8 matrices as HY_WFMT_FP8G. intel (both): the avx512 tier's
 * hy_matmul_avx512_intel() kernels; the other tiers ignore it. */
bool hy_matmul_fp8_groups(hy_isa isa, bool intel);
bool hy_matmul_avx2_fp8_groups(void);
bool hy_matmul_avx512_fp8_groups(void);
bool hy_matmul_avx512_intel_fp8_groups(void);
/* Rows [r0, r1) (r0 a multiple of HY_G_ROWS; r1 one too, or r1 = rows) of a bf16 matrix of
 * rows x cols, row-major in src (src[0] = row r0's first column), into their places in the row
 * groups dst (hy_wfmt_bytes(HY_WFMT_BF16G, rows, cols) bytes, all of it), padding rows and the
 * odd column's partner zero. */
void hy_mat_group_rows(uint16_t *dst, const uint16_t *src, int rows, int cols, int r0, int r1);
/* The same for FP8 codes into FP8G (hy_wfmt_bytes(HY_WFMT_FP8G, rows, cols) less the scales). */
void hy_mat_group_rows_fp8(uint8_t *dst, const uint8_t *src, int rows, int cols, int r0, int r1);
/* Bytes of the codes of an FP8G matrix (without the scales). */
static inline size_t hy_fp8g_code_bytes(int rows, int cols) {
    return (size_t)((rows + HY_G_ROWS - 1) / HY_G_ROWS) * HY_G_ROWS * (size_t)((cols + 3) / 4) * 4;
}

/* Scalar reference of the contract above (the "ref" tier). */
void hy_ref_matmul_mat(const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy, int o0, int o1,
                       bool accumulate, hy_act act, void *scratch);

/* A hy_mat view of a checkpoint tensor (F32/BF16/F16; FP8 needs fp32 scales, so callers set
 * scale/bs0/bs1 themselves). */
hy_mat hy_mat_from_tensor(const hy_tensor *t);

/* ---- sizes ---------------------------------------------------------------------------- */

static inline int hy_q_blocks(int rows) { return (rows + HY_Q_ROWS - 1) / HY_Q_ROWS; }
static inline int hy_q_groups(int cols) { return (cols + HY_Q_GROUP - 1) / HY_Q_GROUP; }
/* Bytes of one packed (block, group) record. */
static inline size_t hy_q_record_bytes(hy_wfmt f) { return f == HY_WFMT_Q4 ? 256 : 512; }
/* A unit: one line with two groups' scales, then those two records (layout above). */
static inline size_t hy_q_unit_bytes(hy_wfmt f) { return 64 + 2 * hy_q_record_bytes(f); }
/* Bytes of one packed block of G groups, its group scales included (layout above). */
static inline size_t hy_q_block_bytes(hy_wfmt f, int G) {
    return (size_t)G * hy_q_record_bytes(f) + (size_t)(G + 1) / 2 * 64;
}
/* Offset of group g's record in its block. */
static inline size_t hy_q_rec_offset(hy_wfmt f, int g) {
    return (size_t)(g / 2) * hy_q_unit_bytes(f) + 64 + (size_t)(g % 2) * hy_q_record_bytes(f);
}
/* Offset of group g's 16 scales from those of the block's group 0 (the block's first bytes), in
 * fp16 units. */
static inline size_t hy_q_gscale_offset(hy_wfmt f, int g) {
    return (size_t)(g / 2) * (hy_q_unit_bytes(f) / 2) + (size_t)(g % 2) * HY_Q_ROWS;
}
/* The record of block b, group g. */
static inline const unsigned char *hy_q_record(const hy_mat *W, int b, int g) {
    return (const unsigned char *)W->data + (size_t)b * hy_q_block_bytes(W->fmt, hy_q_groups(W->cols)) +
           hy_q_rec_offset(W->fmt, g);
}
/* The 16 group scales h of block b, group g (row j at [j]). */
static inline const uint16_t *hy_q_gscale(const hy_mat *W, int b, int g) {
    const int G = hy_q_groups(W->cols);
    const uint16_t *g0 = (const uint16_t *)((const unsigned char *)W->data + (size_t)b * hy_q_block_bytes(W->fmt, G));
    return g0 + hy_q_gscale_offset(W->fmt, g);
}
/* Bytes W occupies (weights + every scale array); for views into a checkpoint, what is read. */
size_t hy_mat_bytes(const hy_mat *W);
/* Bytes of W->data before row r, for r a multiple of hy_matmul_row_align(W->fmt) or r = W->rows:
 * where the rows [r, ...) a split hands out start in memory (scale arrays not counted; BF16
 * panels: in the first panel, the part a one-token GEMV reads first). */
size_t hy_mat_data_offset(const hy_mat *W, int r);
/* Columns [k, hy_mat_run_end(W, k)) of a row lie contiguously in memory (the end of k's panel,
 * or of the row); hy_mat_elem points at element (r, k) of a F32 / BF16 / F16 / FP8 matrix (es
 * bytes per element) and hy_mat_ld is the distance in elements from row r to row r+1 there. */
static inline int hy_mat_run_end(const hy_mat *W, int k) {
    if (!W->panel) return W->cols;
    const int e = (k / HY_PANEL_COLS + 1) * HY_PANEL_COLS;
    return e < W->cols ? e : W->cols;
}
static inline size_t hy_mat_ld(const hy_mat *W, int k) {
    return W->panel ? (size_t)(hy_mat_run_end(W, k) - k / HY_PANEL_COLS * HY_PANEL_COLS) : (size_t)W->cols;
}
static inline const void *hy_mat_elem(const hy_mat *W, int r, int k, size_t es) {
    if (!W->panel) return (const char *)W->data + ((size_t)r * (size_t)W->cols + (size_t)k) * es;
    const int k0 = k / HY_PANEL_COLS * HY_PANEL_COLS;
    return (const char *)W->data + ((size_t)W->rows * (size_t)k0 + (size_t)r * hy_mat_ld(W, k) + (size_t)(k - k0)) * es;
}
/* Whether the loader stores a BF16 matrix of this many columns in column panels. */
static inline bool hy_panel_wanted(int cols) { return cols > HY_PANEL_COLS; }
/* Rows [r0, r1) of the row-major bf16 src ([rows][cols]) into their places in dst, the panel
 * layout of a rows x cols matrix (callers may fill dst by row ranges, e.g. one per thread). */
void hy_mat_panelize_rows(uint16_t *dst, const uint16_t *src, int rows, int cols, int r0, int r1);

/* Bytes a rows x cols matrix takes in format f (FP8 with 128x128 blocks). */
size_t hy_wfmt_bytes(hy_wfmt f, int64_t rows, int64_t cols);

/* ---- quantizers (scalar; load time and tests) ------------------------------------------ */

/* Quantizes nr <= 16 rows (w: [nr][cols] fp32) into block b of a packed Q8/Q4 matrix with
 * cols columns (rows nr..15 of the block become padding). Returns the number of non-finite
 * inputs (nothing is written meaningfully then; callers fail the load), -1 when out of memory.
 * Q8 group scales are amax/127; Q4 ones minimise the group's squared error (a few candidates
 * refined by least squares); both go into data (the layout above), which holds
 * hy_q_block_bytes(f, G) bytes per block. */
int hy_q_pack_block(hy_wfmt f, const float *w, int nr, int cols, int b, void *data, float *scale);
/* FP8 of nr <= bs0 rows (w: [nr][cols]) with blocks of bs1 columns: scale[c] = amax/448 of
 * column block c (1 when the block is all zeros), out[r][k] = e4m3(w / scale) rounded to
 * nearest even, saturating. Returns the number of non-finite inputs. */
int hy_fp8_quant_rows(const float *w, int nr, int cols, int bs1, uint8_t *out, float *scale);
/* fp32 -> e4m3fn, round to nearest even, saturating to ±448, NaN -> 0x7f; equal to
 * hy_f32_to_fp8_e4m3 (base/fp.h) for every input, several times faster. */
uint8_t hy_fp8_e4m3_encode(float f);

/* Row r of W as fp32 (the weights the kernels multiply by; Q8/Q4: d·h·q rounded to fp32). */
void hy_mat_row_f32(const hy_mat *W, int r, float *dst);

/* Quantizes one activation row for the Q8/Q4 path: xq [G*32] int8 (zero padded), sx [G] the
 * group scales, corr [G] = -zp · Σ xq over the group (the kernels' zero-point correction;
 * pass zp = 0 when unused). A group holding a NaN/Inf gets sx = NaN and xq = 0, so the
 * products it enters become NaN. */
void hy_quant_act_row(const float *x, int cols, int zp, int8_t *xq, float *sx, int32_t *corr);

#endif
