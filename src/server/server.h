/*
 * The OpenAI-compatible server: routes, authentication, request -> prompt ->
 * tokens -> engine, events -> JSON / SSE. HTTP threads only parse, validate,
 * render, tokenize and serialise; generation happens on the engine thread.
 *
 * Text services reach the server through hy_server_text so that tests can
 * run the whole HTTP surface over a fake vocabulary and fake model; the real
 * adapter (tokenizer + chat renderer + output parser) is in
 * server/textio.c.
 *
 * Threading: everything here may be called from any HTTP thread at once;
 * the text callbacks must be thread-safe; a parser instance belongs to one
 * request (one thread at a time).
 */
#ifndef HY_SERVER_SERVER_H
#define HY_SERVER_SERVER_H

#include "engine/engine.h"
#include "server/genconfig.h"
#include "server/openai.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the output parser reports (Qwen3.5 chat output: reasoning, content,
 * XML tool calls). TOOL_START carries the call's name; TOOL_ARGS fragments of
 * its JSON arguments, which concatenate to a valid JSON object. */
typedef enum hy_out_kind { HY_OUT_CONTENT = 0, HY_OUT_REASONING, HY_OUT_TOOL_START, HY_OUT_TOOL_ARGS } hy_out_kind;

typedef struct hy_out_delta {
    hy_out_kind kind;
    int tool_index;          /* TOOL_*: 0-based index of the call in this choice */
    const char *text;        /* CONTENT/REASONING text, TOOL_START name, TOOL_ARGS fragment */
    size_t len;
} hy_out_delta;

typedef void (*hy_out_cb)(void *u, const hy_out_delta *d);

/* Where a rendered chat prompt's messages end (byte offsets into the prompt,
 * ascending, malloc'd): the prefix cache splits the prompt's computation at
 * every message end and checkpoints at the last user-turn boundary and at the
 * end of the history, so the next turn of the conversation resumes there. */
typedef struct hy_chat_marks {
    size_t *split;
    int n_split;
    size_t *ckpt;
    int n_ckpt;
    /* [n_markup][2] byte ranges the template wrote itself: the only places where special-token
     * text becomes special tokens (text from the request stays text). has_markup is false when
     * the renderer does not report them (then the whole prompt is tokenized as HF would). */
    size_t *markup;
    size_t n_markup;
    bool has_markup;
} hy_chat_marks;

void hy_chat_marks_free(hy_chat_marks *m);

typedef struct hy_server_text {
    void *ctx;
    int vocab_size;          /* ids accepted in prompts / stop_token_ids */
    /* text -> ids; parse_special: added-token text becomes those tokens */
    int (*encode)(void *ctx, const char *text, size_t len, bool parse_special, int32_t **ids, size_t *n, hy_err *err);
    /* ids -> text (special tokens kept, as HF decode's default) for /detokenize; malloc'd */
    int (*decode)(void *ctx, const int32_t *ids, size_t n, char **text, size_t *len, hy_err *err);
    /* raw bytes of one token (for logprobs) */
    int (*token_bytes)(void *ctx, int32_t id, const char **bytes, size_t *len);
    /* chat request -> prompt text (malloc'd); errors are the template's
     * messages and become 400s. NULL: /v1/chat/completions answers 501. */
    int (*render_chat)(void *ctx, const hy_oai_request *req, char **prompt, size_t *len, hy_err *err);
    /* Output parser for chat choices; NULL create => all text is content.
     * create may return NULL too (same meaning). It sees the rendered prompt
     * to know whether generation starts inside a reasoning block. */
    void *(*parser_create)(void *ctx, const hy_oai_request *req, const char *prompt, size_t prompt_len);
    void (*parser_feed)(void *p, const char *text, size_t len, hy_out_cb cb, void *u);
    void (*parser_finish)(void *p, hy_out_cb cb, void *u);
    void (*parser_free)(void *p);
    /* Optional: render_chat that also reports the message ends (marks zeroed
     * when the renderer has none). Preferred over render_chat when set. */
    int (*render_chat_marks)(void *ctx, const hy_oai_request *req, char **prompt, size_t *len, hy_chat_marks *marks,
                             hy_err *err);
    /* Optional: text -> ids with special tokens recognised only inside the byte ranges
     * special_ok ([n][2], sorted); used for chat prompts (see hy_chat_marks.markup). */
    int (*encode_marked)(void *ctx, const char *text, size_t len, const size_t *special_ok, size_t n_special_ok,
                         int32_t **ids, size_t *n, hy_err *err);
} hy_server_text;

typedef struct hy_server_config {
    const char *host;
    int port;
    const char *api_key;       /* NULL: no authentication */
    const char *model_name;    /* served model name */
    size_t max_body;           /* bytes; larger bodies get 413 */
    int max_connections;
    int sse_ping_ms;           /* SSE comment every this long without events */
} hy_server_config;

void hy_server_config_default(hy_server_config *c);

typedef struct hy_server hy_server;

/* Starts listening. engine and text must outlive the server. defaults may be NULL. */
int hy_server_start(hy_server **out, const hy_server_config *cfg, hy_engine *engine, const hy_server_text *text,
                    const hy_gen_defaults *defaults, hy_err *err);
int hy_server_port(const hy_server *s);
/* Stops accepting connections and waits up to timeout_ms for in-flight
 * requests to finish; returns how many were still running. */
int hy_server_drain(hy_server *s, int timeout_ms);
/* Closes all connections (cancelling their requests) and frees the server. */
void hy_server_stop(hy_server *s);

#endif
