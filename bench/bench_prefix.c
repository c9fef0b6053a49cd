/* Prefix cache benchmark: a multi-turn chat (default 4 turns of 2048 new user tokens each,
 * 8-token replies) on a synthetic Qwen3.5-0.8B checkpoint (hyla random-model shape
 * qwen3.5-0.8b, bf16), run through the engine with the prefix cache on and off. Prints TTFT
 * per turn for both, the ratio (goal: turn 4 cached <= 10% of uncached), whether the greedy
 * replies agree, and the checkpoint memory held per checkpoint next to the computed size
 * (hy_hp_gdn_state_bytes + hy_hp_gdn_conv_bytes, plus the tail KV rows a checkpoint at an
 * unaligned position carries).
 *
 * Usage: bench_prefix [--model DIR] [--turns N] [--turn-tokens N] [--first-tokens N] [--reply N] [--threads N]
 * --first-tokens sizes the first user message alone (a document, then short follow-ups).
 * A cached turn still computes its new tokens: with equal turns, turn k costs at least
 * 1/k of the uncached prefill (attention over the longer context makes it a bit more).
 * Without --model the checkpoint is written once to $HYLA_BENCH_MODEL or
 * build/bench-models/qwen3.5-0.8b (about 1.6 GiB) and reused. Wall-clock times (TTFT is what a
 * user waits for); the machine may be shared, so compare ratios. Prints only; no asserts. */
#include "engine/engine.h"
#include "engine/fwd_model.h"
#include "model/hparams.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int no_bytes(void *ctx, int32_t id, const char **b, size_t *len) {
    (void)ctx;
    (void)id;
    *b = "";
    *len = 0;
    return 0;
}

enum { IM_START = 248045, IM_END = 248046, NL = 198, R_USER = 872, R_ASSIST = 74455, R_SYS = 8948 };

typedef struct conv {
    int32_t *t;
    int n, cap;
    int32_t ends[256];
    int n_ends;
} conv;

static void push(conv *c, int32_t x) {
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4096;
        c->t = realloc(c->t, sizeof(int32_t) * (size_t)c->cap);
        if (!c->t) abort();
    }
    c->t[c->n++] = x;
}

static void message(conv *c, int32_t role, const int32_t *content, int len) {
    push(c, IM_START);
    push(c, role);
    push(c, NL);
    for (int i = 0; i < len; i++) push(c, content[i]);
    push(c, IM_END);
    push(c, NL);
    if (c->n_ends < 256) c->ends[c->n_ends++] = c->n;
}

typedef struct turn_result {
    double ttft;
    int prompt, cached;
    int32_t reply[64];
    int n_reply;
} turn_result;

/* One turn: prompt = conversation + "<|im_start|>assistant\n", hints as the server sends them. */
static int run_turn(hy_engine *e, conv *c, int reply_max, turn_result *tr) {
    int n0 = c->n;
    push(c, IM_START);
    push(c, R_ASSIST);
    push(c, NL);
    hy_gen_params p;
    memset(&p, 0, sizeof p);
    p.prompt = c->t;
    p.n_prompt = c->n;
    p.n = 1;
    p.max_tokens = reply_max;
    hy_sampling_params_default(&p.sp);
    p.sp.temperature = 0.0f;
    p.has_seed = true;
    p.ignore_eos = true;
    p.n_logprobs = -1;
    p.split_at = c->ends;
    p.n_split_at = c->n_ends;
    p.checkpoint_at = &c->ends[c->n_ends - 1];
    p.n_checkpoint_at = 1;
    hy_request *r = NULL;
    hy_err err = {0};
    double t0 = now_s();
    if (hy_engine_submit(e, &p, &r, &err)) {
        fprintf(stderr, "bench_prefix: %s\n", err.msg);
        return 1;
    }
    memset(tr, 0, sizeof *tr);
    tr->prompt = c->n;
    hy_event ev;
    while (hy_request_next_event(r, &ev, -1) == 1) {
        if (ev.type == HY_EV_TOKEN) {
            if (tr->n_reply == 0) tr->ttft = now_s() - t0;
            if (tr->n_reply < 64) tr->reply[tr->n_reply++] = ev.token;
        } else if (ev.type == HY_EV_DONE) {
            tr->cached = ev.cached_tokens;
        }
        hy_event_clear(&ev);
    }
    hy_request_release(r);
    c->n = n0;
    return 0;
}

