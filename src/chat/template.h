/*
 * Which official chat template a checkpoint carries.
 * Owns: the table of known templates (by SHA-256 of the template text).
 * Threading: reentrant.
 * Why: we do not run Jinja; src/chat/render.c implements the official Qwen3.5 /
 * Qwen3.6 templates directly. A checkpoint's tokenizer_config.json (or
 * chat_template.jinja) tells us which one applies; anything we do not recognise
 * is rendered with Qwen3.6 semantics and reported as unknown so the loader can
 * warn. The vendored copies and their provenance are in tests/data/chat/templates/.
 */
#ifndef HY_CHAT_TEMPLATE_H
#define HY_CHAT_TEMPLATE_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

typedef enum hy_chat_template {
    HY_CHAT_TEMPLATE_QWEN3_6 = 0,     /* default: preserve_thinking, tojson tool args */
    HY_CHAT_TEMPLATE_QWEN3_5 = 1,     /* Qwen3.5 4B+: str() tool args, no preserve_thinking */
    HY_CHAT_TEMPLATE_QWEN3_5_NOTHINK, /* Qwen3.5 0.8B/2B: thinking off unless enabled */
} hy_chat_template;

/* "qwen3_6", "qwen3_5", "qwen3_5_nothink". */
const char *hy_chat_template_name(hy_chat_template t);
/* Inverse of hy_chat_template_name; returns 0 or HY_E_INVALID. */
int hy_chat_template_parse_name(const char *name, hy_chat_template *t);

/* Identifies a template text. Returns 1 and sets *t when it is one of the known official
 * templates (compared by SHA-256, also after removing trailing whitespace); returns 0 and
 * sets *t = HY_CHAT_TEMPLATE_QWEN3_6 otherwise. */
int hy_chat_template_identify(const char *text, size_t len, hy_chat_template *t);

/* Reads a checkpoint directory's template: chat_template.jinja if present, else the
 * "chat_template" field of tokenizer_config.json (a string, or a list of {name, template}
 * where "default" is used). Sets *t and *known as hy_chat_template_identify does; a directory
 * without any template gives Qwen3.6 with *known = 0 and returns 0. Returns HY_E_IO /
 * HY_E_INVALID for unreadable or malformed files. */
int hy_chat_template_from_dir(const char *dir, hy_chat_template *t, int *known, hy_err *err);

/* SHA-256 of data into out[32]. */
void hy_chat_sha256(const void *data, size_t len, uint8_t out[32]);

#endif
