/*
 * Minimal HTTP/1.1 server interface over libmicrohttpd. http.c is the only
 * file that includes microhttpd.h; the rest of the server sees requests with
 * a complete body and answers with either a whole body or a pull-style
 * stream (chunked transfer encoding, used for SSE).
 *
 * Threading: one thread per connection (MHD_USE_THREAD_PER_CONNECTION), so a
 * handler, and a stream's read callback, may block (waiting for engine
 * events) without stalling other clients. Keep-alive is handled by MHD.
 * Bodies above max_body are answered 413 without calling the handler.
 */
#ifndef HY_SERVER_HTTP_H
#define HY_SERVER_HTTP_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct hy_http_req {
    const char *method;
    const char *path;          /* without the query string */
    const char *authorization; /* header value or NULL */
    const char *body;          /* NUL-terminated; body_len bytes */
    size_t body_len;
    int fd;                    /* the connection's socket, for hy_http_client_gone */
} hy_http_req;

/* A stream read returns bytes written to buf (> 0), or one of these. It may
 * block; it is called again as soon as the previous bytes are sent. */
#define HY_HTTP_STREAM_END (-1)
#define HY_HTTP_STREAM_ABORT (-2)

typedef struct hy_http_resp {
    int status;
    const char *content_type;  /* static string */
    char *body;                /* malloc'd; freed by http.c */
    size_t body_len;
    /* streaming instead of body: */
    ssize_t (*stream_read)(void *u, char *buf, size_t max);
    void (*stream_free)(void *u); /* always called once, also when the client went away */
    void *stream_u;
} hy_http_resp;

typedef void (*hy_http_handler)(void *ctx, const hy_http_req *req, hy_http_resp *resp);

typedef struct hy_http hy_http;

typedef struct hy_http_opts {
    const char *host;          /* IPv4/IPv6 literal or "localhost"; NULL -> 127.0.0.1 */
    int port;                  /* 0 -> any free port (see hy_http_port) */
    size_t max_body;           /* bytes */
    int max_connections;
    int idle_timeout_s;        /* keep-alive connections idle longer are closed */
} hy_http_opts;

int hy_http_start(hy_http **out, const hy_http_opts *o, hy_http_handler h, void *ctx, hy_err *err);
int hy_http_port(const hy_http *s);
/* Stops accepting new connections; open ones continue. */
void hy_http_quiesce(hy_http *s);
/* Requests whose handler or stream has not finished yet. */
int hy_http_in_flight(const hy_http *s);
/* Closes everything and joins the threads. */
void hy_http_stop(hy_http *s);

/* True when the peer closed (or reset) the connection on fd. */
bool hy_http_client_gone(int fd);

#endif
