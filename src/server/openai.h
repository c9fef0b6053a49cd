/*
 * OpenAI request parsing/validation and response JSON.
 *
 * Parsing turns an HTTP body into a hy_oai_request or an hy_oai_error that
 * carries the HTTP status, the OpenAI error type and the offending field
 * ("param"), so a client learns exactly what to fix. Unknown fields are
 * ignored (as vLLM does); wrong types, out-of-range values and unsupported
 * features are 400s naming the field.
 *
 * Threading: pure functions over caller-owned data; called from HTTP threads.
 * Nothing here touches the engine or the model.
 */
#ifndef HY_SERVER_OPENAI_H
#define HY_SERVER_OPENAI_H

#include "sampling/sampler.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum hy_oai_kind { HY_OAI_CHAT = 0, HY_OAI_COMPLETION = 1 } hy_oai_kind;

typedef enum hy_tool_choice {
    HY_TOOL_CHOICE_AUTO = 0,
    HY_TOOL_CHOICE_NONE,
    HY_TOOL_CHOICE_REQUIRED,
    HY_TOOL_CHOICE_NAMED,
} hy_tool_choice;

/* Bit per sampling field the client set explicitly (the rest take the
 * checkpoint's generation_config defaults). */
enum {
    HY_SET_TEMPERATURE = 1 << 0,
    HY_SET_TOP_P = 1 << 1,
    HY_SET_TOP_K = 1 << 2,
    HY_SET_MIN_P = 1 << 3,
    HY_SET_PRESENCE = 1 << 4,
    HY_SET_FREQUENCY = 1 << 5,
    HY_SET_REPETITION = 1 << 6,
    HY_SET_SEED = 1 << 7,
};

#define HY_OAI_MAX_STOP 16        /* stop strings per request */
#define HY_OAI_MAX_STOP_LEN 256   /* bytes per stop string */
#define HY_OAI_MAX_STOP_IDS 64
#define HY_OAI_MAX_LOGIT_BIAS 1024

typedef struct hy_oai_limits {
    int vocab_size;   /* tokenizer vocabulary: ids must be below it */
    int max_n;        /* largest n (choices) accepted */
} hy_oai_limits;

typedef struct hy_oai_request {
    hy_oai_kind kind;
    json_t *root;            /* owned: the parsed body; the json_t fields below borrow from it */
    const char *model;       /* NULL when absent */
    const char *user;

    /* chat */
    json_t *messages;        /* array (validated shape) */
    json_t *tools;           /* array or NULL; NULL also when tool_choice is "none" */
    hy_tool_choice tool_choice;
    const char *tool_choice_name; /* for HY_TOOL_CHOICE_NAMED */
    bool parallel_tool_calls;
    int enable_thinking;     /* -1 unset, 0, 1 (chat_template_kwargs or reasoning_effort) */
    int preserve_thinking;   /* -1 unset, 0, 1 */
    json_t *chat_template_kwargs; /* object or NULL */

    /* completions */
    const char *prompt;      /* text prompt, or NULL when token ids were given */
    size_t prompt_len;
    int32_t *prompt_ids;     /* owned, n_prompt_ids entries */
    int n_prompt_ids;

    /* generation */
    int max_tokens;          /* -1 = unset (chat: rest of the context; completions: 16) */
    hy_sampling_params sp;   /* fields not in set_mask hold neutral values */
    unsigned set_mask;       /* HY_SET_* */
    int n;
    char *stop[HY_OAI_MAX_STOP]; /* owned copies */
    int n_stop;
    int32_t stop_ids[HY_OAI_MAX_STOP_IDS];
    int n_stop_ids;
    int32_t *bias_ids;       /* owned, n_bias (sp.bias_* point here) */
    float *bias_values;
    int n_bias;
    bool ignore_eos;
    bool logprobs;
    int top_logprobs;        /* 0..20 */
    bool stream;
    bool include_usage;
} hy_oai_request;

