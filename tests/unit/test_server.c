/* server/: the HTTP surface over a fake model and a byte-level fake vocabulary,
 * driven with raw sockets: routes, shapes, streaming (chunked SSE), errors and
 * their statuses, auth, body limit, queue limit, disconnect -> cancel, drain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chat/parse.h"
#include "server/server.h"
#include "unit/fake_model.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ---------------- fake text services ---------------- */

static int ft_encode(void *ctx, const char *text, size_t len, bool ps, int32_t **ids, size_t *n, hy_err *err) {
    (void)ctx;
    (void)ps;
    (void)err;
    *ids = malloc(sizeof(int32_t) * (len ? len : 1));
    for (size_t i = 0; i < len; i++) (*ids)[i] = (unsigned char)text[i];
    *n = len;
    return 0;
}
static int ft_decode(void *ctx, const int32_t *ids, size_t n, char **text, size_t *len, hy_err *err) {
    (void)ctx;
    (void)err;
    *text = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 256) (*text)[k++] = (char)ids[i];
    (*text)[k] = 0;
    *len = k;
    return 0;
}
static int ft_token_bytes(void *ctx, int32_t id, const char **b, size_t *len) { return fake_token_bytes(ctx, id, b, len); }
/* "role:content\n" per message, then "A:" (a stand-in for a chat template) */
static int ft_render(void *ctx, const hy_oai_request *req, char **out, size_t *len, hy_err *err) {
    (void)ctx;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t i;
    json_t *m;
    json_array_foreach(req->messages, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *c = json_string_value(json_object_get(m, "content"));
        if (!strcmp(role, "system") && i > 0) {
            free(s);
            return hy_err_set(err, HY_E_INVALID, "System message must be at the beginning.");
        }
        n += (size_t)snprintf(s + n, cap - n, "%s:%s\n", role, c ? c : "");
    }
    if (req->tools) n += (size_t)snprintf(s + n, cap - n, "T\n");
    n += (size_t)snprintf(s + n, cap - n, req->enable_thinking == 0 ? "A:" : "A:<");
    *out = s;
    *len = n;
    return 0;
}
/* Parser: text before '#' is reasoning, the rest content. */
typedef struct fparser {
    int in_reasoning;
} fparser;
static void *fp_create(void *ctx, const hy_oai_request *req, const char *prompt, size_t len) {
    (void)ctx;
    (void)req;
    fparser *p = calloc(1, sizeof *p);
    p->in_reasoning = len > 0 && prompt[len - 1] == '<';
    return p;
}
static void fp_feed(void *pp, const char *t, size_t n, hy_out_cb cb, void *u) {
    fparser *p = pp;
    size_t i = 0;
    while (i < n) {
        if (p->in_reasoning) {
            const char *h = memchr(t + i, '#', n - i);
            size_t k = h ? (size_t)(h - (t + i)) : n - i;
            hy_out_delta d = {HY_OUT_REASONING, 0, t + i, k};
            if (k) cb(u, &d);
            i += k;
            if (h) {
                p->in_reasoning = 0;
                i++;
            }
        } else {
            hy_out_delta d = {HY_OUT_CONTENT, 0, t + i, n - i};
            cb(u, &d);
            i = n;
        }
    }
}
static void fp_finish(void *p, hy_out_cb cb, void *u) {
    (void)p;
    (void)cb;
    (void)u;
}
static void fp_free(void *p) { free(p); }

