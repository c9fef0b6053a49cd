/*
 * Server-sent events framing for streamed answers. Each event is `data: <one-line JSON>\n\n`; the stream
 * ends with `data: [DONE]\n\n`; `: ping` comments keep idle connections
 * (long prefills) alive and let us notice clients that went away.
 */
#ifndef HY_SERVER_SSE_H
#define HY_SERVER_SSE_H

#include "server/server_impl.h"

/* The stream reader/free callbacks for hy_http_resp (u is the hy_job). */
ssize_t hy_sse_read(void *u, char *buf, size_t max);
void hy_sse_free(void *u);
/* Queues the first chunks (the assistant role of every chat choice). */
void hy_sse_begin(hy_job *j);
/* Queues `data: <chunk>\n\n`; steals chunk. */
void hy_sse_chunk(hy_job *j, json_t *chunk);
void hy_sse_raw(hy_job *j, const char *s, size_t n);

#endif