typedef struct hy_oai_error {
    int status;              /* HTTP status */
    char type[40];           /* invalid_request_error, authentication_error, ... */
    char param[96];          /* offending field or "" */
    char code[40];           /* OpenAI error code or "" (serialised as null) */
    char message[512];
} hy_oai_error;

/* Fills err and returns err->status. printf-style message. */
int hy_oai_error_set(hy_oai_error *err, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* {"error":{"message","type","param","code"}}; malloc'd string. */
char *hy_oai_error_json(const hy_oai_error *err);

/* Parses and validates body. On error returns the HTTP status (>= 400) and
 * fills err; req is then released already. On success returns 0. */
int hy_oai_parse_request(hy_oai_kind kind, const char *body, size_t len, const hy_oai_limits *lim,
                         hy_oai_request *req, hy_oai_error *err);
void hy_oai_request_release(hy_oai_request *req);

/* ---------------- responses ---------------- */

typedef struct hy_oai_top {
    const char *token;   /* text of the token (may be invalid UTF-8 fragments: escaped) */
    size_t token_len;
    float logprob;
} hy_oai_top;

/* One generated token with logprobs, as the response needs it. */
typedef struct hy_oai_token_lp {
    const char *token;
    size_t token_len;
    float logprob;
    int n_top;
    hy_oai_top top[HY_MAX_TOP_LOGPROBS];
} hy_oai_token_lp;

/* A tool call parsed from the output. */
typedef struct hy_oai_tool_call {
    char *id;
    char *name;
    char *arguments;    /* JSON text */
} hy_oai_tool_call;

/* Everything one choice produced; built up by the HTTP side from engine
 * events and the output parser. */
typedef struct hy_oai_choice {
    int index;
    char *content;      size_t content_len, content_cap;
    char *reasoning;    size_t reasoning_len, reasoning_cap;
    hy_oai_tool_call *calls; int n_calls, cap_calls;
    json_t *logprobs;   /* chat: array of content logprob objects; completions: object of arrays */
    const char *finish_reason; /* "stop" | "length" | "tool_calls" | "abort" | NULL */
    json_t *stop_reason; /* string, integer or NULL (vLLM extra) */
    int completion_tokens;
} hy_oai_choice;

typedef struct hy_oai_usage {
    int prompt_tokens;
    int completion_tokens;
    int reasoning_tokens; /* -1: omit */
    int cached_tokens;    /* prompt tokens reused from the prefix cache */
} hy_oai_usage;

int hy_oai_choice_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
void hy_oai_choice_release(hy_oai_choice *c);

/* A JSON string value from bytes that may hold invalid UTF-8 (replaced by U+FFFD). */
json_t *hy_oai_json_stringn(const char *s, size_t n);
/* Logprob entry (chat shape): {"token","logprob","bytes","top_logprobs"}. */
json_t *hy_oai_chat_logprob_entry(const hy_oai_token_lp *t);
/* Appends one token to a completions-shape logprobs object
 * {"tokens","token_logprobs","top_logprobs","text_offset"}; creates it when *obj is NULL. */
int hy_oai_completion_logprobs_add(json_t **obj, const hy_oai_token_lp *t, size_t text_offset);

json_t *hy_oai_usage_json(const hy_oai_usage *u);
/* Full non-streaming bodies. */
json_t *hy_oai_chat_response(const char *id, long created, const char *model, const hy_oai_choice *ch, int n,
                             const hy_oai_usage *u);
json_t *hy_oai_completion_response(const char *id, long created, const char *model, const hy_oai_choice *ch,
                                   int n, const hy_oai_usage *u);
/* Streaming chunk skeleton {"id","object","created","model","choices":[]}. */
json_t *hy_oai_chunk(hy_oai_kind kind, const char *id, long created, const char *model);
/* Serialises compactly; the result is malloc'd. */
char *hy_oai_dump(const json_t *j);

#endif
