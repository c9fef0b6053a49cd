/*
 * `hyla bench -m DIR [-p 512[,N...]] [-n 128[,N...]] [-d 0[,D...]] [-t N] [-r R]
 *             [--weights auto|bf16|fp8|q8|q4] [--quantize-lm-head] [--quantize-gdn-ab] [--fast-prefill] [--fast-decode] [--[no-]mmap]
 *             [--kv-type f32|bf16|fp8]
 *             [--isa auto] [--chunk N] [--bw-mib M] [--bw-every N] [--seed S] [--no-warmup]
 *             [--interleave] [--profile] [-o md|csv]`
 *
 * llama-bench-like throughput table. For every depth d (tokens already in the sequence,
 * prefilled once, untimed) and every test: pp<N> = one prefill of N tokens, tg<N> = N
 * decode steps of one token. Each test runs once untimed (a short warm-up) and then R times;
 * every repetition starts from the same depth-d state (hy_seq_rewind), so runs are identical
 * work. Token ids are seeded random ids. With --interleave the repetitions take turns (every
 * test's repetition r before any test's r + 1), so a ratio of two tests (pp4096 against pp512)
 * does not depend on which minutes each ran in.
 *
 * Ratios, because this machine is shared and its bandwidth moves within seconds: the memory
 * read bandwidth is measured on the spot with as many threads (base/membw.h) right before
 * every repetition and, in tg tests, again after every --bw-every decoded tokens (untimed);
 * each stretch of timed work is weighed against the figures taken next to it, and BW GB/s
 * is their time-weighted mean. Likewise the compute peaks (base/peak.h: fp32 FMA, and the
 * bf16 dot where the CPU has one) right before and after every pp repetition: %peak is the
 * run's GFLOP/s over their mean, on CPU time (wall time in the csv too), against the bf16
 * peak for act bf16 where there is one (the AMX one where the kernels use AMX: "amx" in the
 * table, amx=1 in the csv's kernels line, whose bf16_peak columns then hold it), else the fp32
 * one. --bw-mib 0 skips both.
 *  - weights/tok: bytes of matrices a decode token streams (every linear, all of lm_head, one
 *    embedding row; hy_ctx_costs); state/tok: GDN state read + written, plus the KV cache
 *    read at the run's mean position and the new K/V written (reported separately).
 *  - %BW = weights/tok x t/s / bandwidth ("+s": with state bytes).
 *  - GFLOP/s counts the linear layers (2 x params x tokens; lm_head once per pp run, every
 *    step in tg) and attention scores + values (4 x heads x head_dim per visible key).
 * Each figure is given on elapsed time (t/s) and on CPU time (t/s cpu = tokens / (process CPU
 * time / threads), bandwidth on the slowest thread's CPU time): when other processes take the
 * cores the CPU-time figures still describe what the code does while it runs.
 * pp rows name the activations their matmuls used ("act f32", "act bf16" with --fast-prefill,
 * "act mixed" when the last prefill chunk is too short for bf16; csv column act).
 * Every run checks that its last logits are finite. Timings are printed, never asserted.
 */
#include "base/alloc.h"
#include "base/error.h"
#include "base/membw.h"
#include "base/peak.h"
#include "base/threadpool.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "kernels/matmul.h"
#include "model/forward.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 16

static void usage(FILE *f) {
    fprintf(f,
            "usage: hyla bench -m DIR [options]\n"
            "  -m, --model DIR     Hugging Face checkpoint directory (qwen3_5)\n"
            "  -p LIST             prompt lengths to prefill, comma separated (pp tests; default 512, 0 = none)\n"
            "  -n LIST             tokens to decode (tg tests; default 128, 0 = none)\n"
            "  -d LIST             context depths: tokens prefilled (untimed) before each test (default 0)\n"
            "  -t, --threads N     compute threads (default 2)\n"
            "  -r, --reps R        timed repetitions per test (default 5)\n"
            "  --weights FMT       matrix format: auto (as stored) | bf16 | fp8 | q8 | q4, converted at load\n"
            "  --quantize-lm-head  lm_head follows --weights too (default: kept as stored)\n"
            "  --quantize-gdn-ab   GDN in_proj_a / in_proj_b follow --weights too\n"
            "  --fast-prefill      bf16 activations in prefill matmuls\n"
            "  --fast-decode       bf16 activations in decode matmuls (bf16 / fp8: AMD AVX-512 BF16, AMX)\n"
            "  --kv-type T         attention KV cache: f32 (default) | bf16 | fp8\n"
            "  --mmap, --no-mmap   matrices used as stored: read from the mmap / always copied into memory\n"
            "                      (default: copied when they fit)\n"
            "  --isa NAME          CPU kernel tier: auto | ref | avx2 | avx512 (default auto: $HYLA_ISA or best)\n"
            "  --chunk N           tokens per internal prefill step (default %d)\n"
            "  --bw-mib M          buffer of the on-the-spot bandwidth measurement (default 512; 0 = skip it\n"
            "                      and the on-the-spot compute peaks)\n"
            "  --bw-every N        tg: measure the bandwidth again after every N decoded tokens (default 16;\n"
            "                      0 = once before each repetition)\n"
            "  --seed S            seed of the random token ids (default 1)\n"
            "  --no-warmup         skip the untimed warm-up run of each test\n"
            "  --interleave        run the tests' repetitions in turn (pp512, pp4096, pp512, ...) instead of\n"
            "                      one test after the other, so their ratio is taken over the same minutes\n"
            "  --profile           tg: also print where a decoded token's time goes (each layer's matrices by\n"
            "                      role, GDN / attention cores, barrier waits): ms per token, share, and the\n"
            "                      rate each phase read its matrices at against the measured bandwidth\n"
            "  -o md|csv           output format (default md)\n",
            HY_DEFAULT_MAX_CHUNK);
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long long proc_status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    long long v = 0;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = atoll(line + kl + 1);
            break;
        }
    fclose(f);
    return v * 1024;
}

