/* Aggregate decode throughput with concurrent streams through hy_forward_batch: for each
 * stream count n (default 1,4,8,16), n sequences each take one token per step in one batched
 * step; tokens/s = n x steps / time, and the ratio to 1 stream (the batched decode reads the
 * weights once per step for all n, so the ratio grows while decode is bandwidth-bound).
 * Times: wall, and process CPU time / threads (the machine may be shared); best of reps.
 * Usage: bench_streams MODEL_DIR [threads=2] [steps=8] [reps=2] [streams=1,4,8,16]
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
        printf("bench_streams: no model given (usage: bench_streams MODEL_DIR [threads] [steps] [reps] [streams]); "
               "skipped\n");
        return 0;
    }
    const int threads = argc > 2 ? atoi(argv[2]) : 2, steps = argc > 3 ? atoi(argv[3]) : 8,
              reps = argc > 4 ? atoi(argv[4]) : 2;
    const char *list = argc > 5 ? argv[5] : "1,4,8,16";
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
    hy_ctx_opts o = {.n_threads = threads};
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
    printf("bench_streams: %s, %d threads, kernels %s, %d decode steps per rep, best of %d\n", argv[1],
           hy_ctx_threads(ctx), hy_ctx_isa(ctx), steps, reps);
    printf("%8s %12s %12s %10s %10s\n", "streams", "tok/s", "tok/s(cpu)", "x 1 stream", "x (cpu)");
    double base = 0, base_cpu = 0;
    uint64_t r = 12345;
    for (int k = 0; k < n_ns; k++) {
        const int n = ns[k];
        double best = 0, best_cpu = 0;
        for (int rep = 0; rep < reps; rep++) {
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
            double tps = (double)n * steps / w, tpc = (double)n * steps / cs;
            if (tps > best) best = tps;
            if (tpc > best_cpu) best_cpu = tpc;
        }
        if (n == 1) base = best, base_cpu = best_cpu;
        if (base > 0)
            printf("%8d %12.2f %12.2f %10.2f %10.2f\n", n, best, best_cpu, best / base, best_cpu / base_cpu);
        else
            printf("%8d %12.2f %12.2f %10s %10s\n", n, best, best_cpu, "-", "-");
        fflush(stdout);
    }
    for (int i = 0; i < max_n; i++) hy_seq_free(seqs[i]);
    free(seqs);
    free(ids);
    free(logits);
    hy_ctx_free(ctx);
    hy_model_free(m);
    return 0;
}
