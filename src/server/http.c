/*
 * libmicrohttpd glue (the only file including microhttpd.h). Collects the
 * upload, enforces the body limit, calls the handler once per request and
 * turns its answer into an MHD response. Thread per connection: handlers and
 * stream callbacks may block. Counts in-flight requests so a draining
 * shutdown knows when it may stop the daemon.
 */
#include "server/http.h"

#include "base/log.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct hy_http {
    struct MHD_Daemon *d;
    hy_http_handler handler;
    void *ctx;
    size_t max_body;
    int port;
    atomic_int in_flight;
};

typedef struct conn_state {
    char *body;
    size_t len, cap;
    bool too_large;
    bool counted;
} conn_state;

typedef struct stream_ctx {
    hy_http *srv;
    hy_http_resp r;
} stream_ctx;

static const char k_413[] =
    "{\"error\":{\"message\":\"the request body is larger than the server's limit\",\"type\":\"invalid_request_error\","
    "\"param\":null,\"code\":\"request_too_large\"}}";

static enum MHD_Result queue_static(struct MHD_Connection *c, int status, const char *body) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_ctx *s = cls;
    ssize_t n = s->r.stream_read(s->r.stream_u, buf, max);
    if (n == HY_HTTP_STREAM_END) return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void stream_free(void *cls) {
    stream_ctx *s = cls;
    if (s->r.stream_free) s->r.stream_free(s->r.stream_u);
    atomic_fetch_sub(&s->srv->in_flight, 1);
    free(s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    hy_http *srv = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        cs = calloc(1, sizeof *cs);
        if (!cs) return MHD_NO;
        *con_cls = cs;
        cs->counted = true;
        atomic_fetch_add(&srv->in_flight, 1);
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            unsigned long long v = strtoull(cl, &end, 10);
            if (*end || v > srv->max_body) cs->too_large = true;
        }
        if (cs->too_large) return queue_static(conn, 413, k_413);
        return MHD_YES;
    }
    if (*upload_size) {
        if (!cs->too_large) {
            if (cs->len + *upload_size > srv->max_body) {
                cs->too_large = true;
            } else {
                if (cs->len + *upload_size + 1 > cs->cap) {
                    size_t nc = cs->cap ? cs->cap : 4096;
                    while (nc < cs->len + *upload_size + 1) nc *= 2;
                    char *nb = realloc(cs->body, nc);
                    if (!nb) return MHD_NO;
                    cs->body = nb;
                    cs->cap = nc;
                }
                memcpy(cs->body + cs->len, upload_data, *upload_size);
                cs->len += *upload_size;
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (cs->too_large) return queue_static(conn, 413, k_413);

    /* strip the query string */
    char path[512];
    size_t pl = strcspn(url, "?");
    if (pl >= sizeof path) pl = sizeof path - 1;
    memcpy(path, url, pl);
    path[pl] = 0;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    hy_http_req req = {
        .method = method,
        .path = path,
        .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        .body = cs->body ? cs->body : "",
        .body_len = cs->len,
        .fd = ci ? ci->connect_fd : -1,
    };
    hy_http_resp r = {0};
    srv->handler(srv->ctx, &req, &r);
    struct MHD_Response *resp;
    if (r.stream_read) {
        stream_ctx *s = calloc(1, sizeof *s);
        if (!s) {
            if (r.stream_free) r.stream_free(r.stream_u);
            return MHD_NO;
        }
        s->srv = srv;
        s->r = r;
        atomic_fetch_add(&srv->in_flight, 1); /* the stream outlives the request callback */
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader, s, stream_free);
        if (!resp) {
            stream_free(s);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    } else {
        resp = MHD_create_response_from_buffer(r.body_len, r.body ? r.body : (void *)"",
                                               r.body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!resp) {
            free(r.body);
            return MHD_NO;
        }
    }
    MHD_add_response_header(resp, "Content-Type", r.content_type ? r.content_type : "application/json");
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)(r.status ? r.status : 200), resp);
    MHD_destroy_response(resp);
    return rc;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)conn;
    (void)toe;
    hy_http *srv = cls;
    conn_state *cs = *con_cls;
    if (!cs) return;
    if (cs->counted) atomic_fetch_sub(&srv->in_flight, 1);
    free(cs->body);
    free(cs);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n') msg[--n] = 0;
    HY_LOGD("http: %s", msg);
}

int hy_http_start(hy_http **out, const hy_http_opts *o, hy_http_handler h, void *ctx, hy_err *err) {
    *out = NULL;
    hy_http *s = calloc(1, sizeof *s);
    if (!s) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    s->handler = h;
    s->ctx = ctx;
    s->max_body = o->max_body;
    atomic_init(&s->in_flight, 0);
    const char *host = o->host && *o->host ? o->host : "127.0.0.1";
    if (!strcmp(host, "localhost")) host = "127.0.0.1";
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *sa;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)o->port);
        sa = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)o->port);
        sa = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        free(s);
        return hy_err_set(err, HY_E_INVALID, "--host '%s' is not an IPv4/IPv6 address", host);
    }
    s->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)(o->max_connections > 0 ? o->max_connections : 256), MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)(o->idle_timeout_s > 0 ? o->idle_timeout_s : 60), MHD_OPTION_EXTERNAL_LOGGER,
                            mhd_log, NULL, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (!s->d) {
        free(s);
        return hy_err_set(err, HY_E_IO, "cannot listen on %s:%d (address in use or not permitted)", host, o->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : o->port;
    *out = s;
    return 0;
}

int hy_http_port(const hy_http *s) { return s->port; }

void hy_http_quiesce(hy_http *s) {
    MHD_socket fd = MHD_quiesce_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

int hy_http_in_flight(const hy_http *s) { return atomic_load(&((hy_http *)s)->in_flight); }

void hy_http_stop(hy_http *s) {
    if (!s) return;
    MHD_stop_daemon(s->d);
    free(s);
}

bool hy_http_client_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
    if (p.revents & POLLIN) {
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0;
    }
    return false;
}
