/* Matmul kernels (kernels/matmul.h) against this machine's roofline, measured on the spot:
 *  - decode GEMV (T = 1): weight bytes streamed per second, as a fraction of the measured
 *    memory read bandwidth (streaming read of a buffer of 1 GiB, or dram_span if larger, same
 *    thread count; re-measured before every row). Every shape is
 *    replicated until the copies exceed 256 MiB and twice the last-level cache (dram_span: some
 *    Xeons have 480 MiB), and the copies are used in turn, so weights come from DRAM;
 *  - prefill GEMM (T = 512; --tokens T sets it, 2-32 being a batched decode step's GEMV):
 *    GFLOP/s (2·rows·cols·T) as a fraction of the matching peak: fp32 FMA for float weights
 *    with fp32 activations, vdpbf16ps for bf16 activations (--fast-prefill), vpdpbusd (int8)
 *    for q8 / q4 (ops counted the same way, 2 per multiply-add); on tiers without those
 *    instructions bf16 activations are measured against the fp32 FMA peak and int8 has no
 *    fraction (n/a); where the kernels use AMX (bf16g with bf16 activations), the AMX peak.
 * Shapes: Qwen3.5-0.8B MLP (1024x3584, 3584x1024), lm_head (248320x1024), Qwen3.6-27B MLP
 * (5120x17408, 17408x5120); rows x cols = out x in. 1 and 2 threads, rows split as the forward
 * pass splits them (hy_fwd_rows: balanced, multiples of the row tile). Each figure is the best
 * of several runs, timed on thread-CPU time (the longest thread; robust on a shared machine, as
 * bench_machine), with the best elapsed-time figure next to it for comparison.
 * Usage: bench_matmul [--isa ref|avx2|avx512] [--quick] [--threads N] [--only FMT] [--decode|--prefill]
 * [--tokens T].
 * Prints tables only. */
#include "base/alloc.h"
#include "base/cpu.h"
#include "base/fp.h"
#include "base/membw.h"
#include "base/peak.h"
#include "base/threadpool.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/matmul.h"

#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "roof_kernels.inc"

#define MAXTH 64

static double max_of(const double *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > m) m = v[i];
    return m;
}

/* ---- roofline measurements ---------------------------------------------------------------- */

typedef struct roof_job {
    int what; /* 1 fma, 2 bf16, 3 int8, 4 AMX bf16 (the read bandwidth: read_gbs) */
    long iters;
    float sink[MAXTH];
    double cpu[MAXTH];
} roof_job;

static hy_cpu_features g_cpu;

static void roof_run(void *arg, int ith, int nth) {
    roof_job *j = arg;
    const double c0 = cpu_s();
    (void)nth;
    switch (j->what) {
    case 1: j->sink[ith] = hy_peak_loop(g_cpu.avx512f ? HY_PEAK_FP32_ZMM : HY_PEAK_FP32_YMM, j->iters); break;
    case 2: j->sink[ith] = hy_peak_loop(HY_PEAK_BF16_ZMM, j->iters); break;
    case 4: j->sink[ith] = hy_peak_loop(HY_PEAK_AMX_BF16, j->iters); break;
    default: j->sink[ith] = hy_peak_loop(HY_PEAK_INT8_ZMM, j->iters); break;
    }
    j->cpu[ith] = cpu_s() - c0;
}

/* Best rate (units/s) of `reps` runs of job over the pool, on the longest thread-CPU time. */
static double roof_rate(hy_threadpool *tp, int nth, roof_job *j, double units, int reps) {
    double best = 0;
    hy_threadpool_run(tp, roof_run, j); /* warm-up */
    for (int r = 0; r < reps; r++) {
        hy_threadpool_run(tp, roof_run, j);
        const double dt = max_of(j->cpu, nth);
        if (units / dt > best) best = units / dt;
    }
    return best;
}

typedef struct roof {
    double read_gbs, fma_gf, bf16_gf, int8_gops, amx_gf;
} roof;