/* The real chat/parse.h parser behind the seam (same wrapping as textio.c). */
typedef struct rparser {
    hy_chat_parser *p;
    hy_out_cb cb;
    void *u;
} rparser;
static void rp_event(void *user, const hy_chat_event *ev) {
    rparser *w = user;
    hy_out_delta d;
    if (ev->kind == HY_CHAT_EV_TOOL_CALL) {
        d = (hy_out_delta){HY_OUT_TOOL_START, (int)ev->tool_index, ev->name, strlen(ev->name)};
        w->cb(w->u, &d);
        d = (hy_out_delta){HY_OUT_TOOL_ARGS, (int)ev->tool_index, ev->arguments, strlen(ev->arguments)};
    } else {
        d = (hy_out_delta){ev->kind == HY_CHAT_EV_REASONING ? HY_OUT_REASONING : HY_OUT_CONTENT, 0, ev->text, ev->len};
    }
    w->cb(w->u, &d);
}
static void *rp_create(void *ctx, const hy_oai_request *req, const char *prompt, size_t len) {
    (void)ctx;
    rparser *w = calloc(1, sizeof *w);
    hy_chat_parse_opts o = {.thinking = len > 0 && prompt[len - 1] == '<', .parse_tool_calls = req->tools != NULL,
                            .tools = req->tools};
    hy_err err = {0};
    assert_int_equal(hy_chat_parser_create(&o, rp_event, w, &w->p, &err), 0);
    return w;
}
static void rp_feed(void *pp, const char *t, size_t n, hy_out_cb cb, void *u) {
    rparser *w = pp;
    w->cb = cb;
    w->u = u;
    hy_chat_parser_feed(w->p, t, n);
}
static void rp_finish(void *pp, hy_out_cb cb, void *u) {
    rparser *w = pp;
    w->cb = cb;
    w->u = u;
    hy_chat_parser_finish(w->p, NULL);
}
static void rp_free(void *pp) {
    rparser *w = pp;
    hy_chat_parser_free(w->p);
    free(w);
}

static int g_real_parser;

static hy_server_text fake_server_text(void) {
    if (g_real_parser) {
        hy_server_text t = {NULL, FAKE_N_VALID, ft_encode, ft_decode, ft_token_bytes, ft_render,
                            rp_create, rp_feed, rp_finish, rp_free, NULL, NULL};
        return t;
    }
    hy_server_text t = {NULL,   FAKE_N_VALID, ft_encode, ft_decode, ft_token_bytes, ft_render,
                        fp_create, fp_feed,     fp_finish, fp_free, NULL, NULL};
    return t;
}

/* ---------------- fixture ---------------- */

typedef struct fx {
    fake_model m;
    hy_engine *e;
    hy_server *s;
    int port;
} fx;

typedef struct script {
    const char *text;
    int n_prompt;
} script;

/* After the prompt, write text byte by byte, then EOS. */
static int script_fn(void *u, const fake_seq *s) {
    const script *sc = u;
    int k = s->pos - sc->n_prompt;
    if (k < 0) return -1;
    return k < (int)strlen(sc->text) ? (unsigned char)sc->text[k] : FAKE_EOS;
}

static void fx_start(fx *f, int max_seqs, int max_queue, int sleep_us, const char *api_key, size_t max_body) {
    memset(f, 0, sizeof *f);
    f->m.sleep_us = sleep_us;
    hy_engine_config cfg;
    hy_engine_config_default(&cfg);
    cfg.max_num_seqs = max_seqs;
    cfg.max_model_len = 256;
    cfg.prefill_chunk = 32;
    cfg.max_batch_tokens = 64;
    cfg.max_queue = max_queue;
    cfg.eos_ids[0] = FAKE_EOS;
    cfg.n_eos = 1;
    hy_engine_model mv = fake_model_vtable(&f->m, 1);
    hy_engine_text tv = fake_text_vtable();
    hy_err err = {0};
    assert_int_equal(hy_engine_create(&f->e, &cfg, &mv, &tv, &err), 0);
    hy_server_config sc;
    hy_server_config_default(&sc);
    sc.port = 0;
    sc.api_key = api_key;
    sc.model_name = "tiny";
    sc.sse_ping_ms = 200;
    if (max_body) sc.max_body = max_body;
    hy_server_text st = fake_server_text();
    int rc = hy_server_start(&f->s, &sc, f->e, &st, NULL, &err);
    if (rc) fprintf(stderr, "server: %s\n", err.msg);
    assert_int_equal(rc, 0);
    f->port = hy_server_port(f->s);
    assert_true(f->port > 0);
}

static void fx_stop(fx *f) {
    hy_server_drain(f->s, 2000);
    hy_engine_shutdown(f->e, false);
    hy_server_stop(f->s);
    hy_engine_free(f->e);
}

/* ---------------- raw HTTP client ---------------- */

typedef struct http_res {
    int status;
    char *body;
    size_t len;
    bool chunked;
} http_res;

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void send_req(int fd, const char *method, const char *path, const char *body, const char *extra) {
    char head[1024];
    size_t bl = body ? strlen(body) : 0;
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n%s\r\n",
                     method, path, bl, extra ? extra : "");
    assert_true(send(fd, head, (size_t)n, MSG_NOSIGNAL) == n);
    if (bl) send(fd, body, bl, MSG_NOSIGNAL);
}

