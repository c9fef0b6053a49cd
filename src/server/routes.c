/*
 * Endpoints of the OpenAI-compatible server and its lifecycle. Every
 * handler runs on the connection's thread: parse -> validate -> render ->
 * tokenize -> submit to the engine -> wait for events (or hand a stream to
 * sse.c) -> serialise. Errors use OpenAI's JSON shape with the right status;
 * one request's failure never touches another's state.
 *
 * Routes: GET /health, GET /metrics, GET /v1/models, POST /v1/chat/completions,
 * POST /v1/completions, POST /tokenize, POST /detokenize. With --api-key every
 * route except /health and /metrics needs "Authorization: Bearer <key>".
 */
#include "server/server_impl.h"

#include "base/log.h"
#include "server/sse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_POLL_MS 100

void hy_server_config_default(hy_server_config *c) {
    memset(c, 0, sizeof *c);
    c->host = "127.0.0.1";
    c->port = 8080;
    c->model_name = "hyla";
    c->max_body = 8u << 20;
    c->max_connections = 256;
    c->sse_ping_ms = 10000;
}

/* ---------------- replies ---------------- */

static void reply_json(hy_http_resp *r, int status, json_t *j) {
    r->status = status;
    r->content_type = "application/json";
    r->body = hy_oai_dump(j);
    r->body_len = r->body ? strlen(r->body) : 0;
    json_decref(j);
    if (!r->body) r->status = 500;
}

static void reply_error(hy_http_resp *r, const hy_oai_error *e) {
    r->status = e->status;
    r->content_type = "application/json";
    r->body = hy_oai_error_json(e);
    r->body_len = r->body ? strlen(r->body) : 0;
}