static int parse_list(const char *opt, const char *s, int *out, int *n, int hi) {
    int32_t *v = NULL;
    int k = 0;
    if (hy_cli_parse_ids(opt, s, &v, &k)) return -1;
    if (k > MAX_LIST) {
        fprintf(stderr, "hyla bench: %s: at most %d values\n", opt, MAX_LIST);
        free(v);
        return -1;
    }
    for (int i = 0; i < k; i++) {
        if (v[i] > hi) {
            fprintf(stderr, "hyla bench: %s: %d is larger than %d\n", opt, (int)v[i], hi);
            free(v);
            return -1;
        }
        out[i] = (int)v[i];
    }
    *n = k;
    free(v);
    return 0;
}

/* mean and sample standard deviation */
static void stats(const double *x, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : 0;
    for (int i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

typedef struct bench {
    hy_ctx *ctx;
    hy_seq *seq;
    const hy_model *m;
    hy_gdn_state *snap; /* GDN state at the current depth */
    int depth;
    const int32_t *ids; /* [capacity] random ids */
    float *logits;      /* [vocab] */
    hy_threadpool *bw_tp;
    float *bw_buf;
    size_t bw_floats;
    int threads, reps, chunk;
    int bw_every; /* tg: tokens between bandwidth measurements, 0 = once per repetition */
    bool csv, fast_prefill, profile;
    hy_fwd_costs costs;
    bool all_finite;
} bench;

static hy_membw measure_bw(const bench *b) {
    hy_membw bw = {0, 0};
    if (b->bw_buf) hy_membw_measure(b->bw_tp, b->bw_buf, b->bw_floats, 3, &bw);
    return bw;
}

/* Iterations of each pass of the on-the-spot peaks: ~2 ms a pass, 3 passes, so a measurement
 * costs ~10-20 ms next to prefills of 0.1-10 s. */
#define PEAK_ITERS (1L << 20)

/* The AMX peak too where the fast prefill's matmuls run on AMX tiles (hy_ctx_amx). */
static bool uses_amx(const bench *b) { return b->fast_prefill && hy_ctx_amx(b->ctx); }

static hy_peak measure_peak(const bench *b) {
    hy_peak pk = {0, 0, 0, 0, 0, 0};
    if (b->bw_buf) hy_peak_measure(b->bw_tp, PEAK_ITERS, 3, uses_amx(b), &pk);
    return pk;
}

/* One run of a test from the depth state: pp (n tokens in one call) or tg (n one-token calls).
 * Returns 0, the wall / per-thread CPU seconds, and bw_s[0]: wall seconds x GB/s of bandwidth
 * measured next to the timed work (the bytes the machine could have read meanwhile, / 1e9),
 * bw_s[1]: the same on CPU seconds and CPU-time bandwidth figures; for pp, pk_s: wall (CPU)
 * seconds x the mean of the compute peaks measured right before and after the run, fp32 wall,
 * fp32 CPU, bf16 wall, bf16 CPU (the GFLOP the machine could have done meanwhile).
 * tg with bw_every > 0 decodes in segments of bw_every tokens and measures the bandwidth
 * between them (untimed): each segment is weighed against the mean of the figures taken right
 * before and right after it, because this machine's bandwidth moves within a few seconds (one
 * figure per repetition of a 128-token run gave fractions that scattered by +-16%). */
static int run_test(bench *b, bool pp, int n, double *wall, double *cpu, double bw_s[2], double pk_s[4],
                    hy_err *err) {
    if (hy_seq_rewind(b->seq, b->depth, b->snap, err)) return -1;
    *wall = *cpu = bw_s[0] = bw_s[1] = 0;
    for (int i = 0; i < 4; i++) pk_s[i] = 0;
    const int seg = pp || b->bw_every <= 0 ? n : b->bw_every;
    const hy_peak pk0 = pp ? measure_peak(b) : (hy_peak){0, 0, 0, 0, 0, 0};
    hy_membw bw = measure_bw(b);
    for (int i0 = 0; i0 < n; i0 += seg) {
        const int i1 = i0 + seg < n ? i0 + seg : n;
        const double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (pp) {
            if (hy_forward(b->ctx, b->seq, b->ids + b->depth, n, b->logits, false, err)) return -1;
        } else {
            for (int i = i0; i < i1; i++)
                if (hy_forward(b->ctx, b->seq, b->ids + b->depth + i, 1, b->logits, false, err)) return -1;
        }
        const double w = clock_s(CLOCK_MONOTONIC) - w0, c = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / b->threads;
        *wall += w;
        *cpu += c;
        hy_membw next = bw;
        if (seg < n) { /* segments: weigh each against the figures before and after it */
            hy_membw after = measure_bw(b);
            next = after;
            after.gbs_wall = 0.5 * (bw.gbs_wall + after.gbs_wall);
            after.gbs_cpu = 0.5 * (bw.gbs_cpu + after.gbs_cpu);
            bw = after;
        }
        bw_s[0] += w * bw.gbs_wall;
        bw_s[1] += c * bw.gbs_cpu;
        bw = next;
    }
    if (pp) {
        const hy_peak pk1 = measure_peak(b);
        pk_s[0] = *wall * 0.5 * (pk0.fp32_wall + pk1.fp32_wall);
        pk_s[1] = *cpu * 0.5 * (pk0.fp32_cpu + pk1.fp32_cpu);
        /* bf16 activations: the peak of what the kernels multiply them with (vdpbf16ps, or AMX) */
        const bool amx = uses_amx(b);
        pk_s[2] = *wall * 0.5 * (amx ? pk0.amx_wall + pk1.amx_wall : pk0.bf16_wall + pk1.bf16_wall);
        pk_s[3] = *cpu * 0.5 * (amx ? pk0.amx_cpu + pk1.amx_cpu : pk0.bf16_cpu + pk1.bf16_cpu);
    }
    const int V = b->m->hp.vocab_size;
    for (int v = 0; v < V; v++)
        if (!isfinite(b->logits[v])) {
            b->all_finite = false;
            break;
        }
    return 0;
}

static void print_header(const bench *b) {
    if (b->csv) {
        printf("test,depth,tokens,reps,tps,tps_sd,tps_cpu,tps_cpu_sd,weights_bytes_per_tok,state_bytes_per_tok,"
               "bw_gbs,bw_cpu_gbs,bw_frac,bw_frac_sd,bw_frac_state,bw_frac_cpu,gflops,gflops_cpu,finite,act,"
               "fp32_peak_gflops,fp32_peak_cpu_gflops,fp32_peak_frac,fp32_peak_frac_cpu,"
               "bf16_peak_gflops,bf16_peak_cpu_gflops,bf16_peak_frac,bf16_peak_frac_cpu\n");
        return;
    }
    printf("| %-14s | %17s | %9s | %8s | %8s | %7s | %13s | %6s | %8s | %8s | %8s | %13s |\n", "test", "t/s",
           "t/s cpu", "GB/tok w", "MB/tok s", "BW GB/s", "%BW w", "%BW w+s", "%BW cpu", "GFLOP/s", "GF/s cpu",
           "%peak cpu");
    printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "----------------", "------------------:", "----------:",
           "---------:", "---------:", "--------:", "--------------:", "-------:", "---------:", "---------:",
           "---------:", "--------------:");
    fflush(stdout);
}

/* One test (pp<n> or tg<n>) and the figures of its repetitions so far. */
typedef struct test_run {
    bool pp;
    int n, done;
    double flops, state_per_tok; /* per run; state bytes per decode token */
    double tps[64], tpsc[64], frac[64], fracs[64], fracc[64], bww[64], bwc[64];
    double pk[4][64], pkf[4][64]; /* pp: peaks next to each rep (fp32 wall, fp32 CPU, bf16 wall, bf16
                                   * CPU; time-weighted) and the rep's GFLOP/s over them */
    hy_fwd_profile prof;          /* tg with --profile: the reps' decode profiles added up */
} test_run;

static void test_init(const bench *b, bool pp, int n, test_run *t) {
    const hy_fwd_costs *k = &b->costs;
    memset(t, 0, sizeof *t);
    t->pp = pp;
    t->n = n;
    double state_bytes = 0;
    for (int i = 0; i < n; i++) {
        const double nkv = (double)b->depth + i + 1;
        t->flops += 2.0 * (double)k->linear_params + (double)k->attn_flops_per_key * nkv;
        if (!pp) {
            t->flops += 2.0 * (double)k->lm_head_params;
            state_bytes += 2.0 * (double)k->gdn_state_bytes + (double)k->kv_bytes_per_pos * (nkv + 1);
        }
    }
    if (pp) t->flops += 2.0 * (double)k->lm_head_params;
    t->state_per_tok = pp ? 0 : state_bytes / n;
}

static int test_warmup(bench *b, const test_run *t, hy_err *err) {
    double wall, cpu, bw_s[2], pk_s[4];
    const int nw = t->pp ? (t->n < 128 ? t->n : 128) : (t->n < 4 ? t->n : 4);
    return run_test(b, t->pp, nw, &wall, &cpu, bw_s, pk_s, err);
}

static int test_rep(bench *b, test_run *t, hy_err *err) {
    double wall = 0, cpu = 0, bw_s[2] = {0, 0}, pk_s[4] = {0, 0, 0, 0};
    const int n = t->n, r = t->done;
    const bool prof = b->profile && !t->pp;
    if (prof && hy_ctx_profile_start(b->ctx, err)) return -1;
    const int rc = run_test(b, t->pp, n, &wall, &cpu, bw_s, pk_s, err);
    if (prof) {
        hy_fwd_profile p;
        hy_ctx_profile_stop(b->ctx, &p);
        hy_fwd_profile_add(&t->prof, &p);
    }
    if (rc) return -1;
    if (!(cpu > 0)) cpu = wall;
    t->tps[r] = n / wall;
    t->tpsc[r] = n / cpu;
    t->bww[r] = bw_s[0] / wall; /* time-weighted means of the figures next to the work */
    t->bwc[r] = bw_s[1] / cpu;
    const double wb = (double)b->costs.decode_weight_bytes * n;
    t->frac[r] = bw_s[0] > 0 ? wb / (bw_s[0] * 1e9) : 0;
    t->fracs[r] = bw_s[0] > 0 ? (wb + t->state_per_tok * n) / (bw_s[0] * 1e9) : 0;
    t->fracc[r] = bw_s[1] > 0 ? wb / (bw_s[1] * 1e9) : 0;
    for (int i = 0; i < 4; i++) {
        const double sec = i % 2 ? cpu : wall;
        t->pk[i][r] = pk_s[i] / sec;
        t->pkf[i][r] = pk_s[i] > 0 ? t->flops / 1e9 / pk_s[i] : 0;
    }
    t->done++;
    return 0;
}

static void test_print(const bench *b, const test_run *t) {
    const hy_fwd_costs *k = &b->costs;
    const bool pp = t->pp;
    const int n = t->n, R = t->done;
    const double state_per_tok = t->state_per_tok;
    double m_tps, s_tps, m_tpsc, s_tpsc, m_f, s_f, m_fs, s_fs, m_fc, s_fc, m_bw, s_bw, m_bwc, s_bwc;
    stats(t->tps, R, &m_tps, &s_tps);
    stats(t->tpsc, R, &m_tpsc, &s_tpsc);
    stats(t->frac, R, &m_f, &s_f);
    stats(t->fracs, R, &m_fs, &s_fs);
    stats(t->fracc, R, &m_fc, &s_fc);
    stats(t->bww, R, &m_bw, &s_bw);
    stats(t->bwc, R, &m_bwc, &s_bwc);
    double m_pk[4], m_pkf[4], sd;
    for (int i = 0; i < 4; i++) {
        stats(t->pk[i], R, &m_pk[i], &sd);
        stats(t->pkf[i], R, &m_pkf[i], &sd);
    }
    const double gf = t->flops / n * m_tps / 1e9, gfc = t->flops / n * m_tpsc / 1e9;
    /* activations of the run's matmuls: bf16 with --fast-prefill for prefill steps of at least
     * HY_MATMUL_GEMM_MIN_T tokens (kernels/matmul.h), fp32 otherwise ("mixed": a last chunk
     * shorter than that) */
    const char *act = "f32";
    if (pp && b->fast_prefill && n >= HY_MATMUL_GEMM_MIN_T)
        act = b->chunk > 0 && n % b->chunk && n % b->chunk < HY_MATMUL_GEMM_MIN_T ? "mixed" : "bf16";
    char name[64];
    if (b->depth) snprintf(name, sizeof name, "%s%d @ d%d%s%s", pp ? "pp" : "tg", n, b->depth, pp ? " act " : "", pp ? act : "");
    else snprintf(name, sizeof name, "%s%d%s%s", pp ? "pp" : "tg", n, pp ? " act " : "", pp ? act : "");
    if (b->csv) {
        printf("%s%d,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,", pp ? "pp" : "tg", n, b->depth, n, R, m_tps, s_tps, m_tpsc,
               s_tpsc);
        if (pp) printf(",,%.3f,%.3f,,,,,", m_bw, m_bwc); /* bytes/token and %BW are decode figures */
        else
            printf("%.0f,%.0f,%.3f,%.3f,%.5f,%.5f,%.5f,%.5f,", (double)k->decode_weight_bytes, state_per_tok, m_bw,
                   m_bwc, m_f, s_f, m_fs, m_fc);
        printf("%.3f,%.3f,%d,%s", gf, gfc, b->all_finite ? 1 : 0, act);
        if (pp && m_pk[1] > 0)
            printf(",%.1f,%.1f,%.5f,%.5f", m_pk[0], m_pk[1], m_pkf[0], m_pkf[1]);
        else printf(",,,,");
        if (pp && m_pk[3] > 0)
            printf(",%.1f,%.1f,%.5f,%.5f\n", m_pk[2], m_pk[3], m_pkf[2], m_pkf[3]);
        else printf(",,,,\n");
    } else if (pp) {
        /* against the bf16 dot peak (AMX where the kernels use it) for bf16 activations where the
         * CPU has one, else fp32 FMA */
        const bool b16 = strcmp(act, "bf16") == 0 && m_pk[3] > 0;
        char pb[32] = "-";
        if (m_pk[b16 ? 3 : 1] > 0)
            snprintf(pb, sizeof pb, "%5.1f%% %s", 100 * m_pkf[b16 ? 3 : 1], !b16 ? "fp32" : uses_amx(b) ? "amx" : "bf16");
        printf("| %-14s | %9.2f ± %5.2f | %9.2f | %8s | %8s | %7s | %13s | %6s | %8s | %8.1f | %8.1f | %13s |\n",
               name, m_tps, s_tps, m_tpsc, "-", "-", "-", "-", "-", "-", gf, gfc, pb);
    } else {
        char fb[32];
        snprintf(fb, sizeof fb, "%5.1f%% ± %4.1f", 100 * m_f, 100 * s_f);
        printf("| %-14s | %9.2f ± %5.2f | %9.2f | %8.3f | %8.2f | %7.1f | %13s | %5.1f%% | %7.1f%% | %8.1f | %8.1f | %13s |\n",
               name, m_tps, s_tps, m_tpsc, (double)k->decode_weight_bytes / 1e9, state_per_tok / 1e6, m_bw, fb,
               100 * m_fs, 100 * m_fc, gf, gfc, "-");
    }
    fflush(stdout);
}

/* --profile: the tg test's decode profile (forward.h), a row per phase. Times are per token
 * and per thread (the mean of the threads), rates are all threads' bytes over that time, so a
 * matrix phase's rate compares with the bandwidth measured next to the run (its mean here). */
static void profile_print(const bench *b, const test_run *t) {
    const hy_fwd_profile *p = &t->prof;
    if (t->pp || !p->steps || !p->threads) return;
    double m_bw, sd, in_phases = 0;
    stats(t->bww, t->done, &m_bw, &sd);
    const double per = 1.0 / ((double)p->steps * p->threads); /* thread-seconds -> seconds a token */
    if (!b->csv) {
        printf("\ndecode profile, tg%d (%llu tokens, %d threads; ", t->n, (unsigned long long)p->steps, p->threads);
        if (m_bw > 0) printf("measured bandwidth %.1f GB/s):\n", m_bw);
        else printf("bandwidth not measured):\n");
        printf("| %-29s | %9s | %6s | %9s | %8s | %6s |\n", "phase", "ms/tok", "share", "MB/tok", "GB/s", "%BW");
        printf("|%s|%s|%s|%s|%s|%s|\n", "-------------------------------", "----------:", "-------:", "----------:",
               "---------:", "-------:");
    }
    for (int i = 0; i <= HY_PH_COUNT; i++) {
        const bool rest = i == HY_PH_COUNT;
        const double s = rest ? p->step_s - in_phases : p->s[i], bytes = rest ? 0 : p->bytes[i];
        if (!rest) in_phases += s;
        if (!rest && s <= 0) continue;
        const double ms = s * per * 1e3, mb = bytes / (double)p->steps / 1e6, share = p->step_s > 0 ? s / p->step_s : 0;
        const double gbs = ms > 0 && bytes > 0 ? mb / ms : 0;
        const char *name = rest ? "other (norms/embedding/job)" : hy_fwd_phase_name((hy_fwd_phase)i);
        if (b->csv)
            printf("# profile,tg%d,%s,%.4f,%.4f,%.3f,%.2f,%.4f\n", t->n, name, ms, share, mb, gbs,
                   m_bw > 0 ? gbs / m_bw : 0);
        else if (gbs > 0 && m_bw > 0)
            printf("| %-29s | %9.3f | %5.1f%% | %9.2f | %8.1f | %5.1f%% |\n", name, ms, 100 * share, mb, gbs,
                   100 * gbs / m_bw);
        else if (gbs > 0)
            printf("| %-29s | %9.3f | %5.1f%% | %9.2f | %8.1f | %6s |\n", name, ms, 100 * share, mb, gbs, "");
        else printf("| %-29s | %9.3f | %5.1f%% | %9s | %8s | %6s |\n", name, ms, 100 * share, "", "", "");
    }
    if (!b->csv) printf("| %-29s | %9.3f | %5.1f%% |\n\n", "step", p->step_s * per * 1e3, 100.0);
    fflush(stdout);
}

HY_CMD(bench) {
    const char *dir = NULL, *weights = "auto", *isa = NULL, *fmt = "md";
    int pps[MAX_LIST] = {512}, n_pp = 1, tgs[MAX_LIST] = {128}, n_tg = 1, depths[MAX_LIST] = {0}, n_d = 1;
    int threads = 2, reps = 5, chunk = 0, bw_mib = 512, seed = 1, bw_every = 16;
    bool warmup = true, fast_prefill = false, fast_decode = false, interleave = false, profile = false;
    unsigned quant_flags = 0;
    hy_wres res = HY_WRES_AUTO;
    hy_kv_type kv_type = HY_KV_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_val) {
            dir = argv[++i];
        } else if (!strcmp(a, "-p") && has_val) {
            if (parse_list("-p", argv[++i], pps, &n_pp, 1 << 22)) return 2;
        } else if (!strcmp(a, "-n") && has_val) {
            if (parse_list("-n", argv[++i], tgs, &n_tg, 1 << 20)) return 2;
        } else if (!strcmp(a, "-d") && has_val) {
            if (parse_list("-d", argv[++i], depths, &n_d, 1 << 22)) return 2;
        } else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && has_val) {
            if (hy_cli_parse_int("--threads", argv[++i], 1, 256, &threads)) return 2;
        } else if ((!strcmp(a, "-r") || !strcmp(a, "--reps")) && has_val) {
            if (hy_cli_parse_int("--reps", argv[++i], 1, 64, &reps)) return 2;
        } else if (!strcmp(a, "--weights") && has_val) {
            weights = argv[++i];
        } else if (!strcmp(a, "--isa") && has_val) {
            isa = argv[++i];
        } else if (!strcmp(a, "--chunk") && has_val) {
            if (hy_cli_parse_int("--chunk", argv[++i], 1, 65536, &chunk)) return 2;
        } else if (!strcmp(a, "--bw-mib") && has_val) {
            if (hy_cli_parse_int("--bw-mib", argv[++i], 0, 1 << 16, &bw_mib)) return 2;
        } else if (!strcmp(a, "--bw-every") && has_val) {
            if (hy_cli_parse_int("--bw-every", argv[++i], 0, 1 << 20, &bw_every)) return 2;
        } else if (!strcmp(a, "--seed") && has_val) {
            if (hy_cli_parse_int("--seed", argv[++i], 0, 1 << 30, &seed)) return 2;
        } else if (!strcmp(a, "--quantize-lm-head") || !strcmp(a, "--quant-lm-head")) {
            /* the spelling of run / serve / inspect; the short one is what bench took before */
            quant_flags |= HY_QUANT_LM_HEAD;
        } else if (!strcmp(a, "--quantize-gdn-ab") || !strcmp(a, "--quant-gdn-ab")) {
            quant_flags |= HY_QUANT_GDN_AB;
        } else if (!strcmp(a, "--fast-prefill")) {
            fast_prefill = true;
        } else if (!strcmp(a, "--fast-decode")) {
            fast_decode = true;
        } else if (!strcmp(a, "--mmap") || !strcmp(a, "--no-mmap")) {
            res = a[2] == 'm' ? HY_WRES_MMAP : HY_WRES_COPY;
        } else if (!strcmp(a, "--kv-type") && has_val) {
            if (hy_kv_type_parse(argv[++i], &kv_type)) {
                fprintf(stderr, "hyla bench: --kv-type expects f32, bf16 or fp8, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--no-warmup")) {
            warmup = false;
        } else if (!strcmp(a, "--interleave")) {
            interleave = true;
        } else if (!strcmp(a, "--profile")) {
            profile = true;
        } else if (!strcmp(a, "-o") && has_val) {
            fmt = argv[++i];
            if (strcmp(fmt, "md") && strcmp(fmt, "csv")) {
                fprintf(stderr, "hyla bench: -o expects md or csv, got '%s'\n", fmt);
                return 2;
            }
        } else {
            fprintf(stderr, "hyla bench: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "hyla bench: -m DIR is required\n");
        usage(stderr);
        return 2;
    }
    const int wreq = hy_wreq_parse(weights);
    if (wreq < 0) {
        fprintf(stderr, "hyla bench: --weights expects auto, bf16, fp8, q8 or q4, got '%s'\n", weights);
        return 2;
    }
    int max_d = 0, max_run = 1;
    for (int i = 0; i < n_d; i++) max_d = depths[i] > max_d ? depths[i] : max_d;
    for (int i = 0; i < n_pp; i++) max_run = pps[i] > max_run ? pps[i] : max_run;
    for (int i = 0; i < n_tg; i++) max_run = tgs[i] > max_run ? tgs[i] : max_run;
    const long long cap = (long long)max_d + max_run;
    if (cap > (1LL << 30)) {
        fprintf(stderr, "hyla bench: depth + test length %lld is too large\n", cap);
        return 2;
    }

    int rc = 1;
    hy_err err;
    hy_err_clear(&err);
    hy_model *m = NULL;
    bench b;
    memset(&b, 0, sizeof b);
    b.threads = threads;
    b.reps = reps;
    b.bw_every = bw_every;
    b.profile = profile;
    b.csv = !strcmp(fmt, "csv");
    b.fast_prefill = fast_prefill;
    b.all_finite = true;
    int32_t *ids = NULL;
    test_run *tests = calloc(2 * MAX_LIST, sizeof *tests);
    if (!tests) {
        hy_err_set(&err, HY_E_NOMEM, "out of memory");
        goto fail;
    }
    if (hy_model_load(&m, dir, &err)) goto fail;
    b.m = m;
    if (chunk == 0) chunk = HY_DEFAULT_MAX_CHUNK;
    b.chunk = chunk;
    hy_ctx_opts o = {.n_threads = threads, .max_chunk = chunk, .isa = isa, .weights = (hy_wreq)wreq,
                     .quant_flags = quant_flags, .weights_res = res, .fast_prefill = fast_prefill,
                     .fast_decode = fast_decode, .kv_type = kv_type};
    if (hy_ctx_create(&b.ctx, m, &o, &err) || hy_seq_create_kv(&b.seq, m, (int)cap, hy_ctx_kv_type(b.ctx), &err)) goto fail;
    const hy_gdn_state *gs = hy_seq_gdn_state(b.seq);
    if (hy_gdn_state_create(&b.snap, gs->n_layers, &gs->d, gs->conv_kernel, &err)) goto fail;
    hy_ctx_costs(b.ctx, &b.costs);
    const int V = m->hp.vocab_size;
    ids = malloc(sizeof(int32_t) * (size_t)cap);
    b.logits = malloc(sizeof(float) * (size_t)V);
    if (!ids || !b.logits) {
        hy_err_set(&err, HY_E_NOMEM, "out of memory for %lld token ids", cap);
        goto fail;
    }
    uint64_t r = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 12345;
    for (long long i = 0; i < cap; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        ids[i] = (int32_t)(r % (uint64_t)V);
    }
    b.ids = ids;
    if (bw_mib > 0) {
        b.bw_floats = (size_t)bw_mib << 18;
        /* the pages the weights get (hy_alloc_pages): 4 KiB pages read 10-20% slower here, 30-50%
         * on fast-memory minutes, and the limit is what the machine reads at best */
        b.bw_buf = hy_alloc_pages(b.bw_floats * sizeof(float));
        if (!b.bw_buf) {
            hy_err_set(&err, HY_E_NOMEM, "cannot allocate the %d MiB bandwidth buffer", bw_mib);
            goto fail;
        }
        for (size_t i = 0; i < b.bw_floats; i += 1024) b.bw_buf[i] = 1.0f; /* own every page */
        if (hy_threadpool_create(&b.bw_tp, threads, &err)) goto fail;
    }

    const hy_fwd_costs *k = &b.costs;
    const char *pre = b.csv ? "# " : "";
    printf("%smodel: %s (%d layers, hidden %d, vocab %d)\n", pre, dir, m->hp.num_hidden_layers, m->hp.hidden_size, V);
    const hy_wres_used ru = hy_ctx_linears(b.ctx)->res;
    printf("%sweights: %s%s; decode streams %.3f GB/token (linears %.3f Gparams, lm_head %.3f Gparams); GDN state "
           "%.2f MB; KV %.1f KiB/position (%s)\n",
           pre, weights,
           ru == HY_WRES_USED_COPY   ? " (as-stored matrices copied into memory)"
           : ru == HY_WRES_USED_MMAP ? " (as-stored matrices read from the mmap)"
                                     : "",
           k->decode_weight_bytes / 1e9, k->linear_params / 1e9, k->lm_head_params / 1e9,
           k->gdn_state_bytes / 1e6, k->kv_bytes_per_pos / 1024.0, hy_kv_type_name(kv_type));
    printf("%skernels: %s%s%s%s%s, %d threads, %d reps (+%s warm-up), chunk %d%s%s%s%s, bandwidth measured before every rep "
           "on %d MiB%s\n",
           pre, hy_ctx_isa(b.ctx), hy_ctx_tune(b.ctx)[0] ? " (" : "", hy_ctx_tune(b.ctx),
           hy_ctx_tune(b.ctx)[0] ? " tuning)" : "", hy_ctx_amx(b.ctx) ? " + AMX" : "", threads, reps, warmup ? "1" : "no", chunk, fast_prefill ? ", fast prefill" : "",
           fast_decode ? ", fast decode" : "",
           quant_flags & HY_QUANT_LM_HEAD ? ", quantized lm_head" : "",
           quant_flags & HY_QUANT_GDN_AB ? ", quantized GDN a/b" : "", bw_mib,
           bw_mib > 0 ? ", compute peaks before and after every pp rep" : "");
    if (!b.csv) printf("(machine may be shared: compare the ratios and the cpu columns, not absolute wall figures)\n\n");
    print_header(&b);

    for (int di = 0; di < n_d; di++) {
        hy_seq_reset(b.seq);
        if (depths[di] > 0) {
            const double w0 = clock_s(CLOCK_MONOTONIC);
            if (hy_forward(b.ctx, b.seq, ids, depths[di], NULL, false, &err)) goto fail;
            if (!b.csv)
                printf("| (depth %d prefilled in %.2f s, untimed) |\n", depths[di], clock_s(CLOCK_MONOTONIC) - w0);
        }
        b.depth = depths[di];
        hy_gdn_state_copy(b.snap, hy_seq_gdn_state(b.seq));
        int nt = 0;
        for (int i = 0; i < n_pp; i++)
            if (pps[i] > 0) test_init(&b, true, pps[i], &tests[nt++]);
        for (int i = 0; i < n_tg; i++)
            if (tgs[i] > 0) test_init(&b, false, tgs[i], &tests[nt++]);
        if (interleave) { /* warm-ups first, then repetition r of every test before r + 1 */
            for (int i = 0; i < nt && warmup; i++)
                if (test_warmup(&b, &tests[i], &err)) goto fail;
            for (int rep = 0; rep < reps; rep++)
                for (int i = 0; i < nt; i++)
                    if (test_rep(&b, &tests[i], &err)) goto fail;
            for (int i = 0; i < nt; i++) test_print(&b, &tests[i]);
            for (int i = 0; i < nt; i++) profile_print(&b, &tests[i]);
        } else {
            for (int i = 0; i < nt; i++) {
                if (warmup && test_warmup(&b, &tests[i], &err)) goto fail;
                for (int rep = 0; rep < reps; rep++)
                    if (test_rep(&b, &tests[i], &err)) goto fail;
                test_print(&b, &tests[i]);
                profile_print(&b, &tests[i]);
            }
        }
    }
    if (b.csv) {
        printf("# memory: context_bytes=%zu seq_reserved_bytes=%zu kv_capacity=%lld kv_used_bytes=%.0f "
               "gdn_state_bytes=%llu peak_rss_bytes=%lld bw_buffer_bytes=%zu\n",
               hy_ctx_bytes(b.ctx), hy_seq_bytes(b.seq), cap, (double)k->kv_bytes_per_pos * hy_seq_pos(b.seq),
               (unsigned long long)k->gdn_state_bytes, proc_status_kb("VmHWM"), b.bw_floats * sizeof(float));
        printf("# logits: %s\n", b.all_finite ? "finite" : "non-finite");
        printf("# kernels: %s threads=%d tune=%s amx=%d\n", hy_ctx_isa(b.ctx), threads,
               hy_ctx_tune(b.ctx)[0] ? hy_ctx_tune(b.ctx) : "-", hy_ctx_amx(b.ctx) ? 1 : 0);
    } else {
        printf("\nmemory: context %.1f MiB, sequence %.1f MiB reserved (KV capacity %lld positions, %.1f MiB used at "
               "the end; GDN state %.1f MiB), peak RSS %.1f MiB (incl. %d MiB bandwidth buffer)\n",
               hy_ctx_bytes(b.ctx) / 1048576.0, hy_seq_bytes(b.seq) / 1048576.0, cap,
               (double)k->kv_bytes_per_pos * hy_seq_pos(b.seq) / 1048576.0, k->gdn_state_bytes / 1048576.0,
               proc_status_kb("VmHWM") / 1048576.0, bw_mib);
        printf("logits: %s\n", b.all_finite ? "all finite" : "NON-FINITE values seen");
    }
    rc = b.all_finite ? 0 : 1;
    if (!b.all_finite) hy_err_set(&err, HY_E_INVALID, "non-finite logits");
fail:
    if (rc) fprintf(stderr, "hyla bench: %s\n", err.msg);
    hy_threadpool_free(b.bw_tp);
    hy_free_pages(b.bw_buf, b.bw_floats * sizeof(float));
    free(ids);
    free(tests);
    free(b.logits);
    hy_gdn_state_free(b.snap);
    hy_seq_free(b.seq);
    hy_ctx_free(b.ctx);
    hy_model_free(m);
    return rc;
}