static void dechunk(http_res *r) {
    char *out = malloc(r->len + 1);
    size_t w = 0, i = 0;
    while (i < r->len) {
        size_t sz = strtoul(r->body + i, NULL, 16);
        char *eol = strstr(r->body + i, "\r\n");
        if (!eol) break;
        i = (size_t)(eol - r->body) + 2;
        if (sz == 0) break;
        memcpy(out + w, r->body + i, sz);
        w += sz;
        i += sz + 2;
    }
    out[w] = 0;
    free(r->body);
    r->body = out;
    r->len = w;
}

static http_res do_http(int port, const char *method, const char *path, const char *body, const char *extra) {
    int fd = connect_to(port);
    send_req(fd, method, path, body, extra);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 > cap) buf = realloc(buf, cap *= 2);
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = 0;
    http_res r = {0};
    sscanf(buf, "HTTP/1.1 %d", &r.status);
    char *hend = strstr(buf, "\r\n\r\n");
    assert_non_null(hend);
    r.chunked = strcasestr(buf, "transfer-encoding: chunked") && strcasestr(buf, "transfer-encoding: chunked") < hend;
    r.len = len - (size_t)(hend + 4 - buf);
    r.body = malloc(r.len + 1);
    memcpy(r.body, hend + 4, r.len);
    r.body[r.len] = 0;
    free(buf);
    if (r.chunked) dechunk(&r);
    return r;
}

static json_t *post_json(fx *f, const char *path, const char *body, int want_status) {
    http_res r = do_http(f->port, "POST", path, body, NULL);
    if (r.status != want_status) fprintf(stderr, "%s %s -> %d %s\n", path, body, r.status, r.body);
    assert_int_equal(r.status, want_status);
    json_error_t je;
    json_t *j = json_loads(r.body, 0, &je);
    if (!j) fprintf(stderr, "bad json: %s\n", r.body);
    assert_non_null(j);
    free(r.body);
    return j;
}

/* Splits SSE "data: ..." events; returns the number of JSON chunks and
 * whether [DONE] closed the stream. */
static int sse_events(const char *body, json_t **out, int max, bool *done) {
    int n = 0;
    *done = false;
    const char *p = body;
    while ((p = strstr(p, "data: "))) {
        p += 6;
        const char *e = strstr(p, "\n\n");
        assert_non_null(e);
        if (!strncmp(p, "[DONE]", 6)) *done = true;
        else if (n < max) {
            json_error_t je;
            out[n] = json_loadb(p, (size_t)(e - p), 0, &je);
            assert_non_null(out[n]);
            n++;
        }
        p = e;
    }
    return n;
}

/* ---------------- tests ---------------- */