/* Best read bandwidth of `reps` passes over buf (n floats) after one warm-up pass, on the
 * longest thread-CPU time: base/membw.c, the figure `hyla bench` weighs decode against. */
static double read_gbs(hy_threadpool *tp, const float *buf, size_t n, int reps) {
    hy_membw m;
    hy_membw_measure(tp, buf, n, 1, &m); /* warm-up */
    hy_membw_measure(tp, buf, n, reps, &m);
    return m.gbs_cpu;
}

static roof measure_roof(hy_threadpool *tp, int nth, const float *buf, size_t n, bool amx) {
    roof r = {0};
    roof_job j = {.what = 1};
    r.read_gbs = read_gbs(tp, buf, n, 5);
    j.iters = 4000000;
    const hy_peak_kernel k32 = g_cpu.avx512f ? HY_PEAK_FP32_ZMM : HY_PEAK_FP32_YMM;
    r.fma_gf = roof_rate(tp, nth, &j, 1e-9 * hy_peak_loop_ops(k32, j.iters) * nth, 3);
    if (g_cpu.avx512_bf16) {
        j.what = 2;
        r.bf16_gf = roof_rate(tp, nth, &j, 1e-9 * hy_peak_loop_ops(HY_PEAK_BF16_ZMM, j.iters) * nth, 3);
    }
    if (g_cpu.avx512_vnni) {
        j.what = 3;
        r.int8_gops = roof_rate(tp, nth, &j, 1e-9 * hy_peak_loop_ops(HY_PEAK_INT8_ZMM, j.iters) * nth, 3);
    }
    if (amx) { /* the kernels' AMX tiles (bf16g with bf16 activations): their peak */
        j.what = 4;
        j.iters = 4000000 / 16;
        r.amx_gf = roof_rate(tp, nth, &j, 1e-9 * hy_peak_loop_ops(HY_PEAK_AMX_BF16, j.iters) * nth, 3);
    }
    return r;
}

/* ---- matrices ------------------------------------------------------------------------------ */

typedef struct bmat {
    hy_mat m;
    void *data; /* hy_alloc_pages: the pages the engine gives its weights */
    size_t data_bytes;
    float *scale;
    size_t bytes;
} bmat;

static uint64_t g_rng = 0x1234567;
static float frand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0) * 0.05f;
}

/* A rows x cols matrix in format f with random weights; quantized formats via the load-time
 * quantizers. The first copy is built from fp32 rows; further copies memcpy it. */
