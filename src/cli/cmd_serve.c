/*
 * `hyla serve -m DIR [options]`: the OpenAI-compatible HTTP server.
 * Loads the checkpoint, its tokenizer/chat template and generation defaults,
 * starts the engine thread and the HTTP server, then waits for SIGINT or
 * SIGTERM: the first one drains (stops accepting connections, lets running
 * requests finish for up to --drain-timeout seconds, then cancels the rest)
 * and exits 0; a second one cancels at once.
 * Signals are blocked in every thread and taken synchronously with
 * sigtimedwait in the main thread, so no handler runs in async context.
 */
#include "base/error.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/engine.h"
#include "engine/fwd_model.h"
#include "model/model.h"
#include "server/genconfig.h"
#include "server/server.h"
#include "server/textio.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: hyla serve -m DIR [options]\n"
            "  -m, --model DIR            Hugging Face checkpoint directory (qwen3_5)\n"
            "  --tokenizer DIR            tokenizer.json directory (default: the model directory)\n"
            "  --host ADDR                address to bind (default 127.0.0.1)\n"
            "  --port N                   port (default 8080; 0 = any free port)\n"
            "  --api-key KEY              require 'Authorization: Bearer KEY' (also $HYLA_API_KEY)\n"
            "  --served-model-name NAME   model id reported and accepted (default: DIR as given)\n"
            "  --max-num-seqs N           concurrent sequences (default 8)\n"
            "  --max-model-len N          prompt + output tokens per sequence (default min(config, 4096))\n"
            "  --max-queue N              waiting requests before 429 (default 256)\n"
            "  --prefill-chunk N          prompt tokens per sequence per step (default 512)\n"
            "  --threads N                compute threads (default: online CPUs)\n"
            "  --no-prefix-cache          do not reuse prompt prefixes across requests (nor generated tokens)\n"
            "  --no-reuse-generated       do not keep finished sequences in their slots for a prompt that\n"
            "                             extends them (a chat's next turn; within 1e-6, not bit-exact)\n"
            "  --block-size N             tokens per cached attention KV block (default 16)\n"
            "  --checkpoint-interval N    GDN state checkpoint every N prompt tokens (default 2048; 0 = none)\n"
            "  --state-cache-bytes SIZE   budget of GDN state checkpoints (K/M/G suffixes; default\n"
            "                             max(1G, 8 checkpoints))\n"
            "  --prefix-cache-bytes SIZE  budget of cached attention KV blocks (default: the KV of one\n"
            "                             max-model-len context, at most 1/4 of RAM)\n"
            "  --max-body BYTES           largest request body (default 8 MiB)\n"
            "  --drain-timeout S          seconds to let requests finish on SIGINT/SIGTERM (default 30)\n"
            "Weights and kernels (as hyla run):\n" HY_CLI_CTX_OPTS_USAGE);
}

