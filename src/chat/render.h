/*
 * Chat prompt rendering for Qwen3.5 / Qwen3.6: OpenAI-style messages (+ tools) to
 * the exact prompt text the official chat template produces under Hugging Face
 * transformers' apply_chat_template(tokenize=False), after vLLM's request
 * preprocessing (tool-call arguments given as JSON strings are parsed; empty
 * ones become {}).
 * Owns: the prompt it returns (hy_chat_prompt_free).
 * Threading: reentrant; the input values are only read.
 * Why no Jinja engine: the template is fixed, so its logic is written out in C
 * (render.c follows it statement by statement) and checked byte for byte against
 * transformers on committed conversations (tests/data/chat/).
 */
#ifndef HY_CHAT_RENDER_H
#define HY_CHAT_RENDER_H

#include "base/error.h"
#include "chat/template.h"

#include <jansson.h>
#include <stddef.h>

/* Value of a template variable the caller did not set (Jinja "undefined"). Any value
 * that is not exactly true/false in chat_template_kwargs behaves the same way. */
#define HY_CHAT_UNSET (-1)

typedef struct hy_chat_render_opts {
    hy_chat_template tmpl;  /* which official template's semantics */
    int add_generation_prompt; /* 0/1: end with "<|im_start|>assistant\n" + think prefix */
    int enable_thinking;       /* HY_CHAT_UNSET, 0 (false) or 1 (true) */
    int preserve_thinking;     /* HY_CHAT_UNSET, 0 or 1; Qwen3.6 only: keep every <think> block */
    int add_vision_id;         /* 0/1: "Picture N: " / "Video N: " before media placeholders */
} hy_chat_render_opts;

/* Qwen3.6, add_generation_prompt = 1, thinking and preserve unset, no vision ids. */
void hy_chat_render_opts_default(hy_chat_render_opts *o);

/* Applies a request's chat_template_kwargs object (may be NULL): "enable_thinking" and
 * "preserve_thinking" become 1 / 0 when exactly true / false and HY_CHAT_UNSET otherwise
 * (the template only reacts to the booleans); "add_vision_id" follows Python truthiness.
 * Other keys are ignored, as the template ignores variables it does not read. */
void hy_chat_render_opts_apply_kwargs(hy_chat_render_opts *o, const json_t *kwargs);

/* Byte range [start, end) of the prompt produced by one message. A system message at
 * index 0 also owns the tool block; a tool-response group's "<|im_start|>user" belongs to
 * its first tool message and the closing "<|im_end|>\n" to its last. The tool block of a
 * conversation without a system message belongs to no message. */
typedef struct hy_chat_span {
    size_t start, end;
} hy_chat_span;

typedef struct hy_chat_prompt {
    char *text;                /* NUL-terminated; len bytes (no interior NUL unless the input had one) */
    size_t len;
    size_t n_messages;
    hy_chat_span *messages;    /* [n_messages] */
    size_t last_query_index;   /* last user message that is not a wrapped <tool_response> */
    size_t history_end;        /* where the generation prompt starts (== len when there is none).
                                  messages[last_query_index].end is the last user-turn boundary:
                                  everything before it renders identically when later turns are
                                  appended (older assistant turns may lose their <think> blocks
                                  after it), so it is where a prefix cache can checkpoint. */
    size_t *markup;            /* [n_markup][2]: sorted [start, end) byte ranges the template wrote
                                  itself (<|im_start|>user\n, <|im_end|>, tool-block prose, media
                                  placeholders...). Everything outside them comes from the
                                  request (content, reasoning, tool JSON, call arguments), which
                                  hy_tokenizer_encode_marked keeps from producing special tokens. */
    size_t n_markup;
    size_t n_images, n_videos; /* media placeholders emitted (text-only engines should refuse) */
    int thinking;              /* 1 when the prompt ends with an open "<think>\n": the model's
                                  output starts as reasoning (parser option) */
} hy_chat_prompt;

/*
 * Renders messages (a JSON array of message objects) and tools (a JSON array of tool
 * objects, or NULL / JSON null) with the given options (NULL = defaults).
 * Returns 0 and fills *out, or HY_E_INVALID with err->msg set to
 *   - the template's own raise_exception text, verbatim, when the template would raise
 *     ("No messages provided.", "No user query found in messages.",
 *      "System message must be at the beginning.", "Unexpected message role.",
 *      "Unexpected content type.", "Unexpected item type in content.",
 *      "System message cannot contain images.", "System message cannot contain videos."), or
 *   - a description of what else is wrong (a message that is not an object, tool-call
 *     arguments that are not valid JSON or not an object, a tool call without a string name,
 *     ...): cases where Python would raise a TypeError/ValueError/UndefinedError.
 * Either way the server can return err->msg as a 400. HY_E_NOMEM on allocation failure.
 * On error *out is zeroed.
 */
int hy_chat_render(const json_t *messages, const json_t *tools, const hy_chat_render_opts *opts,
                   hy_chat_prompt *out, hy_err *err);

void hy_chat_prompt_free(hy_chat_prompt *p);

#endif
