/* Prefix cache benchmark on a synthetic Qwen3.5-0.8B checkpoint (hyla random-model shape
 * qwen3.5-0.8b, bf16), run through the engine with the cache on and off; two scenarios.
 *
 * "equal" (issue 6 as first measured): 4 turns of 2048 new USER tokens each, 8-token
 * replies. Prints TTFT per turn for both, the ratio, whether the greedy replies agree, and the
 * checkpoint memory held per checkpoint next to the computed size (hy_hp_gdn_state_bytes +
 * hy_hp_gdn_conv_bytes, plus the tail KV rows a checkpoint at an unaligned position carries).
 * A cached turn still computes its new tokens: with equal turns, turn k costs at least 1/k of
 * the uncached prefill (attention over the longer context makes it a bit more), so turn 4
 * can never get below ~25% here.
 *
 * "agent" (a chat / agent loop, where most of a turn is the reply the engine generated):
 * turn 1 is a document of --first-tokens user tokens (default 2048), every later turn a short
 * user message (--agent-user, default 32 tokens), and every turn ends with a generated reply
 * (--agent-reply tokens, default 1984, greedy, no eos) that the next prompt re-sends. With the
 * cache on (prefix cache + reuse of generated tokens, engine.c) the replies are generated and
 * the next turn resumes in the retained slot; the uncached TTFT of each turn is measured on a
 * second engine (cache off) with the same prompts and max_tokens 1, so the replies are decoded
 * only once. The agent scenario runs with --agent-weights (default q8, converted at load, for
 * both of its engines) because decoding the replies in bf16 on 2 shared cores is slow
 * (~3-10 tok/s); its ratio does not depend on the weight format much (both sides use it). A
 * The defaults make every turn about 2k tokens (the "4-turn conversation of 2k-token
 * turns": a 2048-token document, then 32 user + 1984 reply tokens + chat markup); the three
 * replies before turn 4 are about 6k decoded tokens, minutes on 2 cores: --agent-reply 128
 * for a quick look.
 *
 * Usage: bench_prefix [--model DIR] [--scenario equal|agent|both] [--turns N] [--turn-tokens N]
 *        [--first-tokens N] [--reply N] [--agent-user N] [--agent-reply N] [--agent-weights FMT]
 *        [--threads N]
 * --first-tokens sizes the first user message alone (a document, then short follow-ups).
 * Without --model the checkpoint is written once to $HYLA_BENCH_MODEL or
 * build/bench-models/qwen3.5-0.8b (about 1.6 GiB) and reused. Wall-clock times (TTFT is what a
 * user waits for); the machine may be shared, so compare ratios. Prints only; no asserts. */
#include "engine/engine.h"
#include "engine/fwd_model.h"
#include "model/linears.h"
#include "model/hparams.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/shapes.h"

#include <stdbool.h>
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

#define MAX_REPLY 4096

typedef struct turn_result {
    double ttft;
    int prompt, cached;
    int32_t reply[MAX_REPLY];
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
            if (tr->n_reply < MAX_REPLY) tr->reply[tr->n_reply++] = ev.token;
        } else if (ev.type == HY_EV_DONE) {
            tr->cached = ev.cached_tokens;
        }
        hy_event_clear(&ev);
    }
    hy_request_release(r);
    c->n = n0;
    return 0;
}