__attribute__((format(printf, 4, 5))) static void reply_err(hy_http_resp *r, int status, const char *param,
                                                            const char *fmt, ...) {
    hy_oai_error e;
    hy_oai_error_set(&e, status, param, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    reply_error(r, &e);
}

static bool authorized(const hy_server *s, const char *hdr) {
    if (!s->api_key) return true;
    if (!hdr || strncmp(hdr, "Bearer ", 7)) return false;
    const char *k = hdr + 7, *want = s->api_key;
    size_t n = strlen(k), m = strlen(want);
    /* constant-time over the expected key's length */
    unsigned diff = (unsigned)(n ^ m);
    for (size_t i = 0; i < m; i++) diff |= (unsigned)(unsigned char)want[i] ^ (unsigned)(unsigned char)(i < n ? k[i] : 0);
    return diff == 0;
}

/* ---------------- prompt building ---------------- */

void hy_chat_marks_free(hy_chat_marks *m) {
    free(m->split);
    free(m->ckpt);
    free(m->markup);
    memset(m, 0, sizeof *m);
}

/* Token positions of the byte offsets off[] (ascending) of the rendered text:
 * walks the tokens' bytes along the text and stops at the first token whose
 * bytes are not the text's (normalisation), so every position found is one
 * where ids[0, t) spell exactly text[0, off). Offsets inside a token are
 * dropped: they are not token boundaries. */
static int marks_to_tokens(const hy_server *s, const char *text, size_t len, const int32_t *ids, size_t n,
                           const size_t *off, int n_off, int32_t *out) {
    int k = 0, j = 0;
    size_t at = 0;
    for (size_t t = 0; t < n && j < n_off; t++) {
        while (j < n_off && off[j] < at) j++;
        if (j < n_off && off[j] == at && t > 0) {
            out[k++] = (int32_t)t;
            j++;
        }
        const char *b;
        size_t bl;
        if (s->text.token_bytes(s->text.ctx, ids[t], &b, &bl) || at + bl > len || memcmp(text + at, b, bl)) break;
        at += bl;
    }
    return k;
}

/* Renders (chat) or takes (completions) the prompt and tokenizes it. Returns
 * 0 or an HTTP status with *e filled. */
static int build_prompt(hy_server *s, const hy_oai_request *req, int32_t **ids, size_t *n, char **rendered,
                        size_t *rendered_len, hy_chat_marks *marks, hy_oai_error *e) {
    hy_err err = {0};
    *ids = NULL;
    *n = 0;
    *rendered = NULL;
    *rendered_len = 0;
    if (req->kind == HY_OAI_CHAT) {
        if (!s->text.render_chat)
            return hy_oai_error_set(e, 501, NULL, "chat completions need a chat template, which this build lacks");
        /* Text from the request must not produce special tokens (a user's literal <|im_end|>
         * would end the turn): the renderer reports which bytes are its own markup. */
        hy_chat_marks local = {0}, *mk = marks ? marks : &local;
        int rc = s->text.render_chat_marks ? s->text.render_chat_marks(s->text.ctx, req, rendered, rendered_len, mk, &err)
                                           : s->text.render_chat(s->text.ctx, req, rendered, rendered_len, &err);
        if (rc) {
            hy_chat_marks_free(&local);
            return hy_oai_error_set(e, err.code == HY_E_NOMEM ? 500 : 400, "messages", "%s", err.msg);
        }
        rc = mk->has_markup && s->text.encode_marked
                 ? s->text.encode_marked(s->text.ctx, *rendered, *rendered_len, mk->markup, mk->n_markup, ids, n, &err)
                 : s->text.encode(s->text.ctx, *rendered, *rendered_len, true, ids, n, &err);
        hy_chat_marks_free(&local);
        if (rc) return hy_oai_error_set(e, 400, "messages", "cannot tokenize the prompt: %s", err.msg);
        return 0;
    }
    if (req->prompt) {
        if (s->text.encode(s->text.ctx, req->prompt, req->prompt_len, true, ids, n, &err))
            return hy_oai_error_set(e, 400, "prompt", "cannot tokenize the prompt: %s", err.msg);
        return 0;
    }
    *ids = malloc(sizeof(int32_t) * (size_t)req->n_prompt_ids);
    if (!*ids) return hy_oai_error_set(e, 500, NULL, "out of memory");
    memcpy(*ids, req->prompt_ids, sizeof(int32_t) * (size_t)req->n_prompt_ids);
    *n = (size_t)req->n_prompt_ids;
    return 0;
}

/* ---------------- generation ---------------- */

static json_t *final_body(hy_job *j) {
    hy_oai_choice *ch = malloc(sizeof *ch * (size_t)j->n);
    if (!ch) return NULL;
    for (int i = 0; i < j->n; i++) ch[i] = j->ch[i].out;
    json_t *body = j->req.kind == HY_OAI_CHAT ? hy_oai_chat_response(j->id, j->created, j->srv->model_name, ch, j->n, &j->usage)
                                              : hy_oai_completion_response(j->id, j->created, j->srv->model_name, ch, j->n, &j->usage);
    free(ch);
    return body;
}

static void handle_generate(hy_server *s, hy_oai_kind kind, const hy_http_req *hr, hy_http_resp *resp) {
    const hy_engine_config *ec = hy_engine_get_config(s->engine);
    hy_oai_limits lim = {.vocab_size = s->text.vocab_size, .max_n = ec->max_num_seqs};
    hy_oai_error e;
    hy_job *j = calloc(1, sizeof *j);
    if (!j) {
        reply_err(resp, 500, NULL, "out of memory");
        return;
    }
    j->srv = s;
    j->fd = hr->fd;
    if (hy_oai_parse_request(kind, hr->body, hr->body_len, &lim, &j->req, &e)) {
        reply_error(resp, &e);
        free(j);
        return;
    }
    const hy_oai_request *req = &j->req;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    char *rendered = NULL;
    size_t rendered_len = 0;
    hy_chat_marks marks = {0};
    int32_t *split_at = NULL, *ckpt_at = NULL;
    if (req->model && strcmp(req->model, s->model_name)) {
        hy_oai_error_set(&e, 404, "model", "The model '%s' does not exist; this server serves '%s'", req->model,
                         s->model_name);
        snprintf(e.code, sizeof e.code, "model_not_found");
        goto fail;
    }
    if (build_prompt(s, req, &ids, &n_ids, &rendered, &rendered_len, &marks, &e)) goto fail;
    if (n_ids == 0) {
        hy_oai_error_set(&e, 400, kind == HY_OAI_CHAT ? "messages" : "prompt", "the prompt is empty after tokenization");
        goto fail;
    }
    if (n_ids >= (size_t)ec->max_model_len) {
        hy_oai_error_set(&e, 400, kind == HY_OAI_CHAT ? "messages" : "prompt",
                         "This model's maximum context length is %d tokens. However, your request has %zu input "
                         "tokens. Please reduce the length of the input.",
                         ec->max_model_len, n_ids);
        snprintf(e.code, sizeof e.code, "context_length_exceeded");
        goto fail;
    }
    int room = ec->max_model_len - (int)n_ids;
    int max_tokens = req->max_tokens;
    if (max_tokens < 0) {
        max_tokens = kind == HY_OAI_CHAT ? room : 16;
        if (kind == HY_OAI_CHAT && s->defaults.max_new_tokens > 0 && s->defaults.max_new_tokens < max_tokens)
            max_tokens = s->defaults.max_new_tokens;
    }
    if (max_tokens > room) max_tokens = room; /* the engine would stop there anyway ("length") */

    hy_gen_params gp;
    memset(&gp, 0, sizeof gp);
    gp.prompt = ids;
    gp.n_prompt = (int)n_ids;
    gp.n = req->n;
    gp.max_tokens = max_tokens;
    hy_gen_effective_sampling(req, &s->defaults, &gp.sp);
    gp.has_seed = (req->set_mask & HY_SET_SEED) != 0;
    gp.stop = (const char *const *)req->stop;
    gp.n_stop = req->n_stop;
    gp.stop_ids = req->stop_ids;
    gp.n_stop_ids = req->n_stop_ids;
    gp.ignore_eos = req->ignore_eos;
    gp.n_logprobs = req->logprobs ? req->top_logprobs : -1;
    if (marks.n_split || marks.n_ckpt) { /* prefix-cache hints: message ends as token positions */
        split_at = malloc(sizeof(int32_t) * (size_t)(marks.n_split + 1));
        ckpt_at = malloc(sizeof(int32_t) * (size_t)(marks.n_ckpt + 1));
        if (split_at && ckpt_at) {
            gp.split_at = split_at;
            gp.n_split_at = marks_to_tokens(s, rendered, rendered_len, ids, n_ids, marks.split, marks.n_split, split_at);
            gp.checkpoint_at = ckpt_at;
            gp.n_checkpoint_at = marks_to_tokens(s, rendered, rendered_len, ids, n_ids, marks.ckpt, marks.n_ckpt, ckpt_at);
        }
    }
    hy_err err = {0};
    int rc = hy_engine_submit(s->engine, &gp, &j->ereq, &err);
    free(split_at);
    free(ckpt_at);
    split_at = ckpt_at = NULL;
    hy_chat_marks_free(&marks);
    if (rc) {
        int status = rc == HY_E_NOMEM ? 429 : rc == HY_E_STATE ? 503 : rc == HY_E_RANGE || rc == HY_E_INVALID ? 400 : 500;
        hy_oai_error_set(&e, status, NULL, "%s", err.msg);
        if (status == 429) snprintf(e.code, sizeof e.code, "rate_limit_exceeded");
        goto fail;
    }
    j->n_prompt = (int)n_ids;
    j->n = req->n;
    j->created = (long)time(NULL);
    hy_server_make_id(s, kind == HY_OAI_CHAT ? "chatcmpl-" : "cmpl-", 32, j->id, sizeof j->id);
    j->ch = calloc((size_t)j->n, sizeof *j->ch);
    if (!j->ch) {
        hy_oai_error_set(&e, 500, NULL, "out of memory");
        goto fail;
    }
    for (int i = 0; i < j->n; i++) {
        j->ch[i].out.index = i;
        if (kind == HY_OAI_CHAT && s->text.parser_create)
            j->ch[i].parser = s->text.parser_create(s->text.ctx, req, rendered, rendered_len);
    }
    free(ids);
    free(rendered);
    ids = NULL;
    rendered = NULL;

    if (req->stream) {
        j->stream = true;
        hy_sse_begin(j);
        resp->status = 200;
        resp->content_type = "text/event-stream";
        resp->stream_read = hy_sse_read;
        resp->stream_free = hy_sse_free;
        resp->stream_u = j;
        return;
    }
    for (;;) {
        hy_event ev;
        int r = hy_request_next_event(j->ereq, &ev, WAIT_POLL_MS);
        if (r == 1) {
            hy_job_on_event(j, &ev);
            hy_event_clear(&ev);
            if (j->done) break;
        } else if (r < 0) {
            break;
        } else if (hy_http_client_gone(j->fd)) {
            hy_request_cancel(j->ereq); /* keep reading: the engine ends it at once */
        }
    }
    if (j->failed) {
        hy_oai_error_set(&e, 500, NULL, "%s", j->error);
        reply_error(resp, &e);
    } else {
        json_t *body = final_body(j);
        if (body) reply_json(resp, 200, body);
        else reply_err(resp, 500, NULL, "out of memory");
    }
    hy_job_free(j);
    return;
fail:
    free(ids);
    free(rendered);
    free(split_at);
    free(ckpt_at);
    hy_chat_marks_free(&marks);
    reply_error(resp, &e);
    hy_job_free(j);
}

/* ---------------- small endpoints ---------------- */

static void handle_models(hy_server *s, hy_http_resp *resp) {
    json_t *m = json_object();
    json_object_set_new(m, "id", json_string(s->model_name));
    json_object_set_new(m, "object", json_string("model"));
    json_object_set_new(m, "created", json_integer((json_int_t)time(NULL)));
    json_object_set_new(m, "owned_by", json_string("hyla"));
    json_object_set_new(m, "root", json_string(s->model_name));
    json_object_set_new(m, "parent", json_null());
    json_object_set_new(m, "max_model_len", json_integer(hy_engine_get_config(s->engine)->max_model_len));
    json_t *data = json_array();
    json_array_append_new(data, m);
    json_t *j = json_object();
    json_object_set_new(j, "object", json_string("list"));
    json_object_set_new(j, "data", data);
    reply_json(resp, 200, j);
}

static void handle_tokenize(hy_server *s, const hy_http_req *hr, hy_http_resp *resp) {
    json_error_t je;
    json_t *root = json_loadb(hr->body, hr->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        reply_err(resp, 400, NULL, "the request body must be a JSON object");
        return;
    }
    bool chat = json_object_get(root, "messages") != NULL;
    bool has_prompt = json_is_string(json_object_get(root, "prompt"));
    json_decref(root);
    if (!chat && !has_prompt) {
        reply_err(resp, 400, "prompt", "'prompt' (a string) or 'messages' is required");
        return;
    }
    const hy_engine_config *ec = hy_engine_get_config(s->engine);
    hy_oai_limits lim = {.vocab_size = s->text.vocab_size, .max_n = ec->max_num_seqs};
    hy_oai_request req;
    hy_oai_error e;
    if (hy_oai_parse_request(chat ? HY_OAI_CHAT : HY_OAI_COMPLETION, hr->body, hr->body_len, &lim, &req, &e)) {
        reply_error(resp, &e);
        return;
    }
    int32_t *ids;
    size_t n;
    char *rendered;
    size_t rl;
    if (build_prompt(s, &req, &ids, &n, &rendered, &rl, NULL, &e)) {
        free(ids);
        free(rendered);
        hy_oai_request_release(&req);
        reply_error(resp, &e);
        return;
    }
    json_t *toks = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(toks, json_integer(ids[i]));
    json_t *j = json_object();
    json_object_set_new(j, "count", json_integer((json_int_t)n));
    json_object_set_new(j, "max_model_len", json_integer(ec->max_model_len));
    json_object_set_new(j, "tokens", toks);
    free(ids);
    free(rendered);
    hy_oai_request_release(&req);
    reply_json(resp, 200, j);
}

static void handle_detokenize(hy_server *s, const hy_http_req *hr, hy_http_resp *resp) {
    json_error_t je;
    json_t *root = json_loadb(hr->body, hr->body_len, JSON_REJECT_DUPLICATES, &je);
    json_t *toks = root && json_is_object(root) ? json_object_get(root, "tokens") : NULL;
    if (!json_is_array(toks)) {
        json_decref(root);
        reply_err(resp, 400, "tokens", "'tokens' (a list of token ids) is required");
        return;
    }
    size_t n = json_array_size(toks);
    int32_t *ids = malloc(sizeof(int32_t) * (n ? n : 1));
    if (!ids) {
        json_decref(root);
        reply_err(resp, 500, NULL, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(toks, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= s->text.vocab_size) {
            free(ids);
            json_decref(root);
            reply_err(resp, 400, "tokens", "'tokens[%zu]' must be a token id in [0, %d)", i, s->text.vocab_size);
            return;
        }
        ids[i] = (int32_t)json_integer_value(v);
    }
    json_decref(root);
    char *text = NULL;
    size_t len = 0;
    hy_err err = {0};
    if (s->text.decode(s->text.ctx, ids, n, &text, &len, &err)) {
        free(ids);
        reply_err(resp, 400, "tokens", "%s", err.msg);
        return;
    }
    free(ids);
    json_t *j = json_object();
    json_object_set_new(j, "prompt", hy_oai_json_stringn(text, len));
    free(text);
    reply_json(resp, 200, j);
}

static void handle_metrics(hy_server *s, hy_http_resp *resp) {
    hy_engine_stats st;
    hy_engine_get_stats(s->engine, &st);
    size_t len = 0;
    char *text = hy_metrics_render(&st, &s->counters, s->model_name, &len);
    if (!text) {
        reply_err(resp, 500, NULL, "out of memory");
        return;
    }
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4";
    resp->body = text;
    resp->body_len = len;
}

/* ---------------- dispatch ---------------- */

static void handle(void *ctx, const hy_http_req *hr, hy_http_resp *resp) {
    hy_server *s = ctx;
    const char *p = hr->path;
    bool get = !strcmp(hr->method, "GET"), post = !strcmp(hr->method, "POST");
    int route = HY_ROUTE_OTHER;
    if (!strcmp(p, "/v1/chat/completions")) route = HY_ROUTE_CHAT;
    else if (!strcmp(p, "/v1/completions")) route = HY_ROUTE_COMPLETIONS;
    else if (!strcmp(p, "/v1/models")) route = HY_ROUTE_MODELS;
    else if (!strcmp(p, "/health") || !strcmp(p, "/v1/health")) route = HY_ROUTE_HEALTH;
    else if (!strcmp(p, "/metrics")) route = HY_ROUTE_METRICS;
    else if (!strcmp(p, "/tokenize")) route = HY_ROUTE_TOKENIZE;
    else if (!strcmp(p, "/detokenize")) route = HY_ROUTE_DETOKENIZE;

    if (route == HY_ROUTE_OTHER) {
        reply_err(resp, 404, NULL, "no route for %s %.200s", hr->method, p);
    } else if (route != HY_ROUTE_HEALTH && route != HY_ROUTE_METRICS && !authorized(s, hr->authorization)) {
        hy_oai_error e;
        hy_oai_error_set(&e, 401, NULL, "missing or invalid API key (send 'Authorization: Bearer <key>')");
        snprintf(e.code, sizeof e.code, "invalid_api_key");
        reply_error(resp, &e);
    } else {
        bool want_post = route == HY_ROUTE_CHAT || route == HY_ROUTE_COMPLETIONS || route == HY_ROUTE_TOKENIZE ||
                         route == HY_ROUTE_DETOKENIZE;
        if ((want_post && !post) || (!want_post && !get)) {
            reply_err(resp, 405, NULL, "%s does not accept %s", p, hr->method);
        } else {
            switch (route) {
            case HY_ROUTE_CHAT: handle_generate(s, HY_OAI_CHAT, hr, resp); break;
            case HY_ROUTE_COMPLETIONS: handle_generate(s, HY_OAI_COMPLETION, hr, resp); break;
            case HY_ROUTE_MODELS: handle_models(s, resp); break;
            case HY_ROUTE_HEALTH:
                if (atomic_load(&s->draining)) {
                    reply_err(resp, 503, NULL, "the server is shutting down");
                } else {
                    json_t *j = json_object();
                    json_object_set_new(j, "status", json_string("ok"));
                    reply_json(resp, 200, j);
                }
                break;
            case HY_ROUTE_METRICS: handle_metrics(s, resp); break;
            case HY_ROUTE_TOKENIZE: handle_tokenize(s, hr, resp); break;
            case HY_ROUTE_DETOKENIZE: handle_detokenize(s, hr, resp); break;
            default: break;
            }
        }
    }
    hy_http_count(&s->counters, route, resp->status ? resp->status : 200);
}

/* ---------------- lifecycle ---------------- */

int hy_server_start(hy_server **out, const hy_server_config *cfg, hy_engine *engine, const hy_server_text *text,
                    const hy_gen_defaults *defaults, hy_err *err) {
    *out = NULL;
    if (!text->encode || !text->decode || !text->token_bytes || text->vocab_size <= 0)
        return hy_err_set(err, HY_E_INVALID, "server: text callbacks missing");
    if (text->parser_create && (!text->parser_feed || !text->parser_finish || !text->parser_free))
        return hy_err_set(err, HY_E_INVALID, "server: parser callbacks incomplete");
    hy_server *s = calloc(1, sizeof *s);
    if (!s) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    s->cfg = *cfg;
    s->engine = engine;
    s->text = *text;
    if (defaults) s->defaults = *defaults;
    else {
        memset(&s->defaults, 0, sizeof s->defaults);
        hy_sampling_params_default(&s->defaults.sp);
        s->defaults.max_new_tokens = -1;
    }
    s->api_key = cfg->api_key && *cfg->api_key ? strdup(cfg->api_key) : NULL;
    s->model_name = strdup(cfg->model_name && *cfg->model_name ? cfg->model_name : "hyla");
    hy_http_counters_init(&s->counters);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->id_seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    atomic_init(&s->id_counter, 0);
    atomic_init(&s->draining, false);
    hy_http_opts ho = {.host = cfg->host,
                       .port = cfg->port,
                       .max_body = cfg->max_body,
                       .max_connections = cfg->max_connections,
                       .idle_timeout_s = 120};
    int rc = hy_http_start(&s->http, &ho, handle, s, err);
    if (rc) {
        free(s->api_key);
        free(s->model_name);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int hy_server_port(const hy_server *s) { return hy_http_port(s->http); }

int hy_server_drain(hy_server *s, int timeout_ms) {
    atomic_store(&s->draining, true);
    hy_http_quiesce(s->http);
    for (int waited = 0;; waited += 20) {
        int n = hy_http_in_flight(s->http);
        if (n == 0 || waited >= timeout_ms) return n;
        usleep(20000);
    }
}

void hy_server_stop(hy_server *s) {
    if (!s) return;
    hy_http_stop(s->http);
    free(s->api_key);
    free(s->model_name);
    free(s);
}
