/*
 * `hyla run -m DIR -p TEXT [--chat] [--no-think] [-n N] [--temp T] [--top-k K]
 *  [--top-p P] [--seed S] [--threads N] [--ignore-eos] [--stats] [--weights F] ...`
 * (the weight / kernel options of cli_args.h, as in the token-id mode)
 * Streams generated text to stdout as the engine releases it (complete UTF-8,
 * special tokens skipped). Sampling defaults come from the checkpoint's
 * generation_config.json like the server's; --temp 0 is greedy.
 */
#include "cli/run_text.h"

#include "base/error.h"
#include "cli/cli_args.h"
#include "engine/engine.h"
#include "engine/fwd_model.h"
#include "model/model.h"
#include "server/genconfig.h"
#include "server/textio.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: hyla run -m DIR -p TEXT [options]\n"
            "  -p, --prompt TEXT   prompt text (raw unless --chat)\n"
            "  --chat              wrap the prompt as one user message with the chat template\n"
            "  --no-think          with --chat: disable thinking (enable_thinking=false)\n"
            "  -n N                tokens to generate (default 256)\n"
            "  --temp T            temperature (0 = greedy; default from generation_config.json)\n"
            "  --top-k K, --top-p P, --min-p P   sampling filters (defaults from generation_config.json)\n"
            "  --seed S            sampling seed (default: random)\n"
            "  --threads N         compute threads (default 1)\n"
            "  --tokenizer DIR     tokenizer directory (default: the model directory)\n"
            "  --ignore-eos        do not stop at end-of-sequence tokens\n"
            "  --stats             token counts and speed on stderr\n"
            "Weights and kernels:\n" HY_CLI_CTX_OPTS_USAGE);
}

int hy_cli_run_wants_text(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--prompt")) return 1;
    return 0;
}