static int run_conversation(const hy_model *m, int threads, bool cache, int turns, int first_tokens, int turn_tokens,
                            int reply, turn_result *res, hy_engine_stats *st) {
    hy_err err = {0};
    hy_fwd_model *fm = NULL;
    int max_len = first_tokens + turns * (turn_tokens + reply + 16) + 128;
    if (hy_fwd_model_create(&fm, m, threads, 512, max_len, &err)) {
        fprintf(stderr, "bench_prefix: %s\n", err.msg);
        return 1;
    }
    hy_engine_model mv;
    hy_fwd_model_vtable(fm, &mv);
    hy_engine_text tv = {NULL, m->hp.vocab_size, no_bytes};
    hy_engine_config c;
    hy_engine_config_default(&c);
    c.max_num_seqs = 1;
    c.max_model_len = max_len;
    c.prefill_chunk = 512;
    c.max_batch_tokens = 2048;
    c.prefix_cache = cache;
    hy_engine *e = NULL;
    if (hy_engine_create(&e, &c, &mv, &tv, &err)) {
        fprintf(stderr, "bench_prefix: %s\n", err.msg);
        hy_fwd_model_free(fm);
        return 1;
    }
    conv cv = {0};
    uint64_t s = 0x5eed;
    int32_t *content = malloc(sizeof(int32_t) * (size_t)(first_tokens > turn_tokens ? first_tokens : turn_tokens) + 128);
    for (int i = 0; i < 24; i++) content[i] = (int32_t)(1000 + i * 37);
    message(&cv, R_SYS, content, 24);
    int rc = 0;
    for (int t = 0; t < turns && !rc; t++) {
        int len = t == 0 ? first_tokens : turn_tokens;
        for (int i = 0; i < len; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            content[i] = (int32_t)(1000 + (s >> 33) % 100000);
        }
        message(&cv, R_USER, content, len);
        rc = run_turn(e, &cv, reply, &res[t]);
        if (!rc) message(&cv, R_ASSIST, res[t].reply, res[t].n_reply);
        printf("  [%s] turn %d: prompt %d tokens, cached %d, TTFT %.3f s\n", cache ? "cache" : "no cache", t + 1,
               res[t].prompt, res[t].cached, res[t].ttft);
        fflush(stdout);
    }
    hy_engine_get_stats(e, st);
    hy_engine_free(e);
    hy_fwd_model_free(fm);
    free(content);
    free(cv.t);
    return rc;
}

