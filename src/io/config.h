/*
 * config.json -> hy_hparams for HF `qwen3_5` checkpoints (spec §1).
 * Accepts the multimodal wrapper (model_type "qwen3_5" with the text model in
 * `text_config`) and the flat text-only form (model_type "qwen3_5_text", or
 * "qwen3_5" with the dimensions at the top level). Absent fields take the HF
 * defaults of transformers' Qwen3_5TextConfig; inconsistent or out-of-range
 * values are rejected with a message naming the file and field.
 * Reentrant; no globals.
 */
#ifndef HY_IO_CONFIG_H
#define HY_IO_CONFIG_H

#include "base/error.h"
#include "model/hparams.h"

#include <stddef.h>

/* Largest config.json we read (the real ones are a few KiB). */
#define HY_CONFIG_MAX_BYTES (16u << 20)

/* Parses len bytes of config.json text; name is used in messages. On
 * failure *hp holds nothing that needs releasing. On success release with
 * hy_hparams_release. */
int hy_config_parse(hy_hparams *hp, const char *buf, size_t len, const char *name, hy_err *err);
/* Reads and parses the file at path (messages name the path). */
int hy_config_load(hy_hparams *hp, const char *path, hy_err *err);

#endif
