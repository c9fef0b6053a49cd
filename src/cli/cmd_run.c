/*
 * `hyla run -m DIR --ids 1,2,3 -n N [--threads N] [--chunk N] [--ignore-eos] [--stats]`
 * Greedy generation from token ids: prefill the prompt, then pick the argmax
 * (lowest id on ties) N times, feeding each token back. Prints the generated
 * ids, comma separated, on one line of stdout. Stops early at the config's
 * eos_token_id unless --ignore-eos. --stats prints timings and memory
 * (mapped weights, context, sequence, peak RSS) on stderr.
 * With -p TEXT the text mode in run_text.c takes over (tokenizer, chat template,
 * sampler, streamed text).
 */
#include "base/error.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/run_text.h"
#include "model/forward.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: hyla run -m DIR --ids 1,2,3 -n N [--threads N] [--chunk N] [--ignore-eos] [--stats] [--weights F] ...\n"
            "  -m, --model DIR   Hugging Face checkpoint directory (qwen3_5)\n"
            "  --ids LIST        prompt token ids, comma separated\n"
            "  -n N              tokens to generate (greedy)\n"
            "  --threads N       compute threads (default 1)\n"
            "  --chunk N         tokens per internal prefill step (default %d)\n"
            "  --ignore-eos      do not stop at eos_token_id\n"
            "  --stats           timings and memory on stderr\n" HY_CLI_CTX_OPTS_USAGE,
            HY_DEFAULT_MAX_CHUNK);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* VmHWM / VmRSS from /proc/self/status in bytes (0 if unavailable). */
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

static size_t weights_bytes(const hy_model *m) {
    size_t b = m->w.embed_tokens.nbytes + m->w.norm.nbytes + (m->w.lm_head_tied ? 0 : m->w.lm_head.nbytes);
    for (int l = 0; l < m->hp.num_hidden_layers; l++) {
        const hy_layer_weights *w = &m->w.layers[l];
        const hy_tensor *t[] = {&w->input_layernorm, &w->post_attention_layernorm, &w->q_proj, &w->k_proj,
                                &w->v_proj, &w->o_proj, &w->q_norm, &w->k_norm, &w->in_proj_qkv, &w->in_proj_z,
                                &w->in_proj_b, &w->in_proj_a, &w->conv1d, &w->A_log, &w->dt_bias, &w->norm,
                                &w->out_proj, &w->gate_proj, &w->up_proj, &w->down_proj};
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) b += t[i]->data ? t[i]->nbytes : 0;
    }
    return b;
}

HY_CMD(run) {
    if (hy_cli_run_wants_text(argc, argv)) return hy_cli_run_text(argc, argv); /* -p TEXT: run_text.c */
    const char *dir = NULL, *ids_s = NULL;
    int threads = 1, chunk = 0, n_gen = -1;
    bool ignore_eos = false, stats = false;
    hy_ctx_opts o = {0};
    int copt;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_val) {
            dir = argv[++i];
        } else if (!strcmp(a, "--ids") && has_val) {
            ids_s = argv[++i];
        } else if (!strcmp(a, "-n") && has_val) {
            if (hy_cli_parse_int("-n", argv[++i], 0, 1 << 24, &n_gen)) return 2;
        } else if (!strcmp(a, "--threads") && has_val) {
            if (hy_cli_parse_int("--threads", argv[++i], 1, 1024, &threads)) return 2;
        } else if (!strcmp(a, "--chunk") && has_val) {
            if (hy_cli_parse_int("--chunk", argv[++i], 1, 65536, &chunk)) return 2;
        } else if (!strcmp(a, "--ignore-eos")) {
            ignore_eos = true;
        } else if (!strcmp(a, "--stats")) {
            stats = true;
        } else if ((copt = hy_cli_ctx_opt(argc, argv, &i, &o)) != 0) {
            if (copt < 0) return 2;
        } else {
            fprintf(stderr, "hyla run: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!dir || !ids_s || n_gen < 0) {
        fprintf(stderr, "hyla run: -m DIR, --ids LIST and -n N are required\n");
        usage(stderr);
        return 2;
    }
    int32_t *ids = NULL;
    int n = 0;
    if (hy_cli_parse_ids("--ids", ids_s, &ids, &n)) return 2;

    int rc = 1;
    hy_err err;
    hy_err_clear(&err);
    hy_model *m = NULL;
    hy_ctx *ctx = NULL;
    hy_seq *seq = NULL;
    float *lg = NULL;
    if (hy_model_load(&m, dir, &err)) goto fail;
    /* scratch no larger than the prompt needs */
    if (chunk == 0) chunk = n < HY_DEFAULT_MAX_CHUNK ? n : HY_DEFAULT_MAX_CHUNK;
    o.n_threads = threads;
    o.max_chunk = chunk;
    if (hy_ctx_create(&ctx, m, &o, &err) || hy_seq_create_kv(&seq, m, n + (n_gen > 0 ? n_gen : 1), hy_ctx_kv_type(ctx), &err)) goto fail;
    const int V = m->hp.vocab_size;
    lg = malloc((size_t)V * sizeof(float));
    if (!lg) {
        hy_err_set(&err, HY_E_NOMEM, "out of memory");
        goto fail;
    }
    double t0 = now_s();
    if (hy_forward(ctx, seq, ids, n, lg, false, &err)) goto fail;
    double t1 = now_s();
    int produced = 0;
    for (int i = 0; i < n_gen; i++) {
        int32_t tok = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[tok]) tok = v;
        printf(i ? ",%d" : "%d", (int)tok);
        fflush(stdout);
        produced++;
        if (!ignore_eos && tok == m->hp.eos_token_id) break;
        if (i + 1 < n_gen && hy_forward(ctx, seq, &tok, 1, lg, false, &err)) {
            printf("\n");
            goto fail;
        }
    }
    printf("\n");
    double t2 = now_s();
    if (stats) {
        fprintf(stderr, "prefill: %d tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.2f tok/s); %d threads, "
                "kernels %s, weights %s\n",
                n, t1 - t0, n / (t1 - t0 > 0 ? t1 - t0 : 1e-9), produced, t2 - t1,
                produced / (t2 - t1 > 0 ? t2 - t1 : 1e-9), hy_ctx_threads(ctx), hy_ctx_isa(ctx), hy_wreq_name(o.weights));
        fprintf(stderr, "memory: weights %zu B (mapped), context %zu B, sequence %zu B reserved, VmHWM %lld B, VmRSS %lld B\n",
                weights_bytes(m), hy_ctx_bytes(ctx), hy_seq_bytes(seq), proc_status_kb("VmHWM"),
                proc_status_kb("VmRSS"));
    }
    rc = 0;
fail:
    if (rc) fprintf(stderr, "hyla run: %s\n", err.msg);
    free(lg);
    free(ids);
    hy_seq_free(seq);
    hy_ctx_free(ctx);
    hy_model_free(m);
    return rc;
}