static int run_conversation(const hy_model *m, const hy_ctx_opts *co, bool cache, int turns, int first_tokens,
                            int turn_tokens, int reply, turn_result *res, hy_engine_stats *st,
                            const turn_result *replay) {
    hy_err err = {0};
    hy_fwd_model *fm = NULL;
    int max_len = first_tokens + turns * (turn_tokens + reply + 16) + 128;
    if (hy_fwd_model_create_opts(&fm, m, co, max_len, &err)) {
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
        /* replay (agent, uncached side): the first token only, then the replies the cached
         * run generated, so both sides see the same prompts and replies are decoded once */
        rc = run_turn(e, &cv, replay ? 1 : reply, &res[t]);
        const turn_result *rp = replay ? &replay[t] : &res[t];
        if (!rc) message(&cv, R_ASSIST, rp->reply, rp->n_reply);
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

static void print_table(const turn_result *on, const turn_result *off, int turns, bool compare_replies) {
    printf("\n| turn | prompt | cached | TTFT no cache (s) | TTFT cache (s) | cache / no cache |%s\n",
           compare_replies ? " replies equal |" : "");
    printf("|---:|---:|---:|---:|---:|---:|%s\n", compare_replies ? ":---:|" : "");
    for (int t = 0; t < turns; t++) {
        bool eq = on[t].n_reply == off[t].n_reply &&
                  !memcmp(on[t].reply, off[t].reply, sizeof(int32_t) * (size_t)on[t].n_reply);
        printf("| %d | %d | %d | %.3f | %.3f | %.1f%% |%s\n", t + 1, on[t].prompt, on[t].cached, off[t].ttft, on[t].ttft,
               100.0 * on[t].ttft / off[t].ttft, compare_replies ? (eq ? " yes |" : " NO |") : "");
    }
}

int main(int argc, char **argv) {
    const char *model_dir = getenv("HYLA_BENCH_MODEL"), *scenario = "both", *agent_w = "q8";
    int turns = 4, turn_tokens = 2048, reply = 8, first_tokens = -1, agent_user = 32, agent_reply = 1984;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i += 2) { /* --option value pairs */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_prefix: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--model")) model_dir = v;
        else if (!strcmp(a, "--scenario")) scenario = v;
        else if (!strcmp(a, "--turns")) turns = atoi(v);
        else if (!strcmp(a, "--turn-tokens")) turn_tokens = atoi(v);
        else if (!strcmp(a, "--first-tokens")) first_tokens = atoi(v);
        else if (!strcmp(a, "--reply")) reply = atoi(v);
        else if (!strcmp(a, "--agent-user")) agent_user = atoi(v);
        else if (!strcmp(a, "--agent-reply")) agent_reply = atoi(v);
        else if (!strcmp(a, "--agent-weights")) agent_w = v;
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else {
            fprintf(stderr, "usage: bench_prefix [--model DIR] [--scenario equal|agent|both] [--turns N] [--turn-tokens N] "
                            "[--first-tokens N] [--reply N] [--agent-user N] [--agent-reply N] [--agent-weights FMT] "
                            "[--threads N]\n");
            return 2;
        }
    }
    const bool do_equal = !strcmp(scenario, "equal") || !strcmp(scenario, "both");
    const bool do_agent = !strcmp(scenario, "agent") || !strcmp(scenario, "both");
    const int wreq = hy_wreq_parse(agent_w);
    const int agent_first = first_tokens < 0 ? 2048 : first_tokens;
    if (first_tokens < 0) first_tokens = turn_tokens;
    if ((!do_equal && !do_agent) || wreq < 0 || turns < 1 || turns > 64 || turn_tokens < 1 || first_tokens < 1 ||
        reply < 1 || reply > 64 || agent_user < 1 || agent_reply < 1 || agent_reply > MAX_REPLY || threads < 1) {
        fprintf(stderr, "bench_prefix: bad options\n");
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
    int rc = 0;
    turn_result *on = calloc((size_t)turns, sizeof *on), *off = calloc((size_t)turns, sizeof *off);
    if (!on || !off) return 1;
    if (do_equal) {
        printf("bench_prefix [equal user turns]: %s, %d turns: %d then %d user tokens, %d-token replies, weights as "
               "stored, %d threads\n", model_dir, turns, first_tokens, turn_tokens, reply, threads);
        hy_ctx_opts co = {.n_threads = threads, .max_chunk = 512};
        hy_engine_stats st_on, st_off;
        rc = run_conversation(m, &co, false, turns, first_tokens, turn_tokens, reply, off, &st_off, NULL);
        if (!rc) rc = run_conversation(m, &co, true, turns, first_tokens, turn_tokens, reply, on, &st_on, NULL);
        if (!rc) {
            print_table(on, off, turns, true);
            printf("(floor: a cached turn k still prefills its 1/k share of new user tokens)\n");
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
            /* held bytes = n x computed state + whole tail KV rows: check it exactly */
            const double tail = (double)pc->checkpoint_bytes - (double)pc->checkpoints * computed;
            const double ttok = kv_tok > 0 ? tail / kv_tok : -1;
            const bool exact = pc->checkpoints > 0 && tail >= 0 && ttok == (double)(long long)ttok &&
                               ttok < 16.0 * (double)pc->checkpoints;
            printf("held = %llu x %.0f B (computed state) + %.0f tail KV rows x %.0f B: %s\n",
                   (unsigned long long)pc->checkpoints, computed, ttok, kv_tok,
                   exact ? "equal to the computed size" : "MISMATCH with the computed size");
            printf("KV blocks held %llu (%.2f MiB); lookups %llu, hits %llu, tokens reused %llu of %llu\n",
                   (unsigned long long)pc->blocks, (double)pc->block_bytes / 1048576.0, (unsigned long long)pc->queries,
                   (unsigned long long)pc->hits, (unsigned long long)pc->hit_tokens, (unsigned long long)pc->query_tokens);
        }
    }
    if (!rc && do_agent) {
        printf("\nbench_prefix [agent: short user turns + generated replies]: %s, %d turns: a %d-token document, "
               "then %d-token user messages; every turn ends with a %d-token generated reply (greedy), so a turn "
               "after the first is ~%d tokens; weights %s (converted at load, both sides), %d threads\n",
               model_dir, turns, agent_first, agent_user, agent_reply, agent_user + agent_reply + 10, agent_w, threads);
        hy_ctx_opts co = {.n_threads = threads, .max_chunk = 512, .weights = (hy_wreq)wreq};
        hy_engine_stats st_on, st_off;
        double t0 = now_s();
        rc = run_conversation(m, &co, true, turns, agent_first, agent_user, agent_reply, on, &st_on, NULL);
        double t1 = now_s();
        if (!rc) rc = run_conversation(m, &co, false, turns, agent_first, agent_user, agent_reply, off, &st_off, on);
        if (!rc) {
            print_table(on, off, turns, false);
            printf("turn %d: cached TTFT = %.1f%% of uncached (goal <= 10%%); resumed in a retained slot %llu times "
                   "(%llu tokens), prefix-cache hits %llu (%llu tokens); cached run %.0f s (replies decoded), "
                   "uncached first tokens %.0f s\n",
                   turns, 100.0 * on[turns - 1].ttft / off[turns - 1].ttft, (unsigned long long)st_on.reuse_hits,
                   (unsigned long long)st_on.reuse_hit_tokens, (unsigned long long)st_on.pc.hits,
                   (unsigned long long)st_on.pc.hit_tokens, t1 - t0, now_s() - t1);
        }
    }
    free(on);
    free(off);
    hy_model_free(m);
    return rc;
}
