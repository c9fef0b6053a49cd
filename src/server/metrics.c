/* Prometheus text rendering (format 0.0.4) of engine stats and HTTP counters. */
#include "server/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int k_status[HY_METRICS_N_STATUS] = {200, 400, 401, 404, 405, 413, 429, 500, 501, 503, 0, 0};
static const char *const k_route[HY_ROUTE_COUNT] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health",
                                                    "/metrics", "/tokenize", "/detokenize", "other"};

void hy_http_counters_init(hy_http_counters *c) {
    for (int r = 0; r < HY_ROUTE_COUNT; r++)
        for (int s = 0; s < HY_METRICS_N_STATUS; s++) atomic_init(&c->n[r][s], 0);
}

void hy_http_count(hy_http_counters *c, int route, int status) {
    if (route < 0 || route >= HY_ROUTE_COUNT) route = HY_ROUTE_OTHER;
    int k = HY_METRICS_N_STATUS - 1; /* "other" status */
    for (int i = 0; i < HY_METRICS_N_STATUS - 2; i++)
        if (k_status[i] == status) k = i;
    atomic_fetch_add(&c->n[route][k], 1);
}

typedef struct buf {
    char *p;
    size_t len, cap;
    int oom;
} buf;

__attribute__((format(printf, 2, 3))) static void out(buf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t nc = b->cap * 2 + (size_t)n;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

static void gauge(buf *b, const char *name, const char *help, const char *model, double v) {
    out(b, "# HELP %s %s\n# TYPE %s gauge\n%s{model_name=\"%s\"} %.17g\n", name, help, name, name, model, v);
}

static void counter(buf *b, const char *name, const char *help, const char *model, unsigned long long v) {
    out(b, "# HELP %s %s\n# TYPE %s counter\n%s{model_name=\"%s\"} %llu\n", name, help, name, name, model, v);
}

static void hist(buf *b, const char *name, const char *help, const char *model, const hy_hist *h) {
    out(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long long cum = 0;
    for (int i = 0; i < h->n_le; i++) {
        cum += h->counts[i];
        out(b, "%s_bucket{model_name=\"%s\",le=\"%g\"} %llu\n", name, model, h->le[i], cum);
    }
    out(b, "%s_bucket{model_name=\"%s\",le=\"+Inf\"} %llu\n", name, model, (unsigned long long)h->count);
    out(b, "%s_sum{model_name=\"%s\"} %.9g\n", name, model, h->sum);
    out(b, "%s_count{model_name=\"%s\"} %llu\n", name, model, (unsigned long long)h->count);
}

char *hy_metrics_render(const hy_engine_stats *st, const hy_http_counters *c, const char *model_name, size_t *len) {
    buf b = {malloc(8192), 0, 8192, 0};
    if (!b.p) return NULL;
    /* label values: the served name is user-chosen; drop characters that would need escaping */
    char model[128];
    size_t k = 0;
    for (const char *p = model_name; *p && k < sizeof model - 1; p++)
        if (*p != '"' && *p != '\\' && *p != '\n') model[k++] = *p;
    model[k] = 0;
    gauge(&b, "hyla:num_requests_running", "Requests admitted to the engine (prefill or decode).", model, st->running_requests);
    gauge(&b, "hyla:num_requests_waiting", "Requests queued for admission.", model, st->waiting_requests);
    gauge(&b, "hyla:num_seqs_running", "Sequence state slots in use.", model, st->running_seqs);
    gauge(&b, "hyla:max_num_seqs", "Sequence state slots.", model, st->max_num_seqs);
    counter(&b, "hyla:prompt_tokens_total", "Prompt tokens admitted.", model, (unsigned long long)st->prompt_tokens_total);
    counter(&b, "hyla:generation_tokens_total", "Tokens generated.", model, (unsigned long long)st->generation_tokens_total);
    counter(&b, "hyla:engine_steps_total", "Engine steps (forward batches).", model, (unsigned long long)st->steps_total);
    out(&b, "# HELP hyla:request_success_total Finished choices by finish reason.\n# TYPE hyla:request_success_total counter\n");
    static const char *const reasons[5] = {"none", "stop", "length", "abort", "error"};
    for (int i = 1; i < 5; i++)
        out(&b, "hyla:request_success_total{model_name=\"%s\",finished_reason=\"%s\"} %llu\n", model, reasons[i],
            (unsigned long long)st->finished_total[i]);
    if (st->prefix_cache) {
        const hy_prefix_cache_stats *pc = &st->pc;
        counter(&b, "hyla:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", model,
                (unsigned long long)pc->query_tokens);
        counter(&b, "hyla:prefix_cache_hits_total", "Prompt tokens restored from the prefix cache.", model,
                (unsigned long long)pc->hit_tokens);
        counter(&b, "hyla:prefix_cache_requests_total", "Prefix cache lookups (one per prefilled sequence).", model,
                (unsigned long long)pc->queries);
        counter(&b, "hyla:prefix_cache_request_hits_total", "Lookups that reused a prefix.", model,
                (unsigned long long)pc->hits);
        gauge(&b, "hyla:prefix_cache_checkpoints", "GDN state checkpoints held.", model, (double)pc->checkpoints);
        gauge(&b, "hyla:prefix_cache_checkpoint_bytes", "Bytes of GDN checkpoints held (state + tail KV).", model,
              (double)pc->checkpoint_bytes);
        counter(&b, "hyla:prefix_cache_checkpoint_evictions_total", "GDN checkpoints evicted (LRU).", model,
                (unsigned long long)pc->checkpoint_evictions);
        gauge(&b, "hyla:prefix_cache_blocks", "Attention KV blocks held.", model, (double)pc->blocks);
        gauge(&b, "hyla:prefix_cache_block_bytes", "Bytes of attention KV blocks held.", model, (double)pc->block_bytes);
        counter(&b, "hyla:prefix_cache_block_evictions_total", "Attention KV blocks evicted (LRU).", model,
                (unsigned long long)pc->block_evictions);
    }
    if (st->reuse_generated) {
        gauge(&b, "hyla:retained_seqs", "Free slots keeping a finished sequence's state (reuse of generated tokens).",
              model, (double)st->retained_seqs);
        gauge(&b, "hyla:retained_tokens", "Tokens held by those retained sequences.", model,
              (double)st->retained_tokens);
        counter(&b, "hyla:retained_hits_total", "Sequences that resumed in a retained slot.", model,
                (unsigned long long)st->reuse_hits);
        counter(&b, "hyla:retained_hit_tokens_total", "Prompt tokens not recomputed thanks to a retained slot.", model,
                (unsigned long long)st->reuse_hit_tokens);
        counter(&b, "hyla:retained_evictions_total", "Retained states dropped to serve another prompt (LRU).", model,
                (unsigned long long)st->retained_evictions);
    }
    hist(&b, "hyla:time_to_first_token_seconds", "Time from arrival to the first generated token.", model, &st->ttft);
    hist(&b, "hyla:inter_token_latency_seconds", "Time between consecutive tokens of a sequence.", model, &st->itl);
    hist(&b, "hyla:e2e_request_latency_seconds", "Time from arrival to the end of a request.", model, &st->e2e);
    hist(&b, "hyla:request_queue_time_seconds", "Time spent waiting for admission.", model, &st->queue);
    out(&b, "# HELP hyla:http_requests_total HTTP requests by endpoint and status.\n# TYPE hyla:http_requests_total counter\n");
    for (int r = 0; r < HY_ROUTE_COUNT; r++)
        for (int s = 0; s < HY_METRICS_N_STATUS - 1; s++) {
            unsigned long long v = atomic_load(&((hy_http_counters *)c)->n[r][s]);
            if (!v) continue;
            if (k_status[s]) out(&b, "hyla:http_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n", k_route[r], k_status[s], v);
        }
    for (int r = 0; r < HY_ROUTE_COUNT; r++) {
        unsigned long long v = atomic_load(&((hy_http_counters *)c)->n[r][HY_METRICS_N_STATUS - 1]);
        if (v) out(&b, "hyla:http_requests_total{endpoint=\"%s\",status=\"other\"} %llu\n", k_route[r], v);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