int main(int argc, char **argv) {
    const char *model_dir = getenv("HYLA_BENCH_MODEL");
    int turns = 4, turn_tokens = 2048, reply = 8, first_tokens = -1;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i += 2) { /* --option value pairs */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_prefix: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--model")) model_dir = v;
        else if (!strcmp(a, "--turns")) turns = atoi(v);
        else if (!strcmp(a, "--turn-tokens")) turn_tokens = atoi(v);
        else if (!strcmp(a, "--first-tokens")) first_tokens = atoi(v);
        else if (!strcmp(a, "--reply")) reply = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else {
            fprintf(stderr, "usage: bench_prefix [--model DIR] [--turns N] [--turn-tokens N] [--first-tokens N] [--reply N] "
                            "[--threads N]\n");
            return 2;
        }
    }
    if (first_tokens < 0) first_tokens = turn_tokens;
    if (turns < 1 || turns > 64 || turn_tokens < 1 || first_tokens < 1 || reply < 1 || reply > 64 || threads < 1) {
        fprintf(stderr, "bench_prefix: bad sizes\n");
        return 2;
    }
    if (!model_dir) model_dir = "build/bench-models/qwen3.5-0.8b";
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s/model.safetensors", model_dir);
    struct stat sb;
    hy_err err = {0};
    if (stat(cfg, &sb)) {
        printf("writing a random qwen3.5-0.8b checkpoint to %s ...\n", model_dir);
        fflush(stdout);
        mkdir("build", 0755);
        mkdir("build/bench-models", 0755);
        hy_model_shape shape;
        if (hy_model_shape_get(&shape, "qwen3.5-0.8b", &err)) {
            fprintf(stderr, "bench_prefix: %s\n", err.msg);
            return 1;
        }
        hy_random_model_opts o = {.out_dir = model_dir, .shape = &shape, .seed = 1};
        hy_random_model_stats rs;
        if (hy_random_model_write(&o, &rs, &err)) {
            fprintf(stderr, "bench_prefix: %s\n", err.msg);
            return 1;
        }
    }
    hy_model *m = NULL;
    if (hy_model_load(&m, model_dir, &err)) {
        fprintf(stderr, "bench_prefix: %s\n", err.msg);
        return 1;
    }
    printf("bench_prefix: %s, %d turns: %d then %d user tokens, %d-token replies, %d threads\n", model_dir, turns,
           first_tokens, turn_tokens, reply, threads);
    turn_result *on = calloc((size_t)turns, sizeof *on), *off = calloc((size_t)turns, sizeof *off);
    hy_engine_stats st_on, st_off;
    int rc = run_conversation(m, threads, false, turns, first_tokens, turn_tokens, reply, off, &st_off);
    if (!rc) rc = run_conversation(m, threads, true, turns, first_tokens, turn_tokens, reply, on, &st_on);
    if (!rc) {
        printf("\n| turn | prompt | cached | TTFT no cache (s) | TTFT cache (s) | cache / no cache | replies equal |\n");
        printf("|---:|---:|---:|---:|---:|---:|:---:|\n");
        for (int t = 0; t < turns; t++) {
            bool eq = on[t].n_reply == off[t].n_reply &&
                      !memcmp(on[t].reply, off[t].reply, sizeof(int32_t) * (size_t)on[t].n_reply);
            printf("| %d | %d | %d | %.3f | %.3f | %.1f%% | %s |\n", t + 1, on[t].prompt, on[t].cached, off[t].ttft,
                   on[t].ttft, 100.0 * on[t].ttft / off[t].ttft, eq ? "yes" : "NO");
        }
        const hy_prefix_cache_stats *pc = &st_on.pc;
        double computed = (double)(hy_hp_gdn_state_bytes(&m->hp) + hy_hp_gdn_conv_bytes(&m->hp, 4));
        double kv_tok = (double)hy_hp_kv_bytes_per_token(&m->hp, 4);
        printf("\ncheckpoints held %llu, %.2f MiB in all, %.3f MiB each on average\n",
               (unsigned long long)pc->checkpoints, (double)pc->checkpoint_bytes / 1048576.0,
               pc->checkpoints ? (double)pc->checkpoint_bytes / (double)pc->checkpoints / 1048576.0 : 0.0);
        printf("computed GDN state per checkpoint: recurrent %.3f MiB + conv %.3f MiB = %.3f MiB "
               "(+ %.1f KiB of fp32 KV per tail token, < %d tail tokens)\n",
               (double)hy_hp_gdn_state_bytes(&m->hp) / 1048576.0, (double)hy_hp_gdn_conv_bytes(&m->hp, 4) / 1048576.0,
               computed / 1048576.0, kv_tok / 1024.0, 16);
        printf("KV blocks held %llu (%.2f MiB); lookups %llu, hits %llu, tokens reused %llu of %llu\n",
               (unsigned long long)pc->blocks, (double)pc->block_bytes / 1048576.0, (unsigned long long)pc->queries,
               (unsigned long long)pc->hits, (unsigned long long)pc->hit_tokens, (unsigned long long)pc->query_tokens);
    }
    free(on);
    free(off);
    hy_model_free(m);
    return rc;
}
