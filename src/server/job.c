/*
 * Engine events -> OpenAI choices. One code path serves both answers: when
 * job->stream is false the deltas accumulate into hy_oai_choice (content,
 * reasoning, tool calls, logprobs) for one JSON body; when true each delta
 * becomes an SSE chunk right away. The chat output parser (reasoning /
 * content / tool calls) runs here, on the HTTP thread, over the text the
 * engine released.
 */
#include "server/server_impl.h"
#include "server/sse.h"

#include "base/log.h"
#include "sampling/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hy_server_make_id(hy_server *s, const char *prefix, int hex_digits, char *out, size_t cap) {
    unsigned long long k = atomic_fetch_add(&s->id_counter, 1);
    size_t n = (size_t)snprintf(out, cap, "%s", prefix);
    for (int i = 0; i < hex_digits && n + 1 < cap; i += 16) {
        uint64_t h = hy_rng_u64(s->id_seed, k, (uint64_t)i);
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
        int take = hex_digits - i < 16 ? hex_digits - i : 16;
        for (int t = 0; t < take && n + 1 < cap; t++) out[n++] = hex[t];
    }
    out[n < cap ? n : cap - 1] = 0;
}

/* ---------------- chunks ---------------- */

static json_t *chunk_with_choice(hy_job *j, int idx, json_t **choice_out) {
    json_t *c = hy_oai_chunk(j->req.kind, j->id, j->created, j->srv->model_name);
    json_t *ch = json_object();
    json_object_set_new(ch, "index", json_integer(idx));
    json_array_append_new(json_object_get(c, "choices"), ch);
    if (j->req.include_usage) json_object_set_new(c, "usage", json_null());
    *choice_out = ch;
    return c;
}

/* Chat chunk: choices[0] = {index, delta, logprobs, finish_reason}. */
static void emit_chat(hy_job *j, int idx, json_t *delta, const char *finish, json_t *stop_reason) {
    hy_job_choice *jc = &j->ch[idx];
    json_t *ch;
    json_t *c = chunk_with_choice(j, idx, &ch);
    json_object_set_new(ch, "delta", delta);
    if (jc->pending_lp && json_array_size(jc->pending_lp)) {
        json_t *lp = json_object();
        json_object_set_new(lp, "content", jc->pending_lp);
        json_object_set_new(ch, "logprobs", lp);
        jc->pending_lp = NULL;
    } else {
        json_object_set_new(ch, "logprobs", json_null());
    }
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    if (finish) json_object_set(ch, "stop_reason", stop_reason ? stop_reason : json_null());
    hy_sse_chunk(j, c);
}

/* A streamed chunk whose delta is {"tool_calls": [tc]} (takes tc). */
static void emit_tool_delta(hy_job *j, int idx, json_t *tc) {
    json_t *arr = json_array();
    json_array_append_new(arr, tc);
    json_t *delta = json_object();
    json_object_set_new(delta, "tool_calls", arr);
    emit_chat(j, idx, delta, NULL, NULL);
}

static void emit_completion(hy_job *j, int idx, const char *text, size_t len, const char *finish, json_t *stop_reason) {
    hy_job_choice *jc = &j->ch[idx];
    json_t *ch;
    json_t *c = chunk_with_choice(j, idx, &ch);
    json_object_set_new(ch, "text", hy_oai_json_stringn(text, len));
    json_object_set_new(ch, "logprobs", jc->pending_clp ? jc->pending_clp : json_null());
    jc->pending_clp = NULL;
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    if (finish) json_object_set(ch, "stop_reason", stop_reason ? stop_reason : json_null());
    hy_sse_chunk(j, c);
}

/* ---------------- parser deltas ---------------- */

typedef struct delta_ctx {
    hy_job *j;
    int idx;
} delta_ctx;

static void add_call(hy_oai_choice *o, hy_server *s, const char *name, size_t len) {
    if (o->n_calls == o->cap_calls) {
        int nc = o->cap_calls ? o->cap_calls * 2 : 4;
        hy_oai_tool_call *p = realloc(o->calls, sizeof *p * (size_t)nc);
        if (!p) return;
        o->calls = p;
        o->cap_calls = nc;
    }
    hy_oai_tool_call *c = &o->calls[o->n_calls++];
    char id[40];
    hy_server_make_id(s, "call_", 24, id, sizeof id);
    c->id = strdup(id);
    c->name = strndup(name, len);
    c->arguments = strdup("");
}

