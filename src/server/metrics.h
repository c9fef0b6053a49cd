/*
 * Prometheus text exposition for GET /metrics: engine statistics (vLLM-style
 * names under the `hyla:` prefix) and HTTP request counters kept here.
 * Counters are atomics, safe to bump from any HTTP thread.
 */
#ifndef HY_SERVER_METRICS_H
#define HY_SERVER_METRICS_H

#include "engine/engine.h"

#include <stdatomic.h>
#include <stddef.h>

enum hy_route {
    HY_ROUTE_CHAT = 0,
    HY_ROUTE_COMPLETIONS,
    HY_ROUTE_MODELS,
    HY_ROUTE_HEALTH,
    HY_ROUTE_METRICS,
    HY_ROUTE_TOKENIZE,
    HY_ROUTE_DETOKENIZE,
    HY_ROUTE_OTHER,
    HY_ROUTE_COUNT
};

#define HY_METRICS_N_STATUS 12

typedef struct hy_http_counters {
    atomic_ullong n[HY_ROUTE_COUNT][HY_METRICS_N_STATUS];
} hy_http_counters;

void hy_http_counters_init(hy_http_counters *c);
void hy_http_count(hy_http_counters *c, int route, int status);
/* Renders everything; malloc'd NUL-terminated text, *len its length. */
char *hy_metrics_render(const hy_engine_stats *st, const hy_http_counters *c, const char *model_name, size_t *len);

#endif
