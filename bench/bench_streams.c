/* Aggregate decode throughput with concurrent streams through hy_forward_batch: for each
 * stream count n (default 1,4,8,16), n sequences each take one token per step in one batched
 * step; tokens/s = n x steps / time, and the ratio to 1 stream (the batched decode reads the
 * weights once per step for all n, so the ratio grows while decode is bandwidth-bound).
 * Times: wall, and process CPU time / threads (the machine may be shared); best of reps, the
 * stream counts taking turns within each rep; "x paired": median over reps of the ratio to one
 * stream in the same rep.
 * Usage: bench_streams MODEL_DIR [threads=2] [steps=8] [reps=2] [streams=1,4,8,16]
 *        [weights=auto|bf16|fp8|q8|q4] (as hyla's --weights) [act=f32|bf16] (bf16: --fast-decode)
 * Without MODEL_DIR it says so and exits 0 (scripts/run-bench passes the 0.8B-shaped random
 * model). Prints a table; no asserts. */
#include "model/forward.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define MAX_STREAMS 256

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("bench_streams: no model given (usage: bench_streams MODEL_DIR [threads] [steps] [reps] [streams] "
               "[weights]); skipped\n");
        return 0;
    }
    const int threads = argc > 2 ? atoi(argv[2]) : 2, steps = argc > 3 ? atoi(argv[3]) : 8,
              reps = argc > 4 ? atoi(argv[4]) : 2;
    const char *list = argc > 5 ? argv[5] : "1,4,8,16";
    const int wreq = hy_wreq_parse(argc > 6 ? argv[6] : "auto");
    const char *act = argc > 7 ? argv[7] : "f32";
    if (strcmp(act, "f32") && strcmp(act, "bf16")) {
        fprintf(stderr, "bench_streams: act '%s': expected f32 or bf16\n", act);
        return 1;
    }
    if (wreq < 0) {
        fprintf(stderr, "bench_streams: weights '%s': expected auto, bf16, fp8, q8 or q4\n", argv[6]);
        return 1;
    }
    int ns[32], n_ns = 0, max_n = 0;
    for (const char *p = list; *p && n_ns < 32;) {
        int v = atoi(p);
        if (v < 1 || v > MAX_STREAMS) {
            fprintf(stderr, "bench_streams: stream count %d outside [1, %d]\n", v, MAX_STREAMS);
            return 1;
        }
        ns[n_ns++] = v;
        if (v > max_n) max_n = v;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    if (threads < 1 || steps < 1 || reps < 1 || n_ns == 0) {
        fprintf(stderr, "bench_streams: bad arguments\n");
        return 1;
    }
    hy_err err;
    hy_model *m = NULL;
    if (hy_model_load(&m, argv[1], &err)) {
        fprintf(stderr, "bench_streams: %s\n", err.msg);
        return 1;
    }
    hy_ctx *ctx = NULL;
    hy_ctx_opts o = {.n_threads = threads, .weights = (hy_wreq)wreq, .fast_decode = !strcmp(act, "bf16")};
    if (hy_ctx_create(&ctx, m, &o, &err)) {
        fprintf(stderr, "bench_streams: %s\n", err.msg);
        hy_model_free(m);
        return 1;
    }
    const int V = m->hp.vocab_size, cap = steps + 2;
    hy_seq **seqs = calloc((size_t)max_n, sizeof *seqs);
    int32_t *ids = malloc(sizeof *ids * (size_t)max_n);
    float *logits = malloc(sizeof(float) * (size_t)max_n * (size_t)V);
    if (!seqs || !ids || !logits) {
        fprintf(stderr, "bench_streams: out of memory\n");
        return 1;
    }
    for (int i = 0; i < max_n; i++)
        if (hy_seq_create(&seqs[i], m, cap, &err)) {
            fprintf(stderr, "bench_streams: %s\n", err.msg);
            return 1;
        }
    printf("bench_streams: %s, weights %s, act %s, %d threads, kernels %s, %d decode steps per rep, best of %d\n",
           argv[1], hy_wreq_name((hy_wreq)wreq), act, hy_ctx_threads(ctx), hy_ctx_isa(ctx), steps, reps);
    /* The stream counts take turns within each rep, so every count sees the same minutes of a
     * machine whose bandwidth moves; "x paired" is the median over reps of the ratio to one
     * stream measured in the same rep. */
    double *tps_all = calloc((size_t)reps * (size_t)n_ns, sizeof(double));
    double *tpc_all = calloc((size_t)reps * (size_t)n_ns, sizeof(double)), *ratio = calloc((size_t)reps, sizeof(double));
    if (!tps_all || !tpc_all || !ratio) {
        fprintf(stderr, "bench_streams: out of memory\n");
        return 1;
    }
    uint64_t r = 12345;
    for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < n_ns; k++) {
            const int n = ns[k];
            for (int i = 0; i < n; i++) hy_seq_reset(seqs[i]);
            for (int i = 0; i < n; i++) ids[i] = (int32_t)(i % V);
            if (hy_forward_batch(ctx, seqs, ids, n, logits, &err)) { /* warm-up step, position 0 */
                fprintf(stderr, "bench_streams: %s\n", err.msg);
                return 1;
            }
            double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
            for (int s = 0; s < steps; s++) {
                for (int i = 0; i < n; i++) {
                    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                    ids[i] = (int32_t)(r % (uint64_t)V);
                }
                if (hy_forward_batch(ctx, seqs, ids, n, logits, &err)) {
                    fprintf(stderr, "bench_streams: %s\n", err.msg);
                    return 1;
                }
            }
            double w = now_s(CLOCK_MONOTONIC) - w0, cs = (now_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / threads;
            tps_all[(size_t)rep * n_ns + k] = (double)n * steps / w;
            tpc_all[(size_t)rep * n_ns + k] = (double)n * steps / cs;
        }
    }
    int k1 = -1;
    for (int k = 0; k < n_ns; k++)
        if (ns[k] == 1) k1 = k;
    printf("%8s %12s %12s %10s %10s %10s\n", "streams", "tok/s", "tok/s(cpu)", "x 1 stream", "x (cpu)", "x paired");
    for (int k = 0; k < n_ns; k++) {
        double best = 0, best_cpu = 0, b1 = 0, b1c = 0;
        for (int rep = 0; rep < reps; rep++) {
            const double t = tps_all[(size_t)rep * n_ns + k], c = tpc_all[(size_t)rep * n_ns + k];
            if (t > best) best = t;
            if (c > best_cpu) best_cpu = c;
            if (k1 >= 0) {
                const double t1 = tps_all[(size_t)rep * n_ns + k1], c1 = tpc_all[(size_t)rep * n_ns + k1];
                if (t1 > b1) b1 = t1;
                if (c1 > b1c) b1c = c1;
                ratio[rep] = t / t1;
            }
        }
        if (k1 < 0) {
            printf("%8d %12.2f %12.2f %10s %10s %10s\n", ns[k], best, best_cpu, "-", "-", "-");
            continue;
        }
        for (int a = 1; a < reps; a++) /* insertion sort: a handful of reps */
            for (int b = a; b > 0 && ratio[b - 1] > ratio[b]; b--) {
                const double tmp = ratio[b];
                ratio[b] = ratio[b - 1];
                ratio[b - 1] = tmp;
            }
        const double med = reps % 2 ? ratio[reps / 2] : 0.5 * (ratio[reps / 2 - 1] + ratio[reps / 2]);
        printf("%8d %12.2f %12.2f %10.2f %10.2f %10.2f\n", ns[k], best, best_cpu, best / b1, best_cpu / b1c, med);
    }
    free(ratio);
    free(tps_all);
    free(tpc_all);
    for (int i = 0; i < max_n; i++) hy_seq_free(seqs[i]);
    free(seqs);
    free(ids);
    free(logits);
    hy_ctx_free(ctx);
    hy_model_free(m);
    return 0;
}