static void test_routes_and_shapes(void **st) {
    (void)st;
    fx f;
    fx_start(&f, 4, 64, 0, NULL, 0);
    http_res r = do_http(f.port, "GET", "/health", NULL, NULL);
    assert_int_equal(r.status, 200);
    free(r.body);
    r = do_http(f.port, "GET", "/v1/models", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"id\":\"tiny\""));
    free(r.body);
    r = do_http(f.port, "GET", "/nope", NULL, NULL);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "\"error\""));
    free(r.body);
    r = do_http(f.port, "GET", "/v1/completions", NULL, NULL);
    assert_int_equal(r.status, 405);
    free(r.body);

    json_t *j = post_json(&f, "/v1/completions", "{\"prompt\":\"ab\",\"max_tokens\":5,\"temperature\":0,\"logprobs\":2}", 200);
    assert_string_equal(json_string_value(json_object_get(j, "object")), "text_completion");
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(c0, "finish_reason")), "length");
    json_t *u = json_object_get(j, "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "prompt_tokens")), 2);
    assert_int_equal(json_integer_value(json_object_get(u, "completion_tokens")), 5);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens")), 0);
    assert_int_equal(json_array_size(json_object_get(json_object_get(c0, "logprobs"), "tokens")), 5);
    char *text_ns = strdup(json_string_value(json_object_get(c0, "text")));
    json_decref(j);

    /* the same request streamed: same text, chunks, [DONE], usage chunk */
    r = do_http(f.port, "POST", "/v1/completions",
                "{\"prompt\":\"ab\",\"max_tokens\":5,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                NULL);
    assert_int_equal(r.status, 200);
    assert_true(r.chunked);
    json_t *ev[64];
    bool done;
    int n = sse_events(r.body, ev, 64, &done);
    assert_true(done);
    char text_s[256] = "";
    int usage_chunks = 0;
    for (int i = 0; i < n; i++) {
        json_t *ch = json_array_get(json_object_get(ev[i], "choices"), 0);
        if (ch) strcat(text_s, json_string_value(json_object_get(ch, "text")));
        if (json_is_object(json_object_get(ev[i], "usage"))) usage_chunks++;
        json_decref(ev[i]);
    }
    assert_string_equal(text_s, text_ns);
    assert_int_equal(usage_chunks, 1);
    free(r.body);
    free(text_ns);

    /* chat: reasoning before '#', content after; thinking off -> all content */
    j = post_json(&f, "/v1/chat/completions",
                  "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":20,\"seed\":3}", 200);
    c0 = json_array_get(json_object_get(j, "choices"), 0);
    json_t *msg = json_object_get(c0, "message");
    assert_string_equal(json_string_value(json_object_get(msg, "role")), "assistant");
    assert_true(json_is_string(json_object_get(msg, "content")));
    assert_string_equal(json_string_value(json_object_get(j, "object")), "chat.completion");
    assert_true(strncmp(json_string_value(json_object_get(j, "id")), "chatcmpl-", 9) == 0);
    json_decref(j);

    /* streamed chat: role first, then deltas, finish chunk, [DONE] */
    r = do_http(f.port, "POST", "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,\"stream\":true,\"n\":2,"
                "\"chat_template_kwargs\":{\"enable_thinking\":false}}",
                NULL);
    n = sse_events(r.body, ev, 64, &done);
    assert_true(done);
    int roles = 0, finishes = 0;
    for (int i = 0; i < n; i++) {
        json_t *ch = json_array_get(json_object_get(ev[i], "choices"), 0);
        json_t *d = json_object_get(ch, "delta");
        if (json_object_get(d, "role")) roles++;
        if (json_is_string(json_object_get(ch, "finish_reason"))) finishes++;
        assert_null(json_object_get(d, "reasoning_content")); /* thinking off */
        json_decref(ev[i]);
    }
    assert_int_equal(roles, 2);
    assert_int_equal(finishes, 2);
    free(r.body);

    /* tokenize / detokenize */
    j = post_json(&f, "/tokenize", "{\"prompt\":\"abc\"}", 200);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 3);
    json_decref(j);
    j = post_json(&f, "/tokenize", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":{\"enable_thinking\":false}}", 200);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 9); /* "user:x\nA:" */
    json_decref(j);
    j = post_json(&f, "/detokenize", "{\"tokens\":[104,105]}", 200);
    assert_string_equal(json_string_value(json_object_get(j, "prompt")), "hi");
    json_decref(j);

    r = do_http(f.port, "GET", "/metrics", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "hyla:num_requests_running{model_name=\"tiny\"} 0"));
    assert_non_null(strstr(r.body, "hyla:time_to_first_token_seconds_bucket"));
    assert_non_null(strstr(r.body, "hyla:http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2"));
    free(r.body);
    fx_stop(&f);
}

static void expect_status(fx *f, const char *path, const char *body, int status, const char *param) {
    json_t *j = post_json(f, path, body, status);
    json_t *e = json_object_get(j, "error");
    assert_non_null(e);
    assert_true(json_is_string(json_object_get(e, "message")));
    assert_true(json_is_string(json_object_get(e, "type")));
    if (param) assert_string_equal(json_string_value(json_object_get(e, "param")), param);
    json_decref(j);
}

