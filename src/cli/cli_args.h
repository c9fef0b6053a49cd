/*
 * Small argument parsers shared by the subcommands (strict: the whole string
 * must parse, values must be in range). Each returns 0 or -1 after printing one
 * line to stderr naming the option and what was wrong.
 */
#ifndef HY_CLI_ARGS_H
#define HY_CLI_ARGS_H

#include "model/forward.h"

#include <stdint.h>

/* "1,2,3" (commas and/or spaces) -> malloc'd ids; *n >= 1. */
int hy_cli_parse_ids(const char *opt, const char *s, int32_t **ids, int *n);
/* Decimal integer in [lo, hi]. */
int hy_cli_parse_int(const char *opt, const char *s, long lo, long hi, int *out);

/* Kernel / weight-format options shared by the commands that build a context:
 *   --weights auto|bf16|fp8|q8|q4   matrix formats (model/linears.h; auto = as stored)
 *   --quantize-lm-head              lm_head follows --weights too
 *   --quantize-gdn-ab               linear_attn.in_proj_a/b follow --weights too
 *   --isa ref|avx2|avx512|auto      kernel tier (default: $HYLA_ISA, else the best)
 *   --fast-prefill                  bf16 activations in prefill matmuls
 *   --fast-decode                   bf16 activations in the decode GEMVs of bf16 / fp8 matrices
 *   --kv-type f32|bf16|fp8          element type of the attention KV cache (memory/kv_cache.h)
 *   --mmap / --no-mmap              matrices used as stored: read from the mmap / always copied
 * If argv[*i] is one of them, consumes it (and its value), fills o and returns 1; returns 0
 * for anything else and -1 (after a message) for a bad value. */
int hy_cli_ctx_opt(int argc, char **argv, int *i, hy_ctx_opts *o);
/* Usage lines for the options above. */
#define HY_CLI_CTX_OPTS_USAGE                                                                                          \
    "  --weights F       matrix formats: auto (as stored) | bf16 | fp8 | q8 | q4 (converted at load;\n"             \
    "                    embeddings, lm_head, in_proj_a/b and small tensors stay as stored)\n"                        \
    "  --quantize-lm-head, --quantize-gdn-ab   convert lm_head / in_proj_a,b too\n"                                   \
    "  --isa T           kernels: ref | avx2 | avx512 | auto (default $HYLA_ISA, else the best)\n"                   \
    "  --fast-prefill    bf16 activations in prefill matmuls (faster, less exact)\n"                              \
    "  --fast-decode     bf16 activations in decode matmuls (bf16 / fp8 on AMD and Intel AMX; less exact)\n"   \
    "  --kv-type T       attention KV cache: f32 (default, exact) | bf16 | fp8 (e4m3: half / a quarter\n"       \
    "                    of the memory and the cache reads of a decode step; K and V rounded)\n"                   \
    "  --mmap, --no-mmap matrices used as stored: read in place from the mmap (least memory) / always\n"         \
    "                    copied into memory (default: copied when they fit, faster decode)\n"

#endif