static int parse_float(const char *opt, const char *s, double lo, double hi, float *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "hyla run: %s expects a number in [%g, %g], got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = (float)v;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int hy_cli_run_text(int argc, char **argv) {
    const char *dir = NULL, *tok_dir = NULL, *prompt = NULL;
    bool chat = false, no_think = false, ignore_eos = false, stats = false, has_seed = false;
    int n_gen = 256, threads = 1;
    unsigned set = 0;
    hy_sampling_params sp;
    hy_sampling_params_default(&sp);
    hy_ctx_opts copts = {0};
    int copt;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool hv = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && hv) dir = argv[++i];
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && hv) prompt = argv[++i];
        else if (!strcmp(a, "--tokenizer") && hv) tok_dir = argv[++i];
        else if (!strcmp(a, "--chat")) chat = true;
        else if (!strcmp(a, "--no-think")) no_think = true;
        else if (!strcmp(a, "--ignore-eos")) ignore_eos = true;
        else if (!strcmp(a, "--stats")) stats = true;
        else if (!strcmp(a, "-n") && hv) {
            if (hy_cli_parse_int("-n", argv[++i], 1, 1 << 24, &n_gen)) return 2;
        } else if (!strcmp(a, "--threads") && hv) {
            if (hy_cli_parse_int("--threads", argv[++i], 1, 1024, &threads)) return 2;
        } else if (!strcmp(a, "--temp") && hv) {
            if (parse_float("--temp", argv[++i], 0, 100, &sp.temperature)) return 2;
            set |= HY_SET_TEMPERATURE;
        } else if (!strcmp(a, "--top-p") && hv) {
            if (parse_float("--top-p", argv[++i], 1e-6, 1, &sp.top_p)) return 2;
            set |= HY_SET_TOP_P;
        } else if (!strcmp(a, "--min-p") && hv) {
            if (parse_float("--min-p", argv[++i], 0, 1, &sp.min_p)) return 2;
            set |= HY_SET_MIN_P;
        } else if (!strcmp(a, "--top-k") && hv) {
            if (hy_cli_parse_int("--top-k", argv[++i], 0, 1 << 30, &sp.top_k)) return 2;
            set |= HY_SET_TOP_K;
        } else if (!strcmp(a, "--seed") && hv) {
            char *end;
            const char *s = argv[++i];
            unsigned long long v = strtoull(s, &end, 10);
            if (!*s || *end) {
                fprintf(stderr, "hyla run: --seed expects a non-negative integer, got '%s'\n", s);
                return 2;
            }
            sp.seed = v;
            has_seed = true;
        } else if ((copt = hy_cli_ctx_opt(argc, argv, &i, &copts)) != 0) {
            if (copt < 0) return 2;
        } else {
            fprintf(stderr, "hyla run: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!dir || !prompt) {
        fprintf(stderr, "hyla run: -m DIR and -p TEXT are required\n");
        usage(stderr);
        return 2;
    }
    if (no_think && !chat) {
        fprintf(stderr, "hyla run: --no-think needs --chat\n");
        return 2;
    }
    if (!tok_dir) tok_dir = dir;

    int rc = 1;
    hy_err err;
    hy_err_clear(&err);
    hy_model *m = NULL;
    hy_textio *tx = NULL;
    hy_fwd_model *fm = NULL;
    hy_engine *eng = NULL;
    hy_request *req = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    hy_gen_defaults gd;
    if (hy_model_load(&m, dir, &err) || hy_gen_defaults_load(&gd, dir, &err)) goto fail;
    if (hy_textio_load(&tx, tok_dir, &err)) {
        hy_err_wrap(&err, "tokenizer in %s", tok_dir);
        goto fail;
    }
    if (chat) {
        if (hy_textio_chat_user(tx, prompt, no_think ? 0 : -1, &ids, &n_ids, &err)) goto fail;
    } else if (hy_textio_encode(tx, prompt, strlen(prompt), &ids, &n_ids, &err)) {
        goto fail;
    }
    if (n_ids == 0) {
        hy_err_set(&err, HY_E_INVALID, "the prompt is empty");
        goto fail;
    }
    int max_len = (int)n_ids + n_gen;
    if (m->hp.max_position_embeddings > 0 && max_len > m->hp.max_position_embeddings) max_len = m->hp.max_position_embeddings;
    if ((int)n_ids >= max_len) {
        hy_err_set(&err, HY_E_RANGE, "the prompt has %zu tokens; the model's context is %d", n_ids, max_len);
        goto fail;
    }
    int chunk = n_ids < 512 ? (int)n_ids : 512;
    copts.n_threads = threads;
    copts.max_chunk = chunk;
    if (hy_fwd_model_create_opts(&fm, m, &copts, max_len, &err)) goto fail;
    hy_engine_config ec;
    hy_engine_config_default(&ec);
    ec.max_num_seqs = 1;
    ec.max_model_len = max_len;
    ec.prefill_chunk = chunk;
    ec.max_batch_tokens = chunk;
    ec.seed_base = (uint64_t)time(NULL);
    for (int i = 0; i < gd.n_eos; i++) ec.eos_ids[ec.n_eos++] = gd.eos_ids[i];
    if (!gd.n_eos && m->hp.eos_token_id >= 0) ec.eos_ids[ec.n_eos++] = m->hp.eos_token_id;
    if (hy_textio_eos_id(tx) >= 0 && ec.n_eos < HY_ENGINE_MAX_EOS) ec.eos_ids[ec.n_eos++] = hy_textio_eos_id(tx);
    hy_engine_model mv;
    hy_fwd_model_vtable(fm, &mv);
    hy_engine_text etv;
    hy_textio_engine_text(tx, &etv);
    if (hy_engine_create(&eng, &ec, &mv, &etv, &err)) goto fail;

    /* request values win, then generation_config.json, then neutral */
    hy_oai_request shim;
    memset(&shim, 0, sizeof shim);
    shim.sp = sp;
    shim.set_mask = set;
    hy_gen_params gp;
    memset(&gp, 0, sizeof gp);
    hy_gen_effective_sampling(&shim, &gd, &gp.sp);
    gp.sp.seed = sp.seed;
    gp.has_seed = has_seed;
    gp.prompt = ids;
    gp.n_prompt = (int)n_ids;
    gp.n = 1;
    gp.max_tokens = n_gen;
    gp.ignore_eos = ignore_eos;
    gp.n_logprobs = -1;
    double t0 = now_s(), t_first = 0;
    if (hy_engine_submit(eng, &gp, &req, &err)) goto fail;
    int produced = 0;
    const char *why = "none";
    hy_event ev;
    while (hy_request_next_event(req, &ev, -1) == 1) {
        if (ev.type == HY_EV_TOKEN) {
            if (!produced) t_first = now_s();
            produced++;
            if (ev.text_len) {
                fwrite(ev.text, 1, ev.text_len, stdout);
                fflush(stdout);
            }
        } else if (ev.type == HY_EV_FINISH) {
            why = hy_finish_str(ev.finish);
            if (ev.finish == HY_FINISH_ERROR) hy_err_set(&err, HY_E_INTERNAL, "%s", ev.error ? ev.error : "engine error");
        }
        bool done = ev.type == HY_EV_DONE;
        hy_event_clear(&ev);
        if (done) break;
    }
    printf("\n");
    double t1 = now_s();
    if (!strcmp(why, "error")) goto fail;
    if (stats)
        fprintf(stderr, "prompt %zu tokens, generated %d tokens (finish: %s); first token %.3f s, %.2f tok/s after\n",
                n_ids, produced, why, t_first - t0, produced > 1 ? (produced - 1) / (t1 - t_first) : 0.0);
    rc = 0;
fail:
    if (rc) fprintf(stderr, "hyla run: %s\n", err.msg);
    hy_request_release(req);
    hy_engine_free(eng);
    hy_fwd_model_free(fm);
    hy_textio_free(tx);
    hy_model_free(m);
    free(ids);
    return rc;
}