static void test_errors(void **st) {
    (void)st;
    fx f;
    fx_start(&f, 2, 64, 0, NULL, 4096);
    expect_status(&f, "/v1/chat/completions", "{\"messages\":", 400, NULL);
    expect_status(&f, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"x\"}", 400, "temperature");
    expect_status(&f, "/v1/chat/completions", "{\"model\":\"other\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 404, "model");
    expect_status(&f, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"s\"}]}", 400, "messages");
    expect_status(&f, "/v1/completions", "{\"prompt\":[1,2,999]}", 400, "prompt[2]");
    char big[400];
    memset(big, 'a', sizeof big);
    big[sizeof big - 1] = 0;
    char body[600];
    snprintf(body, sizeof body, "{\"prompt\":\"%s\"}", big); /* 399 tokens > max-model-len 256 */
    expect_status(&f, "/v1/completions", body, 400, "prompt");
    char *huge = malloc(10000);
    memset(huge, ' ', 9999);
    huge[0] = '{';
    huge[9998] = '}';
    huge[9999] = 0;
    http_res r = do_http(f.port, "POST", "/v1/completions", huge, NULL);
    assert_int_equal(r.status, 413);
    assert_non_null(strstr(r.body, "\"error\""));
    free(r.body);
    free(huge);
    /* the server still answers normally afterwards */
    json_t *j = post_json(&f, "/v1/completions", "{\"prompt\":\"ok\",\"max_tokens\":2}", 200);
    json_decref(j);
    fx_stop(&f);

    fx_start(&f, 2, 64, 0, "sekrit", 0);
    expect_status(&f, "/v1/completions", "{\"prompt\":\"ok\",\"max_tokens\":2}", 401, NULL);
    r = do_http(f.port, "POST", "/v1/completions", "{\"prompt\":\"ok\",\"max_tokens\":2}", "Authorization: Bearer wrong\r\n");
    assert_int_equal(r.status, 401);
    free(r.body);
    r = do_http(f.port, "POST", "/v1/completions", "{\"prompt\":\"ok\",\"max_tokens\":2}", "Authorization: Bearer sekrit\r\n");
    assert_int_equal(r.status, 200);
    free(r.body);
    r = do_http(f.port, "GET", "/health", NULL, NULL);
    assert_int_equal(r.status, 200);
    free(r.body);
    fx_stop(&f);
}

typedef struct bg {
    int port;
    int status;
} bg;

static void *bg_post(void *u) {
    bg *b = u;
    http_res r = do_http(b->port, "POST", "/v1/completions", "{\"prompt\":\"slow\",\"max_tokens\":40,\"ignore_eos\":true}", NULL);
    b->status = r.status;
    free(r.body);
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_queue_full_and_disconnect(void **st) {
    (void)st;
    fx f;
    fx_start(&f, 1, 2, 3000, NULL, 0);
    enum { N = 6 };
    pthread_t th[N];
    bg b[N];
    for (int i = 0; i < N; i++) {
        b[i].port = f.port;
        pthread_create(&th[i], NULL, bg_post, &b[i]);
        usleep(20000);
    }
    int ok = 0, busy = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += b[i].status == 200;
        busy += b[i].status == 429;
    }
    printf("  %d x 200, %d x 429\n", ok, busy);
    assert_int_equal(ok + busy, N);
    assert_true(busy >= 1 && ok >= 3);

    /* streaming clients that vanish mid-way free their slots within 1 s */
    int fds[3];
    for (int i = 0; i < 3; i++) {
        fds[i] = connect_to(f.port);
        send_req(fds[i], "POST", "/v1/completions", "{\"prompt\":\"go\",\"max_tokens\":200,\"ignore_eos\":true,\"stream\":true}", NULL);
    }
    char tmp[256];
    assert_true(recv(fds[0], tmp, sizeof tmp, 0) > 0); /* first one is streaming */
    double t0 = now();
    for (int i = 0; i < 3; i++) close(fds[i]);
    hy_engine_stats s;
    for (;;) {
        hy_engine_get_stats(f.e, &s);
        if ((s.running_requests == 0 && s.waiting_requests == 0) || now() - t0 > 3) break;
        usleep(10000);
    }
    printf("  engine idle %.3f s after 3 clients disconnected\n", now() - t0);
    assert_int_equal(s.running_requests, 0);
    assert_int_equal(s.waiting_requests, 0);
    assert_true(now() - t0 < 1.0);
    fx_stop(&f);
}

static void test_tool_calls_and_reasoning(void **st) {
    (void)st;
    g_real_parser = 1;
    fx f;
    fx_start(&f, 2, 16, 0, NULL, 0);
    script sc = {"Let me check.</think>\n\nSure.<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                 "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
                 0};
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"
                        "\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"}}}}}]";
    char body[1024];
    snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":%s}", tools);
    json_t *tk = post_json(&f, "/tokenize", body, 200);
    sc.n_prompt = (int)json_integer_value(json_object_get(tk, "count"));
    json_decref(tk);
    f.m.u = &sc;
    f.m.script = script_fn;
    snprintf(body, sizeof body,
             "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":%s,\"max_tokens\":300,\"temperature\":0}", tools);
    json_t *j = post_json(&f, "/v1/chat/completions", body, 200);
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    json_t *m = json_object_get(c0, "message");
    assert_string_equal(json_string_value(json_object_get(c0, "finish_reason")), "tool_calls");
    assert_string_equal(json_string_value(json_object_get(m, "reasoning_content")), "Let me check.");
    assert_string_equal(json_string_value(json_object_get(m, "content")), "Sure.");
    json_t *tc = json_array_get(json_object_get(m, "tool_calls"), 0);
    assert_true(strncmp(json_string_value(json_object_get(tc, "id")), "call_", 5) == 0);
    assert_string_equal(json_string_value(json_object_get(tc, "type")), "function");
    json_t *fn = json_object_get(tc, "function");
    assert_string_equal(json_string_value(json_object_get(fn, "name")), "get_weather");
    assert_string_equal(json_string_value(json_object_get(fn, "arguments")), "{\"city\": \"Paris\", \"days\": 3}");
    json_decref(j);

    /* streamed: reasoning, content, one tool call (id + name, then arguments), finish tool_calls */
    snprintf(body, sizeof body,
             "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":%s,\"max_tokens\":300,\"temperature\":0,"
             "\"stream\":true}", tools);
    http_res r = do_http(f.port, "POST", "/v1/chat/completions", body, NULL);
    json_t *ev[256];
    bool done;
    int n = sse_events(r.body, ev, 256, &done);
    assert_true(done);
    char reasoning[128] = "", content[128] = "", args[128] = "", name[64] = "", fin[32] = "";
    for (int i = 0; i < n; i++) {
        json_t *ch = json_array_get(json_object_get(ev[i], "choices"), 0);
        json_t *d = json_object_get(ch, "delta");
        if (json_is_string(json_object_get(d, "reasoning_content"))) strcat(reasoning, json_string_value(json_object_get(d, "reasoning_content")));
        if (json_is_string(json_object_get(d, "content"))) strcat(content, json_string_value(json_object_get(d, "content")));
        json_t *t = json_array_get(json_object_get(d, "tool_calls"), 0);
        if (t) {
            json_t *tf = json_object_get(t, "function");
            if (json_is_string(json_object_get(tf, "name"))) strcat(name, json_string_value(json_object_get(tf, "name")));
            strcat(args, json_string_value(json_object_get(tf, "arguments")));
            assert_int_equal(json_integer_value(json_object_get(t, "index")), 0);
        }
        if (json_is_string(json_object_get(ch, "finish_reason"))) strcat(fin, json_string_value(json_object_get(ch, "finish_reason")));
        json_decref(ev[i]);
    }
    free(r.body);
    assert_string_equal(reasoning, "Let me check.");
    assert_string_equal(content, "Sure.");
    assert_string_equal(name, "get_weather");
    assert_string_equal(args, "{\"city\": \"Paris\", \"days\": 3}");
    assert_string_equal(fin, "tool_calls");
    fx_stop(&f);
    g_real_parser = 0;
}

/* A prefill longer than the ping interval gets SSE comments before the first token. */
static void test_sse_ping(void **st) {
    (void)st;
    fx f;
    fx_start(&f, 1, 4, 450000, NULL, 0); /* each step sleeps 0.45 s; pings every 0.2 s */
    http_res r = do_http(f.port, "POST", "/v1/completions", "{\"prompt\":\"p\",\"max_tokens\":2,\"stream\":true}", NULL);
    assert_int_equal(r.status, 200);
    const char *ping = strstr(r.body, ": ping\n\n");
    const char *data = strstr(r.body, "data: ");
    assert_non_null(ping);
    assert_true(data && ping < data);
    assert_non_null(strstr(r.body, "data: [DONE]"));
    free(r.body);
    fx_stop(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_and_shapes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_queue_full_and_disconnect),
        cmocka_unit_test(test_tool_calls_and_reasoning),
        cmocka_unit_test(test_sse_ping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
