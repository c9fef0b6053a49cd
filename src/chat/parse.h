/*
 * Incremental parser of Qwen3.5 / Qwen3.6 model output into reasoning, content
 * and tool calls, for streaming (text deltas, token by token) and whole outputs.
 * Owns: the text it holds back (a possible tag prefix, trailing whitespace, an
 * unfinished tool call) and the events' temporary strings.
 * Threading: one parser per sequence; not shared.
 * Why incremental with hold-back: a streamed content delta must never show
 * partial markup ("<tool_ca"), so bytes that may start a tag wait until the tag
 * is decided. Every decision looks only at text already received and waits when
 * the answer depends on what comes next, so the result is the same for any split
 * of the output into deltas (the tests feed one byte at a time, random splits
 * and the whole text).
 *
 * Output grammar (thinking on: the prompt ended with "<think>\n"):
 *   REASONING "</think>" WS CONTENT (TOOL_CALL WS)*
 *   TOOL_CALL = "<tool_call>" WS "<function=" NAME ">" WS
 *               ("<parameter=" KEY ">\n" VALUE "\n</parameter>" WS)* "</function>" WS "</tool_call>"
 * Tolerated deviations: a stray "<think>" at the very start (also with thinking off:
 * it starts reasoning); a tool call inside unclosed reasoning ("<tool_call>" followed
 * by "<function=" ends the reasoning; a later "</think>" is dropped); text before the
 * calls; a missing "</parameter>" (the next "<parameter=" of a declared parameter, or
 * "</function>", ends the value); a literal "</parameter>"/"</function>" inside a value
 * (only a close followed by another tag counts); a missing "</tool_call>"; a missing
 * leading "<tool_call>" (a line starting "<function=NAME>" for a declared tool). A call
 * that cannot be read (bad function name) stays in the content as text.
 * Whitespace: reasoning and content are trimmed at both ends (what the template does
 * when they are sent back); whitespace between tool calls is dropped.
 * Parameter values become JSON by the declared type in the request's tools, as vLLM's
 * qwen3_coder parser does (_convert_param_value): string types stay strings; "null" /
 * "None" become null for non-string (or nullable) types; integer types use Python int(),
 * number types float() (integral values become ints), boolean types compare with "true",
 * object/array types json.loads then ast.literal_eval, other types ast.literal_eval;
 * anything that does not convert stays a string. Undeclared parameters are strings.
 */
#ifndef HY_CHAT_PARSE_H
#define HY_CHAT_PARSE_H

#include "base/error.h"

#include <jansson.h>
#include <stddef.h>

typedef enum hy_chat_event_kind {
    HY_CHAT_EV_REASONING = 1, /* text: a reasoning delta */
    HY_CHAT_EV_CONTENT,       /* text: a content delta */
    HY_CHAT_EV_TOOL_CALL,     /* a complete tool call */
} hy_chat_event_kind;

typedef struct hy_chat_event {
    hy_chat_event_kind kind;
    const char *text;             /* REASONING / CONTENT: delta bytes (NUL-terminated) */
    size_t len;
    size_t tool_index;            /* TOOL_CALL: 0, 1, ... in output order */
    const char *name;             /* TOOL_CALL: function name (NUL-terminated) */
    const char *arguments;        /* TOOL_CALL: JSON object text as json.dumps(ensure_ascii=False)
                                     prints it, e.g. {"city": "Paris", "days": 3} */
    const json_t *arguments_json; /* TOOL_CALL: the same object */
} hy_chat_event;

/* Called synchronously from feed/finish; pointers in ev are valid only during the call. */
typedef void (*hy_chat_event_fn)(void *user, const hy_chat_event *ev);

typedef struct hy_chat_parse_opts {
    int thinking;          /* 1: output starts inside <think> (hy_chat_prompt.thinking) */
    int parse_tool_calls;  /* 1: recognise tool calls; 0: all markup after reasoning is content */
    const json_t *tools;   /* the request's tools array (borrowed; must outlive the parser), for
                              parameter types and to validate bare "<function=" calls; may be NULL */
} hy_chat_parse_opts;

typedef struct hy_chat_parser hy_chat_parser;

/* Returns 0 and *out, or HY_E_NOMEM / HY_E_INVALID (tools not an array). */
int hy_chat_parser_create(const hy_chat_parse_opts *opts, hy_chat_event_fn fn, void *user,
                          hy_chat_parser **out, hy_err *err);
/* Feeds the next piece of output text (any split, even inside a UTF-8 sequence).
 * Returns 0, HY_E_NOMEM, or HY_E_STATE after finish. */
int hy_chat_parser_feed(hy_chat_parser *p, const char *text, size_t len);

typedef struct hy_chat_parse_summary {
    size_t n_tool_calls;  /* calls emitted */
    int tool_calls;       /* 1 when at least one call was produced: finish_reason "tool_calls" */
    size_t reasoning_len; /* bytes of reasoning / content emitted in total */
    size_t content_len;
} hy_chat_parse_summary;

/* End of output: decides everything still held back (an unfinished tool call is read
 * leniently), emits the remaining events and fills *s (may be NULL). Returns 0, HY_E_NOMEM,
 * or HY_E_STATE when called twice. */
int hy_chat_parser_finish(hy_chat_parser *p, hy_chat_parse_summary *s);
void hy_chat_parser_free(hy_chat_parser *p);

/* Whole-output result (non-streaming responses). */
typedef struct hy_chat_parse_result {
    char *reasoning;   /* NULL when there was none */
    size_t reasoning_len;
    char *content;     /* NULL when there was none */
    size_t content_len;
    json_t *tool_calls; /* array of {"name": str, "arguments": str (JSON text)}; never NULL after
                           a successful parse */
    int oom;
} hy_chat_parse_result;

/* An hy_chat_event_fn that accumulates into a hy_chat_parse_result (user = the result,
 * zero-initialised). */
void hy_chat_parse_collect(void *result, const hy_chat_event *ev);
void hy_chat_parse_result_free(hy_chat_parse_result *r);

/* Parses a whole output: create + feed + finish + collect. */
int hy_chat_parse_text(const char *text, size_t len, const hy_chat_parse_opts *opts,
                       hy_chat_parse_result *out, hy_err *err);

#endif