static void on_delta(void *u, const hy_out_delta *d) {
    delta_ctx *dc = u;
    hy_job *j = dc->j;
    hy_job_choice *jc = &j->ch[dc->idx];
    hy_oai_choice *o = &jc->out;
    if ((d->kind == HY_OUT_TOOL_START || d->kind == HY_OUT_TOOL_ARGS) && !j->req.parallel_tool_calls &&
        d->tool_index > 0)
        return; /* parallel_tool_calls=false: keep the first call only */
    switch (d->kind) {
    case HY_OUT_CONTENT:
        if (!d->len) return;
        if (!j->stream) {
            hy_oai_choice_append(&o->content, &o->content_len, &o->content_cap, d->text, d->len);
        } else {
            json_t *delta = json_object();
            json_object_set_new(delta, "content", hy_oai_json_stringn(d->text, d->len));
            emit_chat(j, dc->idx, delta, NULL, NULL);
        }
        break;
    case HY_OUT_REASONING:
        if (!d->len) return;
        if (!j->stream) {
            hy_oai_choice_append(&o->reasoning, &o->reasoning_len, &o->reasoning_cap, d->text, d->len);
        } else {
            json_t *delta = json_object();
            json_object_set_new(delta, "reasoning_content", hy_oai_json_stringn(d->text, d->len));
            json_object_set_new(delta, "reasoning", hy_oai_json_stringn(d->text, d->len));
            emit_chat(j, dc->idx, delta, NULL, NULL);
        }
        break;
    case HY_OUT_TOOL_START:
        if (d->tool_index != o->n_calls) {
            HY_LOGW("server: tool call index %d out of order (have %d)", d->tool_index, o->n_calls);
            return;
        }
        add_call(o, j->srv, d->text, d->len);
        if (j->stream && o->n_calls > d->tool_index) {
            hy_oai_tool_call *c = &o->calls[d->tool_index];
            json_t *tc = json_object();
            json_object_set_new(tc, "index", json_integer(d->tool_index));
            json_object_set_new(tc, "id", json_string(c->id));
            json_object_set_new(tc, "type", json_string("function"));
            json_t *fn = json_object();
            json_object_set_new(fn, "name", hy_oai_json_stringn(c->name, strlen(c->name)));
            json_object_set_new(fn, "arguments", json_string(""));
            json_object_set_new(tc, "function", fn);
            emit_tool_delta(j, dc->idx, tc);
        }
        break;
    case HY_OUT_TOOL_ARGS:
        if (d->tool_index < 0 || d->tool_index >= o->n_calls || !d->len) return;
        {
            hy_oai_tool_call *c = &o->calls[d->tool_index];
            size_t old = strlen(c->arguments);
            char *na = realloc(c->arguments, old + d->len + 1);
            if (!na) return;
            memcpy(na + old, d->text, d->len);
            na[old + d->len] = 0;
            c->arguments = na;
        }
        if (j->stream) {
            json_t *tc = json_object();
            json_object_set_new(tc, "index", json_integer(d->tool_index));
            json_t *fn = json_object();
            json_object_set_new(fn, "arguments", hy_oai_json_stringn(d->text, d->len));
            json_object_set_new(tc, "function", fn);
            emit_tool_delta(j, dc->idx, tc);
        }
        break;
    }
}

/* ---------------- events ---------------- */

static void fill_token_lp(hy_job *j, const hy_event *ev, hy_oai_token_lp *t) {
    const hy_server_text *tx = &j->srv->text;
    memset(t, 0, sizeof *t);
    size_t len = 0;
    const char *b = NULL;
    if (tx->token_bytes(tx->ctx, ev->lp.token, &b, &len)) b = "", len = 0;
    t->token = b;
    t->token_len = len;
    t->logprob = ev->lp.logprob;
    t->n_top = ev->lp.n_top;
    for (int i = 0; i < ev->lp.n_top; i++) {
        const char *tb = NULL;
        size_t tl = 0;
        if (tx->token_bytes(tx->ctx, ev->lp.top_ids[i], &tb, &tl)) tb = "", tl = 0;
        t->top[i].token = tb;
        t->top[i].token_len = tl;
        t->top[i].logprob = ev->lp.top_logprobs[i];
    }
}

