/*
 * Text services of a checkpoint for the server and the engine: the
 * tokenizer (tokenizer.json), the chat template semantics (identified from
 * tokenizer_config.json / chat_template.jinja) and, when available, the
 * output parser. Exposed as the two seams the server and the engine use
 * (hy_server_text, hy_engine_text). Immutable after load; thread-safe.
 */
#ifndef HY_SERVER_TEXTIO_H
#define HY_SERVER_TEXTIO_H

#include "engine/engine.h"
#include "server/server.h"

typedef struct hy_textio hy_textio;

/* tok_dir holds tokenizer.json (+ tokenizer_config.json, chat template). */
int hy_textio_load(hy_textio **out, const char *tok_dir, hy_err *err);
void hy_textio_free(hy_textio *t);
void hy_textio_server_text(hy_textio *t, hy_server_text *out);
void hy_textio_engine_text(hy_textio *t, hy_engine_text *out);
/* eos_token of tokenizer_config.json, or -1. */
int32_t hy_textio_eos_id(const hy_textio *t);
int hy_textio_vocab_size(const hy_textio *t);
/* "qwen3_6 (recognised)" etc., for the start-up log. */
const char *hy_textio_template_desc(const hy_textio *t);

/* The token ids of a one-message chat prompt outside the server (hyla run --chat), rendered
 * and tokenized as the server does (the user's text cannot produce special tokens). *ids is
 * malloc'd. */
int hy_textio_chat_user(hy_textio *t, const char *user_text, int enable_thinking, int32_t **ids, size_t *n,
                        hy_err *err);
/* Encodes with special-token parsing (prompts rendered from templates). */
int hy_textio_encode(hy_textio *t, const char *text, size_t len, int32_t **ids, size_t *n, hy_err *err);

#endif
