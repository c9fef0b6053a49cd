/*
 * SSE output of a streaming job: a byte buffer the chunks are appended to,
 * drained by the HTTP stream reader. The reader blocks on the engine's event
 * queue in short waits, so between events it can send keep-alive comments
 * and check whether the client disconnected (then the request is cancelled
 * and its sequence slots freed at the engine's next step).
 * Runs on the connection's thread only.
 */
#include "server/sse.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SSE_POLL_MS 50

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void hy_sse_raw(hy_job *j, const char *s, size_t n) {
    if (j->len + n > j->cap) {
        size_t nc = j->cap ? j->cap : 1024;
        while (nc < j->len + n) nc *= 2;
        char *nb = realloc(j->buf, nc);
        if (!nb) return; /* the chunk is lost; the client sees a gap rather than a crash */
        j->buf = nb;
        j->cap = nc;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
}

void hy_sse_chunk(hy_job *j, json_t *chunk) {
    char *s = hy_oai_dump(chunk);
    json_decref(chunk);
    if (!s) return;
    hy_sse_raw(j, "data: ", 6);
    hy_sse_raw(j, s, strlen(s));
    hy_sse_raw(j, "\n\n", 2);
    free(s);
}

void hy_sse_begin(hy_job *j) {
    j->last_write = now_s();
    if (j->req.kind != HY_OAI_CHAT) return;
    for (int i = 0; i < j->n; i++) {
        json_t *c = hy_oai_chunk(HY_OAI_CHAT, j->id, j->created, j->srv->model_name);
        json_t *ch = json_object();
        json_object_set_new(ch, "index", json_integer(i));
        json_t *delta = json_object();
        json_object_set_new(delta, "role", json_string("assistant"));
        json_object_set_new(delta, "content", json_string(""));
        json_object_set_new(ch, "delta", delta);
        json_object_set_new(ch, "logprobs", json_null());
        json_object_set_new(ch, "finish_reason", json_null());
        json_array_append_new(json_object_get(c, "choices"), ch);
        if (j->req.include_usage) json_object_set_new(c, "usage", json_null());
        hy_sse_chunk(j, c);
        j->ch[i].role_sent = true;
    }
}

ssize_t hy_sse_read(void *u, char *buf, size_t max) {
    hy_job *j = u;
    const int ping_ms = j->srv->cfg.sse_ping_ms > 0 ? j->srv->cfg.sse_ping_ms : 10000;
    for (;;) {
        if (j->off < j->len) {
            size_t n = j->len - j->off;
            if (n > max) n = max;
            memcpy(buf, j->buf + j->off, n);
            j->off += n;
            if (j->off == j->len) j->off = j->len = 0;
            j->last_write = now_s();
            return (ssize_t)n;
        }
        if (j->eof) return HY_HTTP_STREAM_END;
        hy_event ev;
        int rc = hy_request_next_event(j->ereq, &ev, SSE_POLL_MS);
        if (rc == 1) {
            hy_job_on_event(j, &ev);
            hy_event_clear(&ev);
            continue;
        }
        if (rc < 0) {
            j->eof = true;
            continue;
        }
        if (hy_http_client_gone(j->fd)) {
            hy_request_cancel(j->ereq);
            return HY_HTTP_STREAM_ABORT;
        }
        if ((now_s() - j->last_write) * 1000.0 >= ping_ms) hy_sse_raw(j, ": ping\n\n", 8);
    }
}

void hy_sse_free(void *u) { hy_job_free(u); }