static bmat make(hy_wfmt f, int rows, int cols, const bmat *like) {
    bmat b;
    memset(&b, 0, sizeof b);
    b.m.fmt = f;
    b.m.rows = rows;
    b.m.cols = cols;
    const size_t n = (size_t)rows * cols;
    if (f == HY_WFMT_Q8 || f == HY_WFMT_Q4) {
        const size_t nb = (size_t)hy_q_blocks(rows), G = (size_t)hy_q_groups(cols);
        b.data_bytes = nb * hy_q_block_bytes(f, (int)G);
        b.data = hy_alloc_pages(b.data_bytes);
        b.scale = hy_calloc_aligned(nb * HY_Q_ROWS, 4);
        if (like) {
            memcpy(b.data, like->data, b.data_bytes);
            memcpy(b.scale, like->scale, nb * HY_Q_ROWS * 4);
        } else {
            float *w = malloc(sizeof(float) * HY_Q_ROWS * (size_t)cols);
            for (size_t blk = 0; blk < nb; blk++) {
                const int nr = rows - (int)blk * HY_Q_ROWS < HY_Q_ROWS ? rows - (int)blk * HY_Q_ROWS : HY_Q_ROWS;
                for (size_t i = 0; i < (size_t)nr * cols; i++) w[i] = frand();
                hy_q_pack_block(f, w, nr, cols, (int)blk, b.data, b.scale);
            }
            free(w);
        }
    } else {
        const bool f8 = f == HY_WFMT_FP8 || f == HY_WFMT_FP8G;
        const size_t es = f == HY_WFMT_F32 ? 4 : f8 ? 1 : 2;
        /* row groups: random values in the grouped layout directly (padding included) */
        const size_t ne = f == HY_WFMT_BF16G ? hy_wfmt_bytes(f, rows, cols) / 2
                          : f == HY_WFMT_FP8G ? hy_fp8g_code_bytes(rows, cols)
                                              : n;
        b.data_bytes = ne * es;
        b.data = hy_alloc_pages(b.data_bytes);
        if (like) memcpy(b.data, like->data, ne * es);
        else
            for (size_t i = 0; i < ne; i++) {
                const float v = frand();
                if (f == HY_WFMT_F32) ((float *)b.data)[i] = v;
                else if (f == HY_WFMT_BF16 || f == HY_WFMT_BF16G) ((uint16_t *)b.data)[i] = hy_f32_to_bf16(v);
                else if (f == HY_WFMT_F16) ((uint16_t *)b.data)[i] = hy_f32_to_f16(v);
                else ((uint8_t *)b.data)[i] = hy_fp8_e4m3_encode(v * 448.0f / 0.05f);
            }
        if (f8) {
            const size_t ns = (size_t)((rows + 127) / 128) * ((cols + 127) / 128);
            b.scale = hy_calloc_aligned(ns, 4);
            for (size_t i = 0; i < ns; i++) b.scale[i] = 0.05f / 448.0f;
            b.m.bs0 = b.m.bs1 = 128;
        }
    }
    b.m.data = b.data;
    b.m.scale = b.scale;
    /* the column panels the engine stores such matrices in (model/linears.c); the values are
     * random, so they need no reordering */
    b.m.panel = f == HY_WFMT_BF16 && hy_panel_wanted(cols);
    b.bytes = hy_mat_bytes(&b.m);
    return b;
}

static void bfree(bmat *b) {
    hy_free_pages(b->data, b->data_bytes);
    hy_free(b->scale);
}

/* Bytes the decode copies and the re-measuring read span: at least 256 MiB and twice the L3 (as
 * the C library reports it), so that they stream from DRAM. */
static size_t dram_span(void) {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    const size_t s = (size_t)256 << 20;
    return l3 > 0 && 2 * (size_t)l3 > s ? 2 * (size_t)l3 : s;
}

/* ---- timed matmul over the pool ------------------------------------------------------------ */

typedef struct mm_job {
    hy_matmul_fn fn;
    const hy_mat *W;
    int T;
    const float *x;
    float *y;
    hy_act act;
    unsigned char *scratch;
    size_t scratch_bytes;
    double cpu[MAXTH]; /* accumulated thread-CPU seconds */
} mm_job;

static void mm_run(void *arg, int ith, int nth) {
    mm_job *j = arg;
    const double c0 = cpu_s();
    const int a = hy_matmul_row_align(j->W->fmt), nb = (j->W->rows + a - 1) / a;
    int b0, b1;
    hy_split_range(nb, ith, nth, &b0, &b1);
    const int o0 = b0 * a, o1 = b1 * a < j->W->rows ? b1 * a : j->W->rows;
    if (o1 > o0)
        j->fn(j->W, j->T, j->x, (size_t)j->W->cols, j->y, (size_t)j->W->rows, o0, o1, false, j->act,
              j->scratch + (size_t)ith * j->scratch_bytes);
    j->cpu[ith] += cpu_s() - c0;
}

static const char *fmt_label(hy_wfmt f, hy_act act) {
    static char buf[32];
    snprintf(buf, sizeof buf, "%s%s", hy_wfmt_name(f), act == HY_ACT_BF16 ? " bf16-act" : "");
    return buf;
}

