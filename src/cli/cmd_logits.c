/*
 * `hyla logits -m DIR --ids 1,2,3 [--out FILE] [--all] [--threads N] [--chunk N] [kernel/weight options]`
 * Runs the prompt through the model from an empty state and writes the logits
 * as raw little-endian float32: [vocab] of the last position, or
 * [n_tokens][vocab] with --all. Prints one summary line (argmax / max / min of
 * the last position) on stdout. Exit 0 ok, 1 runtime error, 2 usage error.
 */
#include "base/error.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "model/forward.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: hyla logits -m DIR --ids 1,2,3 [--out FILE] [--all] [--threads N] [--chunk N] [--weights F] ...\n"
            "  -m, --model DIR   Hugging Face checkpoint directory (qwen3_5)\n"
            "  --ids LIST        prompt token ids, comma separated\n"
            "  --out FILE        write little-endian float32 logits to FILE\n"
            "  --all             logits of every position ([n][vocab]) instead of the last ([vocab])\n"
            "  --threads N       compute threads (default 1)\n"
            "  --chunk N         tokens per internal prefill step (default %d)\n" HY_CLI_CTX_OPTS_USAGE,
            HY_DEFAULT_MAX_CHUNK);
}

/* Writes n floats little-endian regardless of the host byte order. */
static int write_f32_le(FILE *f, const float *x, size_t n) {
    unsigned char buf[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        buf[k++] = (unsigned char)u;
        buf[k++] = (unsigned char)(u >> 8);
        buf[k++] = (unsigned char)(u >> 16);
        buf[k++] = (unsigned char)(u >> 24);
        if (k == sizeof buf || i + 1 == n) {
            if (fwrite(buf, 1, k, f) != k) return -1;
            k = 0;
        }
    }
    return 0;
}

HY_CMD(logits) {
    const char *dir = NULL, *ids_s = NULL, *out = NULL;
    bool all = false;
    int threads = 1, chunk = 0;
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
        } else if (!strcmp(a, "--out") && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--all")) {
            all = true;
        } else if (!strcmp(a, "--threads") && has_val) {
            if (hy_cli_parse_int("--threads", argv[++i], 1, 1024, &threads)) return 2;
        } else if (!strcmp(a, "--chunk") && has_val) {
            if (hy_cli_parse_int("--chunk", argv[++i], 1, 65536, &chunk)) return 2;
        } else if ((copt = hy_cli_ctx_opt(argc, argv, &i, &o)) != 0) {
            if (copt < 0) return 2;
        } else {
            fprintf(stderr, "hyla logits: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!dir || !ids_s) {
        fprintf(stderr, "hyla logits: -m DIR and --ids LIST are required\n");
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
    FILE *f = NULL;
    if (hy_model_load(&m, dir, &err)) goto fail;
    o.n_threads = threads;
    o.max_chunk = chunk;
    if (hy_ctx_create(&ctx, m, &o, &err) || hy_seq_create_kv(&seq, m, n, hy_ctx_kv_type(ctx), &err)) goto fail;
    const size_t V = (size_t)m->hp.vocab_size, rows = all ? (size_t)n : 1;
    lg = malloc(rows * V * sizeof(float));
    if (!lg) {
        hy_err_set(&err, HY_E_NOMEM, "out of memory for %zu logits", rows * V);
        goto fail;
    }
    if (hy_forward(ctx, seq, ids, n, lg, all, &err)) goto fail;
    if (out) {
        f = fopen(out, "wb");
        if (!f || write_f32_le(f, lg, rows * V) || fclose(f)) {
            f = NULL;
            hy_err_set(&err, HY_E_IO, "%s: cannot write logits", out);
            goto fail;
        }
        f = NULL;
    }
    const float *last = lg + (rows - 1) * V;
    size_t am = 0;
    float mn = last[0];
    for (size_t i = 1; i < V; i++) {
        if (last[i] > last[am]) am = i;
        if (last[i] < mn) mn = last[i];
    }
    printf("argmax %zu max %.6f min %.6f (tokens %d, positions %zu, vocab %zu%s%s)\n", am, (double)last[am],
           (double)mn, n, rows, V, out ? ", written to " : "", out ? out : "");
    rc = 0;
fail:
    if (rc) fprintf(stderr, "hyla logits: %s\n", err.msg);
    if (f) fclose(f);
    free(lg);
    free(ids);
    hy_seq_free(seq);
    hy_ctx_free(ctx);
    hy_model_free(m);
    return rc;
}
