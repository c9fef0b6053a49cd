/*
 * `hyla random-model --shape NAME --out DIR [--dtype bf16|fp8] [--seed S]
 *                    [--max-shard-bytes N] [--config-only] [--force]`
 * Writes a complete checkpoint directory of a real model shape with seeded random weights
 * (model/random_model.h), for benchmarks and load tests without downloading weights.
 * Exit 0 on success, 1 on a runtime error, 2 on a usage error.
 */
#include "base/error.h"
#include "cli/cli.h"
#include "model/random_model.h"
#include "model/shapes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: hyla random-model --shape NAME --out DIR [--dtype bf16|fp8] [--seed S]\n"
            "                         [--max-shard-bytes N] [--config-only] [--force]\n"
            "  --shape            %s\n"
            "  --out              checkpoint directory to create\n"
            "  --dtype            bf16 (default) or fp8 (e4m3 big linears, 128x128 block scales)\n"
            "  --seed             random seed (default 1)\n"
            "  --max-shard-bytes  data bytes per safetensors file before sharding (default 2 GiB)\n"
            "  --config-only      write config.json and generation_config.json only\n"
            "  --force            overwrite an existing checkpoint in DIR\n",
            hy_model_shape_names());
}

static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

typedef struct progress { int last_pct; int tty; } progress;

static void on_progress(void *ctx, uint64_t done, uint64_t total) {
    progress *p = ctx;
    if (total < (256u << 20)) return; /* small models finish before a progress line helps */
    const int pct = (int)(done * 100 / total);
    if (pct == p->last_pct || (!p->tty && pct / 10 == p->last_pct / 10 && pct != 100)) return;
    p->last_pct = pct;
    fprintf(stderr, p->tty ? "\r  %3d%%  %.2f / %.2f GiB" : "  %3d%%  %.2f / %.2f GiB\n", pct,
            (double)done / (1u << 30), (double)total / (1u << 30));
    if (p->tty && pct == 100) fputc('\n', stderr);
}

HY_CMD(random_model) {
    const char *shape_name = NULL, *out = NULL, *dtype = "bf16";
    uint64_t seed = 1, max_shard = 0;
    bool config_only = false, force = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--config-only")) {
            config_only = true;
        } else if (!strcmp(a, "--force")) {
            force = true;
        } else if (!strcmp(a, "--shape") || !strcmp(a, "--out") || !strcmp(a, "--dtype") || !strcmp(a, "--seed") ||
                   !strcmp(a, "--max-shard-bytes")) {
            if (!v) {
                fprintf(stderr, "hyla random-model: %s needs a value\n", a);
                return 2;
            }
            i++;
            if (!strcmp(a, "--shape")) shape_name = v;
            else if (!strcmp(a, "--out")) out = v;
            else if (!strcmp(a, "--dtype")) dtype = v;
            else if (!strcmp(a, "--seed") && parse_u64(v, &seed)) {
                fprintf(stderr, "hyla random-model: --seed: expected a non-negative integer, got '%s'\n", v);
                return 2;
            } else if (!strcmp(a, "--max-shard-bytes") && (parse_u64(v, &max_shard) || max_shard == 0)) {
                fprintf(stderr, "hyla random-model: --max-shard-bytes: expected a positive integer, got '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "hyla random-model: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!shape_name || !out) {
        fprintf(stderr, "hyla random-model: --shape and --out are required\n");
        usage(stderr);
        return 2;
    }
    if (strcmp(dtype, "bf16") && strcmp(dtype, "fp8")) {
        fprintf(stderr, "hyla random-model: --dtype: expected bf16 or fp8, got '%s'\n", dtype);
        return 2;
    }
    hy_err err = {0};
    hy_model_shape shape;
    if (hy_model_shape_get(&shape, shape_name, &err)) {
        fprintf(stderr, "hyla random-model: %s\n", err.msg);
        return 2;
    }
    progress pr = {.last_pct = -1, .tty = isatty(2)};
    hy_random_model_opts o = {.out_dir = out, .shape = &shape, .fp8 = !strcmp(dtype, "fp8"), .seed = seed,
                              .max_shard_bytes = max_shard, .config_only = config_only, .force = force,
                              .progress = on_progress, .progress_ctx = &pr};
    hy_random_model_stats st;
    if (hy_random_model_write(&o, &st, &err)) {
        fprintf(stderr, "hyla random-model: %s\n", err.msg);
        return 1;
    }
    if (config_only)
        printf("wrote %s/config.json and generation_config.json (%s, %s)\n", out, shape.name, dtype);
    else
        printf("wrote %s: %s %s, %d tensors, %lld parameters, %.3f GiB in %d file%s (seed %llu)\n", out, shape.name,
               dtype, st.n_tensors, (long long)st.n_params, (double)st.data_bytes / (1u << 30), st.n_shards,
               st.n_shards == 1 ? "" : "s", (unsigned long long)seed);
    return 0;
}