/* BYTES with an optional K/M/G/T suffix (powers of 1024). */
static int parse_size(const char *opt, const char *s, size_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (end && *end) {
        switch (*end) {
        case 'K': case 'k': shift = 10; break;
        case 'M': case 'm': shift = 20; break;
        case 'G': case 'g': shift = 30; break;
        case 'T': case 't': shift = 40; break;
        default: shift = 64;
        }
        if (end[1] && !(end[1] == 'B' || end[1] == 'b' || (end[1] == 'i' && end[2] == 'B'))) shift = 64;
    }
    if (errno || end == s || *s == '-' || shift == 64 || (shift && v > (~0ull >> shift))) {
        fprintf(stderr, "hyla serve: %s expects a byte count like 512M or 2G, got '%s'\n", opt, s);
        return 2;
    }
    *out = (size_t)(v << shift);
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

HY_CMD(serve) {
    const char *dir = NULL, *tok_dir = NULL, *host = "127.0.0.1", *api_key = getenv("HYLA_API_KEY"), *name = NULL;
    int port = 8080, max_seqs = 8, max_len = 0, max_queue = 256, chunk = 512, drain_s = 30, max_body = 8 << 20;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bool prefix_cache = true, reuse_generated = true;
    int block_size = 16, ckpt_interval = 2048;
    size_t state_bytes = 0, pkv_bytes = 0; /* 0: the engine's automatic budgets */
    if (threads < 1) threads = 1;
    hy_ctx_opts copts;
    memset(&copts, 0, sizeof copts);
    int copt;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool hv = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && hv) dir = argv[++i];
        else if (!strcmp(a, "--tokenizer") && hv) tok_dir = argv[++i];
        else if (!strcmp(a, "--host") && hv) host = argv[++i];
        else if (!strcmp(a, "--api-key") && hv) api_key = argv[++i];
        else if (!strcmp(a, "--served-model-name") && hv) name = argv[++i];
        else if (!strcmp(a, "--port") && hv) {
            if (hy_cli_parse_int("--port", argv[++i], 0, 65535, &port)) return 2;
        } else if (!strcmp(a, "--max-num-seqs") && hv) {
            if (hy_cli_parse_int("--max-num-seqs", argv[++i], 1, 1024, &max_seqs)) return 2;
        } else if (!strcmp(a, "--max-model-len") && hv) {
            if (hy_cli_parse_int("--max-model-len", argv[++i], 2, 1 << 24, &max_len)) return 2;
        } else if (!strcmp(a, "--max-queue") && hv) {
            if (hy_cli_parse_int("--max-queue", argv[++i], 1, 1 << 20, &max_queue)) return 2;
        } else if (!strcmp(a, "--prefill-chunk") && hv) {
            if (hy_cli_parse_int("--prefill-chunk", argv[++i], 1, 1 << 16, &chunk)) return 2;
        } else if (!strcmp(a, "--no-prefix-cache")) {
            prefix_cache = false;
        } else if (!strcmp(a, "--no-reuse-generated")) {
            reuse_generated = false;
        } else if (!strcmp(a, "--block-size") && hv) {
            if (hy_cli_parse_int("--block-size", argv[++i], 1, HY_PREFIX_MAX_BLOCK, &block_size)) return 2;
        } else if (!strcmp(a, "--checkpoint-interval") && hv) {
            if (hy_cli_parse_int("--checkpoint-interval", argv[++i], 0, 1 << 24, &ckpt_interval)) return 2;
        } else if (!strcmp(a, "--state-cache-bytes") && hv) {
            if (parse_size("--state-cache-bytes", argv[++i], &state_bytes)) return 2;
        } else if (!strcmp(a, "--prefix-cache-bytes") && hv) {
            if (parse_size("--prefix-cache-bytes", argv[++i], &pkv_bytes)) return 2;
        } else if (!strcmp(a, "--threads") && hv) {
            if (hy_cli_parse_int("--threads", argv[++i], 1, 1024, &threads)) return 2;
        } else if (!strcmp(a, "--max-body") && hv) {
            if (hy_cli_parse_int("--max-body", argv[++i], 1024, 1 << 30, &max_body)) return 2;
        } else if (!strcmp(a, "--drain-timeout") && hv) {
            if (hy_cli_parse_int("--drain-timeout", argv[++i], 0, 3600, &drain_s)) return 2;
        } else if ((copt = hy_cli_ctx_opt(argc, argv, &i, &copts)) != 0) {
            if (copt < 0) return 2;
        } else {
            fprintf(stderr, "hyla serve: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "hyla serve: -m DIR is required\n");
        usage(stderr);
        return 2;
    }
    if (!tok_dir) tok_dir = dir;
    if (!name) name = dir;

    /* Block the shutdown signals before any thread exists so every thread inherits the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    hy_err err;
    hy_err_clear(&err);
    hy_model *m = NULL;
    hy_textio *tx = NULL;
    hy_fwd_model *fm = NULL;
    hy_engine *eng = NULL;
    hy_server *srv = NULL;
    hy_gen_defaults gd;
    if (hy_model_load(&m, dir, &err)) goto fail;
    if (hy_gen_defaults_load(&gd, dir, &err)) goto fail;
    if (hy_textio_load(&tx, tok_dir, &err)) {
        hy_err_wrap(&err, "tokenizer in %s", tok_dir);
        goto fail;
    }
    if (!max_len) {
        max_len = m->hp.max_position_embeddings > 0 ? m->hp.max_position_embeddings : 4096;
        if (max_len > 4096) max_len = 4096;
    }
    copts.n_threads = threads;
    copts.max_chunk = chunk;
    if (hy_fwd_model_create_opts(&fm, m, &copts, max_len, &err)) goto fail;

    hy_engine_config ec;
    hy_engine_config_default(&ec);
    ec.max_num_seqs = max_seqs;
    ec.max_model_len = max_len;
    ec.prefill_chunk = chunk;
    ec.max_batch_tokens = chunk * 2 > 2048 ? chunk * 2 : 2048;
    ec.max_queue = max_queue;
    ec.seed_base = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    ec.prefix_cache = prefix_cache;
    ec.reuse_generated = reuse_generated;
    ec.block_size = block_size;
    ec.checkpoint_interval = ckpt_interval;
    ec.state_cache_bytes = state_bytes;
    ec.prefix_kv_bytes = pkv_bytes;
    /* The cache lives and dies with this process and model; the salt still
     * names the model so keys never mean the same thing for two models. */
    uint64_t salt = 1469598103934665603ull;
    for (const char *p = dir; *p; p++) salt = (salt ^ (unsigned char)*p) * 1099511628211ull;
    ec.cache_salt = salt ^ (uint64_t)m->hp.vocab_size << 20 ^ (uint64_t)m->hp.num_hidden_layers;
    /* stop ids: generation_config's eos list, else config.json's, plus the tokenizer's eos */
    for (int i = 0; i < gd.n_eos && ec.n_eos < HY_ENGINE_MAX_EOS; i++) ec.eos_ids[ec.n_eos++] = gd.eos_ids[i];
    if (!gd.n_eos && m->hp.eos_token_id >= 0) ec.eos_ids[ec.n_eos++] = m->hp.eos_token_id;
    int32_t teos = hy_textio_eos_id(tx);
    bool have = false;
    for (int i = 0; i < ec.n_eos; i++) have |= ec.eos_ids[i] == teos;
    if (teos >= 0 && !have && ec.n_eos < HY_ENGINE_MAX_EOS) ec.eos_ids[ec.n_eos++] = teos;

    hy_engine_model mv;
    hy_fwd_model_vtable(fm, &mv);
    hy_engine_text etv;
    hy_textio_engine_text(tx, &etv);
    if (hy_engine_create(&eng, &ec, &mv, &etv, &err)) goto fail;

    hy_server_config sc;
    hy_server_config_default(&sc);
    sc.host = host;
    sc.port = port;
    sc.api_key = api_key && *api_key ? api_key : NULL;
    sc.model_name = name;
    sc.max_body = (size_t)max_body;
    hy_server_text stv;
    hy_textio_server_text(tx, &stv);
    if (hy_server_start(&srv, &sc, eng, &stv, &gd, &err)) goto fail;
    fprintf(stderr,
            "hyla serve: listening on http://%s:%d  model '%s' (%s)  max-num-seqs %d  max-model-len %d  threads %d  "
            "template %s%s  prefix cache %s%s  kv cache %s\n",
            strchr(host, ':') ? "[::]" : host, hy_server_port(srv), name, m->hp.model_type, max_seqs, max_len,
            hy_fwd_model_threads(fm), hy_textio_template_desc(tx), sc.api_key ? "  api-key required" : "",
            prefix_cache ? "on" : "off", prefix_cache && reuse_generated ? " (+ generated tokens)" : "",
            hy_kv_type_name(copts.kv_type));
    fflush(stderr);

    int sig = 0;
    while ((sig = sigwaitinfo(&sigs, NULL)) < 0) {
    }
    fprintf(stderr, "hyla serve: %s received, draining (up to %d s; send again to cancel now)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", drain_s);
    double t0 = now_s();
    int left = 1;
    while (left > 0 && now_s() - t0 < drain_s) {
        left = hy_server_drain(srv, 200);
        struct timespec zero = {0, 0};
        if (left > 0 && sigtimedwait(&sigs, NULL, &zero) > 0) {
            fprintf(stderr, "hyla serve: second signal, cancelling %d request(s)\n", left);
            break;
        }
    }
    hy_engine_shutdown(eng, false); /* cancels whatever is still running */
    hy_server_drain(srv, 2000);     /* lets the cancelled handlers answer */
    hy_server_stop(srv);
    srv = NULL;
    fprintf(stderr, "hyla serve: stopped\n");
    rc = 0;
fail:
    if (rc) fprintf(stderr, "hyla serve: %s\n", err.msg);
    hy_server_stop(srv);
    hy_engine_free(eng);
    hy_fwd_model_free(fm);
    hy_textio_free(tx);
    hy_model_free(m);
    return rc;
}