int main(int argc, char **argv) {
    const char *isa_req = NULL;
    bool quick = false, do_dec = true, do_pre = true;
    const char *only = NULL;
    int max_th = 2, Tp = 512;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa_req = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) max_th = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--decode")) do_pre = false;
        else if (!strcmp(argv[i], "--prefill")) do_dec = false;
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) Tp = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_matmul [--isa ref|avx2|avx512] [--quick] [--threads N] [--only FMT] "
                            "[--decode|--prefill] [--tokens T]\n");
            return 2;
        }
    }
    if (Tp < 1 || Tp > 512) {
        fprintf(stderr, "bench_matmul: --tokens takes 1-512\n");
        return 2;
    }
    if (max_th < 1 || max_th > MAXTH) max_th = 2;
    hy_err err;
    hy_cpu_kernels k;
    if (hy_cpu_kernels_init(&k, isa_req, &err)) {
        fprintf(stderr, "bench_matmul: %s\n", err.msg);
        return 1;
    }
    g_cpu = k.cpu;
    char desc[256];
    hy_cpu_describe(&g_cpu, desc, sizeof desc);
    printf("machine: %s\nkernels: %s%s%s%s%s\n", desc, hy_isa_name(k.isa), k.tune[0] ? " (" : "", k.tune,
           k.tune[0] ? " tuning; HYLA_TUNE)" : "", k.amx ? " + AMX (HYLA_AMX)" : "");

    /* the read buffer of the roofline and of the re-measuring before every decode row: 1 GiB
     * (256 MiB quick), at least dram_span() */
    const size_t span = dram_span();
    size_t buf_n = (size_t)(quick ? 256 : 1024) << 18; /* floats */
    if (buf_n < span / sizeof(float)) buf_n = span / sizeof(float) / 64 * 64;
    float *buf = hy_alloc_pages(buf_n * sizeof(float)); /* huge pages, as the weights */
    if (!buf) {
        fprintf(stderr, "bench_matmul: out of memory (%zu MiB read buffer)\n", (buf_n * sizeof(float)) >> 20);
        return 1;
    }
    for (size_t i = 0; i < buf_n; i++) buf[i] = (float)(i & 1023) * 1e-3f;

    int ths[2] = {1, max_th};
    const int nth_rows = max_th > 1 ? 2 : 1;
    hy_threadpool *tps[2] = {0};
    roof rf[2];
    for (int ti = 0; ti < nth_rows; ti++) {
        if (hy_threadpool_create(&tps[ti], ths[ti], &err)) {
            fprintf(stderr, "bench_matmul: %s\n", err.msg);
            return 1;
        }
        rf[ti] = measure_roof(tps[ti], ths[ti], buf, buf_n, k.amx);
        printf("roofline %d thr: read %.1f GB/s, fp32 FMA %.0f GFLOP/s, bf16 dot %.0f GFLOP/s, int8 dot %.0f Gop/s",
               ths[ti], rf[ti].read_gbs, rf[ti].fma_gf, rf[ti].bf16_gf, rf[ti].int8_gops);
        if (k.amx) printf(", AMX bf16 %.0f GFLOP/s", rf[ti].amx_gf);
        printf("\n");
    }
    const int max_cols = 17408;
    const size_t sb = hy_matmul_scratch_bytes(max_cols);
    unsigned char *scratch = hy_calloc_aligned((size_t)max_th * sb, 1);
    float *x = hy_calloc_aligned((size_t)Tp * max_cols, sizeof(float));
    float *y = hy_calloc_aligned((size_t)Tp * 248320, sizeof(float));
    for (size_t i = 0; i < (size_t)Tp * max_cols; i++) x[i] = frand() * 20.0f;

    static const struct { int rows, cols; const char *what; } shapes[] = {
        {1024, 3584, "0.8B down_proj"}, {3584, 1024, "0.8B gate/up"}, {248320, 1024, "0.8B lm_head"},
        {5120, 17408, "27B down_proj"}, {17408, 5120, "27B gate/up"},
    };
    static const hy_wfmt fmts[] = {HY_WFMT_BF16, HY_WFMT_BF16G, HY_WFMT_F32, HY_WFMT_F16, HY_WFMT_FP8, HY_WFMT_FP8G, HY_WFMT_Q8, HY_WFMT_Q4};
    const int nshape = quick ? 2 : (int)(sizeof shapes / sizeof shapes[0]);

    /* Decode rows are printed at the end, against the best read bandwidth seen over the whole
     * run (re-measured before every row: on a shared machine the bandwidth varies, and the best
     * figure is the machine's capability). */
    typedef struct drow { char label[64]; double gbs[2], wall[2], ms[2]; } drow;
    drow rows[64];
    int n_rows = 0;
    double best_read[2] = {rf[0].read_gbs, nth_rows > 1 ? rf[1].read_gbs : 0};
    for (int si = 0; si < nshape && do_dec; si++) {
        for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
            const hy_wfmt f = fmts[fi];
            if (only && strcmp(only, hy_wfmt_name(f))) continue;
            if (f == HY_WFMT_F32 && shapes[si].rows * (double)shapes[si].cols > 2e8) continue; /* 1 GB f32 */
            if (n_rows == 64) break;
            bmat first = make(f, shapes[si].rows, shapes[si].cols, NULL);
            const size_t per = first.bytes;
            int ncopy = (int)(span / per) + 1;
            if (ncopy > 4096) ncopy = 4096;
            bmat *cp = malloc(sizeof(bmat) * (size_t)ncopy);
            cp[0] = first;
            for (int c = 1; c < ncopy; c++) cp[c] = make(f, shapes[si].rows, shapes[si].cols, &first);
            drow *R = &rows[n_rows++];
            snprintf(R->label, sizeof R->label, "%-15s %6dx%-6d %-14s", shapes[si].what, shapes[si].rows,
                     shapes[si].cols, fmt_label(f, HY_ACT_F32));
            for (int ti = 0; ti < nth_rows; ti++) {
                const double rb = read_gbs(tps[ti], buf, buf_n, 3);
                if (rb > best_read[ti]) best_read[ti] = rb;
                mm_job j = {.fn = k.ops.matmul, .T = 1, .x = x, .y = y, .scratch = scratch, .scratch_bytes = sb};
                const int reps = quick ? 3 : 9;
                double best = 1e30, best_wall = 1e30;
                int c = 0;
                for (int r = 0; r < reps; r++) {
                    memset(j.cpu, 0, sizeof j.cpu);
                    const double t0 = now_s();
                    for (int i = 0; i < ncopy; i++, c = (c + 1) % ncopy) {
                        j.W = &cp[c].m;
                        hy_threadpool_run(tps[ti], mm_run, &j);
                    }
                    const double wall = (now_s() - t0) / ncopy, dt = max_of(j.cpu, ths[ti]) / ncopy;
                    if (dt < best) best = dt;
                    if (wall < best_wall) best_wall = wall;
                }
                R->gbs[ti] = (double)per / best / 1e9;
                R->wall[ti] = (double)per / best_wall / 1e9;
                R->ms[ti] = best * 1e3;
            }
            for (int c = 0; c < ncopy; c++) bfree(&cp[c]);
            free(cp);
        }
    }
    if (do_dec) {
        printf("\ndecode GEMV, T = 1: weight GB/s (fraction of the best read bandwidth seen: %.1f GB/s 1 thr", best_read[0]);
        if (nth_rows > 1) printf(", %.1f GB/s %d thr", best_read[1], ths[1]);
        printf(")\n  %-15s %-13s %-14s", "shape", "rows x cols", "format");
        for (int ti = 0; ti < nth_rows; ti++) printf("   %d thr: GB/s  frac   wall ms/call", ths[ti]);
        printf("\n");
        for (int r = 0; r < n_rows; r++) {
            printf("  %s", rows[r].label);
            for (int ti = 0; ti < nth_rows; ti++)
                printf("   %6.1f %5.2f %6.1f %7.3f", rows[r].gbs[ti], rows[r].gbs[ti] / best_read[ti], rows[r].wall[ti],
                       rows[r].ms[ti]);
            printf("\n");
        }
    }

    hy_free_pages(buf, buf_n * sizeof(float));
    printf("\nprefill GEMM, T = %d: GFLOP/s (fraction of the matching peak: fp32 FMA, bf16 dot, int8 dot%s)\n", Tp,
           k.amx ? "; bf16g bf16-act: AMX" : "");
    printf("  %-15s %-13s %-14s", "shape", "rows x cols", "format");
    for (int ti = 0; ti < nth_rows; ti++) printf("   %d thr: GFLOP/s frac    wall ms/call", ths[ti]);
    printf("\n");
    static const struct { hy_wfmt f; hy_act act; } pcfg[] = {
        {HY_WFMT_BF16, HY_ACT_F32}, {HY_WFMT_BF16, HY_ACT_BF16}, {HY_WFMT_BF16G, HY_ACT_F32}, {HY_WFMT_BF16G, HY_ACT_BF16},
        {HY_WFMT_F32, HY_ACT_F32}, {HY_WFMT_FP8, HY_ACT_F32}, {HY_WFMT_FP8, HY_ACT_BF16}, {HY_WFMT_FP8G, HY_ACT_F32},
        {HY_WFMT_FP8G, HY_ACT_BF16}, {HY_WFMT_Q8, HY_ACT_F32}, {HY_WFMT_Q4, HY_ACT_F32},
    };
    static const int pshapes[] = {0, 1, 3};
    for (size_t pi = 0; pi < (quick ? 2 : sizeof pshapes / sizeof pshapes[0]) && do_pre; pi++) {
        const int si = pshapes[pi];
        for (size_t ci = 0; ci < sizeof pcfg / sizeof pcfg[0]; ci++) {
            const hy_wfmt f = pcfg[ci].f;
            if (only && strcmp(only, hy_wfmt_name(f))) continue;
            if (f == HY_WFMT_F32 && si == 3) continue;
            bmat b = make(f, shapes[si].rows, shapes[si].cols, NULL);
            printf("  %-15s %6dx%-6d %-14s", shapes[si].what, shapes[si].rows, shapes[si].cols, fmt_label(f, pcfg[ci].act));
            const double flop = 2.0 * shapes[si].rows * (double)shapes[si].cols * Tp;
            for (int ti = 0; ti < nth_rows; ti++) {
                mm_job j = {.fn = k.ops.matmul, .W = &b.m, .T = Tp, .x = x, .y = y, .act = pcfg[ci].act,
                            .scratch = scratch, .scratch_bytes = sb};
                const int reps = si == 3 ? 2 : 3;
                double best = 1e30, best_wall = 1e30;
                hy_threadpool_run(tps[ti], mm_run, &j);
                for (int r = 0; r < reps; r++) {
                    memset(j.cpu, 0, sizeof j.cpu);
                    const double t0 = now_s();
                    hy_threadpool_run(tps[ti], mm_run, &j);
                    const double wall = now_s() - t0, dt = max_of(j.cpu, ths[ti]);
                    if (dt < best) best = dt;
                    if (wall < best_wall) best_wall = wall;
                }
                const double gf = flop / best / 1e9;
                /* the peak of the instruction the tier uses: avx512 has bf16 and int8 dot products;
                 * other tiers multiply in fp32 (bf16 activations) or have no measured int8 peak */
                const bool q = f == HY_WFMT_Q8 || f == HY_WFMT_Q4, z = k.isa == HY_ISA_AVX512;
                const bool amx = k.amx && f == HY_WFMT_BF16G && pcfg[ci].act == HY_ACT_BF16;
                const double peak = q     ? (z ? rf[ti].int8_gops : 0)
                                    : amx ? rf[ti].amx_gf
                                    : pcfg[ci].act == HY_ACT_BF16 && z ? rf[ti].bf16_gf
                                                                       : rf[ti].fma_gf;
                if (peak > 0) printf("   %7.1f %5.2f %7.1f %7.1f", gf, gf / peak, flop / best_wall / 1e9, best * 1e3);
                else printf("   %7.1f   n/a %7.1f %7.1f", gf, flop / best_wall / 1e9, best * 1e3);
            }
            printf("\n");
            fflush(stdout);
            bfree(&b);
        }
    }
    hy_free(x);
    hy_free(y);
    hy_free(scratch);
    for (int ti = 0; ti < nth_rows; ti++) hy_threadpool_free(tps[ti]);
    return 0;
}