static void on_token(hy_job *j, const hy_event *ev) {
    hy_job_choice *jc = &j->ch[ev->choice];
    hy_oai_choice *o = &jc->out;
    const bool chat = j->req.kind == HY_OAI_CHAT;
    o->completion_tokens++;
    if (ev->has_logprobs && j->req.logprobs) {
        hy_oai_token_lp t;
        fill_token_lp(j, ev, &t);
        if (chat) {
            json_t **arr = j->stream ? &jc->pending_lp : &o->logprobs;
            if (!*arr) *arr = json_array();
            json_array_append_new(*arr, hy_oai_chat_logprob_entry(&t));
        } else {
            hy_oai_completion_logprobs_add(j->stream ? &jc->pending_clp : &o->logprobs, &t, jc->text_offset);
        }
    }
    if (!chat) {
        if (ev->text_len) {
            if (!j->stream) hy_oai_choice_append(&o->content, &o->content_len, &o->content_cap, ev->text, ev->text_len);
            else emit_completion(j, ev->choice, ev->text, ev->text_len, NULL, NULL);
        }
        jc->text_offset += ev->text_len;
        return;
    }
    if (!ev->text_len) return;
    delta_ctx dc = {j, ev->choice};
    if (jc->parser) {
        j->srv->text.parser_feed(jc->parser, ev->text, ev->text_len, on_delta, &dc);
    } else {
        hy_out_delta d = {HY_OUT_CONTENT, 0, ev->text, ev->text_len};
        on_delta(&dc, &d);
    }
}

static void on_finish(hy_job *j, const hy_event *ev) {
    hy_job_choice *jc = &j->ch[ev->choice];
    hy_oai_choice *o = &jc->out;
    const bool chat = j->req.kind == HY_OAI_CHAT;
    if (jc->parser && chat) {
        delta_ctx dc = {j, ev->choice};
        j->srv->text.parser_finish(jc->parser, on_delta, &dc);
    }
    const char *fr;
    switch (ev->finish) {
    case HY_FINISH_STOP: fr = chat && o->n_calls > 0 ? "tool_calls" : "stop"; break;
    case HY_FINISH_LENGTH: fr = "length"; break;
    case HY_FINISH_ABORT: fr = "abort"; break;
    default: fr = "error"; break;
    }
    if (ev->finish == HY_FINISH_ERROR) {
        j->failed = true;
        snprintf(j->error, sizeof j->error, "generation failed: %s", ev->error ? ev->error : "engine error");
    }
    o->finish_reason = fr;
    json_decref(o->stop_reason);
    o->stop_reason = NULL;
    if (ev->stop_str) {
        o->stop_reason = json_string(ev->stop_str);
    } else if (ev->stop_token >= 0) {
        for (int i = 0; i < j->req.n_stop_ids; i++)
            if (j->req.stop_ids[i] == ev->stop_token) o->stop_reason = json_integer(ev->stop_token);
    }
    if (!j->req.parallel_tool_calls && o->n_calls > 1) {
        for (int i = 1; i < o->n_calls; i++) {
            free(o->calls[i].id);
            free(o->calls[i].name);
            free(o->calls[i].arguments);
        }
        o->n_calls = 1;
    }
    jc->finished = true;
    if (!j->stream) return;
    if (ev->finish == HY_FINISH_ERROR) {
        hy_oai_error e;
        hy_oai_error_set(&e, 500, NULL, "%s", j->error);
        char *body = hy_oai_error_json(&e);
        if (body) {
            hy_sse_raw(j, "data: ", 6);
            hy_sse_raw(j, body, strlen(body));
            hy_sse_raw(j, "\n\n", 2);
            free(body);
        }
        return;
    }
    if (chat) emit_chat(j, ev->choice, json_object(), fr, o->stop_reason);
    else emit_completion(j, ev->choice, "", 0, fr, o->stop_reason);
}

void hy_job_on_event(hy_job *j, const hy_event *ev) {
    if (ev->choice < 0 || ev->choice >= j->n) return;
    switch (ev->type) {
    case HY_EV_TOKEN: on_token(j, ev); break;
    case HY_EV_FINISH: on_finish(j, ev); break;
    case HY_EV_DONE:
        j->usage.prompt_tokens = ev->prompt_tokens;
        j->usage.completion_tokens = ev->completion_tokens;
        j->usage.cached_tokens = ev->cached_tokens;
        j->usage.reasoning_tokens = -1;
        j->done = true;
        if (j->stream) {
            if (j->req.include_usage) {
                json_t *c = hy_oai_chunk(j->req.kind, j->id, j->created, j->srv->model_name);
                json_object_set_new(c, "usage", hy_oai_usage_json(&j->usage));
                hy_sse_chunk(j, c);
            }
            hy_sse_raw(j, "data: [DONE]\n\n", 14);
            j->eof = true;
        }
        break;
    }
}

void hy_job_free(hy_job *j) {
    if (!j) return;
    if (j->ereq) hy_request_release(j->ereq);
    for (int i = 0; j->ch && i < j->n; i++) {
        if (j->ch[i].parser) j->srv->text.parser_free(j->ch[i].parser);
        json_decref(j->ch[i].pending_lp);
        json_decref(j->ch[i].pending_clp);
        hy_oai_choice_release(&j->ch[i].out);
    }
    free(j->ch);
    hy_oai_request_release(&j->req);
    free(j->buf);
    free(j);
}
