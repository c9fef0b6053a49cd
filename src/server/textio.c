/*
 * Adapter from tokenizer/ and chat/ to the server and engine seams (see
 * textio.h). The engine's token bytes skip special tokens (<|im_end|> etc.
 * never reach the client, as with HF decode(skip_special_tokens=True));
 * logprobs and /detokenize show every token.
 */
#include "server/textio.h"

#include "chat/parse.h"
#include "chat/render.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hy_textio {
    hy_tokenizer *tok;
    hy_chat_template tmpl;
    int tmpl_known;
    char desc[64];
};

static int tx_encode(void *ctx, const char *text, size_t len, bool parse_special, int32_t **ids, size_t *n,
                     hy_err *err) {
    hy_textio *t = ctx;
    return hy_tokenizer_encode(t->tok, text, len, parse_special, ids, n, err);
}

static int tx_encode_marked(void *ctx, const char *text, size_t len, const size_t *special_ok, size_t n_special_ok,
                            int32_t **ids, size_t *n, hy_err *err) {
    hy_textio *t = ctx;
    return hy_tokenizer_encode_marked(t->tok, text, len, special_ok, n_special_ok, ids, n, err);
}

static int tx_decode(void *ctx, const int32_t *ids, size_t n, char **text, size_t *len, hy_err *err) {
    hy_textio *t = ctx;
    return hy_tokenizer_decode(t->tok, ids, n, false, text, len, err);
}

static int tx_token_bytes(void *ctx, int32_t id, const char **bytes, size_t *len) {
    hy_textio *t = ctx;
    const uint8_t *b = hy_tokenizer_token_bytes(t->tok, id, len);
    if (!b) return HY_E_NOT_FOUND;
    *bytes = (const char *)b;
    return 0;
}

static int tx_engine_bytes(void *ctx, int32_t id, const char **bytes, size_t *len) {
    hy_textio *t = ctx;
    if (hy_tokenizer_is_special(t->tok, id)) {
        *bytes = "";
        *len = 0;
        return 0;
    }
    return tx_token_bytes(ctx, id, bytes, len);
}

/* Message ends and markup of a rendered prompt (see hy_chat_marks); takes p->markup. */
static int make_marks(hy_chat_prompt *p, hy_chat_marks *m, hy_err *err) {
    memset(m, 0, sizeof *m);
    m->markup = p->markup;
    m->n_markup = p->n_markup;
    m->has_markup = true;
    p->markup = NULL;
    m->split = malloc(sizeof(size_t) * (p->n_messages + 1));
    m->ckpt = malloc(sizeof(size_t) * 2);
    if (!m->split || !m->ckpt) {
        hy_chat_marks_free(m);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < p->n_messages; i++) {
        size_t e = p->messages[i].end;
        if (e == 0 || e >= p->len || (m->n_split && m->split[m->n_split - 1] >= e)) continue;
        m->split[m->n_split++] = e;
    }
    if (p->last_query_index < p->n_messages) {
        size_t e = p->messages[p->last_query_index].end;
        if (e > 0 && e < p->len) m->ckpt[m->n_ckpt++] = e;
    }
    if (p->history_end > 0 && p->history_end < p->len && (!m->n_ckpt || m->ckpt[0] != p->history_end))
        m->ckpt[m->n_ckpt++] = p->history_end;
    return 0;
}

static int render(hy_textio *t, const json_t *messages, const json_t *tools, int enable_thinking, int preserve_thinking,
                  char **prompt, size_t *len, hy_chat_marks *marks, hy_err *err) {
    hy_chat_render_opts o;
    hy_chat_render_opts_default(&o);
    o.tmpl = t->tmpl;
    o.enable_thinking = enable_thinking < 0 ? HY_CHAT_UNSET : enable_thinking;
    o.preserve_thinking = preserve_thinking < 0 ? HY_CHAT_UNSET : preserve_thinking;
    hy_chat_prompt p;
    int rc = hy_chat_render(messages, tools, &o, &p, err);
    if (rc) return rc;
    if (p.n_images || p.n_videos) {
        hy_chat_prompt_free(&p);
        return hy_err_set(err, HY_E_INVALID, "images and videos are not supported by this text-only server");
    }
    if (marks && (rc = make_marks(&p, marks, err))) {
        hy_chat_prompt_free(&p);
        return rc;
    }
    *prompt = p.text; /* take ownership of the text */
    *len = p.len;
    p.text = NULL;
    hy_chat_prompt_free(&p);
    return 0;
}

static int tx_render(void *ctx, const hy_oai_request *req, char **prompt, size_t *len, hy_err *err) {
    return render(ctx, req->messages, req->tools, req->enable_thinking, req->preserve_thinking, prompt, len, NULL, err);
}

static int tx_render_marks(void *ctx, const hy_oai_request *req, char **prompt, size_t *len, hy_chat_marks *marks,
                           hy_err *err) {
    return render(ctx, req->messages, req->tools, req->enable_thinking, req->preserve_thinking, prompt, len, marks,
                  err);
}

/* Output parser: chat/parse.h takes its callback at creation, the server's
 * seam per feed; the wrapper forwards. Tool calls arrive whole from the
 * parser: they are reported as TOOL_START (name) + one TOOL_ARGS (the JSON). */
typedef struct tx_parser {
    hy_chat_parser *p;
    hy_out_cb cb;
    void *u;
} tx_parser;

static void tx_parser_event(void *user, const hy_chat_event *ev) {
    tx_parser *w = user;
    if (!w->cb) return;
    hy_out_delta d = {0};
    switch (ev->kind) {
    case HY_CHAT_EV_REASONING:
        d = (hy_out_delta){HY_OUT_REASONING, 0, ev->text, ev->len};
        w->cb(w->u, &d);
        break;
    case HY_CHAT_EV_CONTENT:
        d = (hy_out_delta){HY_OUT_CONTENT, 0, ev->text, ev->len};
        w->cb(w->u, &d);
        break;
    case HY_CHAT_EV_TOOL_CALL:
        d = (hy_out_delta){HY_OUT_TOOL_START, (int)ev->tool_index, ev->name, strlen(ev->name)};
        w->cb(w->u, &d);
        d = (hy_out_delta){HY_OUT_TOOL_ARGS, (int)ev->tool_index, ev->arguments, strlen(ev->arguments)};
        w->cb(w->u, &d);
        break;
    }
}

static void *tx_parser_create(void *ctx, const hy_oai_request *req, const char *prompt, size_t len) {
    (void)ctx;
    tx_parser *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    static const char open_think[] = "<think>\n";
    const size_t ol = sizeof open_think - 1;
    hy_chat_parse_opts o = {
        .thinking = len >= ol && !memcmp(prompt + len - ol, open_think, ol),
        .parse_tool_calls = req->tools != NULL,
        .tools = req->tools,
    };
    hy_err err = {0};
    if (hy_chat_parser_create(&o, tx_parser_event, w, &w->p, &err)) {
        free(w);
        return NULL; /* the server then treats all output as content */
    }
    return w;
}

static void tx_parser_feed(void *pp, const char *text, size_t len, hy_out_cb cb, void *u) {
    tx_parser *w = pp;
    w->cb = cb;
    w->u = u;
    hy_chat_parser_feed(w->p, text, len);
    w->cb = NULL;
}

static void tx_parser_finish(void *pp, hy_out_cb cb, void *u) {
    tx_parser *w = pp;
    w->cb = cb;
    w->u = u;
    hy_chat_parser_finish(w->p, NULL);
    w->cb = NULL;
}

static void tx_parser_free(void *pp) {
    tx_parser *w = pp;
    if (!w) return;
    hy_chat_parser_free(w->p);
    free(w);
}

int hy_textio_load(hy_textio **out, const char *dir, hy_err *err) {
    *out = NULL;
    hy_textio *t = calloc(1, sizeof *t);
    if (!t) return hy_err_set(err, HY_E_NOMEM, "out of memory");
    int rc = hy_tokenizer_load(&t->tok, dir, err);
    if (!rc) rc = hy_chat_template_from_dir(dir, &t->tmpl, &t->tmpl_known, err);
    if (rc) {
        hy_textio_free(t);
        return rc;
    }
    snprintf(t->desc, sizeof t->desc, "%s%s", hy_chat_template_name(t->tmpl),
             t->tmpl_known ? "" : " (template not recognised; using Qwen3.6 semantics)");
    *out = t;
    return 0;
}

void hy_textio_free(hy_textio *t) {
    if (!t) return;
    hy_tokenizer_free(t->tok);
    free(t);
}

void hy_textio_server_text(hy_textio *t, hy_server_text *o) {
    memset(o, 0, sizeof *o);
    o->ctx = t;
    o->vocab_size = (int)hy_tokenizer_vocab_size(t->tok);
    o->encode = tx_encode;
    o->encode_marked = tx_encode_marked;
    o->decode = tx_decode;
    o->token_bytes = tx_token_bytes;
    o->render_chat = tx_render;
    o->render_chat_marks = tx_render_marks;
    o->parser_create = tx_parser_create;
    o->parser_feed = tx_parser_feed;
    o->parser_finish = tx_parser_finish;
    o->parser_free = tx_parser_free;
}

void hy_textio_engine_text(hy_textio *t, hy_engine_text *o) {
    memset(o, 0, sizeof *o);
    o->ctx = t;
    o->n_valid = (int)hy_tokenizer_vocab_size(t->tok);
    o->token_bytes = tx_engine_bytes;
}

int32_t hy_textio_eos_id(const hy_textio *t) { return hy_tokenizer_eos_id(t->tok); }
int hy_textio_vocab_size(const hy_textio *t) { return (int)hy_tokenizer_vocab_size(t->tok); }
const char *hy_textio_template_desc(const hy_textio *t) { return t->desc; }

int hy_textio_chat_user(hy_textio *t, const char *user_text, int enable_thinking, int32_t **ids, size_t *n,
                        hy_err *err) {
    *ids = NULL;
    *n = 0;
    json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", user_text);
    if (!msgs) return hy_err_set(err, HY_E_INVALID, "the prompt is not valid UTF-8");
    hy_chat_marks mk;
    char *prompt = NULL;
    size_t len = 0;
    int rc = render(t, msgs, NULL, enable_thinking, -1, &prompt, &len, &mk, err);
    json_decref(msgs);
    if (rc) return rc;
    rc = hy_tokenizer_encode_marked(t->tok, prompt, len, mk.markup, mk.n_markup, ids, n, err);
    hy_chat_marks_free(&mk);
    free(prompt);
    return rc;
}

int hy_textio_encode(hy_textio *t, const char *text, size_t len, int32_t **ids, size_t *n, hy_err *err) {
    return hy_tokenizer_encode(t->tok, text, len, true, ids, n, err);
}
