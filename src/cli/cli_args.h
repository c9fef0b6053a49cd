/*
 * Small argument parsers shared by the subcommands (strict: the whole string
 * must parse, values must be in range). Each returns 0 or -1 after printing one
 * line to stderr naming the option and what was wrong.
 */
#ifndef HY_CLI_ARGS_H
#define HY_CLI_ARGS_H

#include <stdint.h>

/* "1,2,3" (commas and/or spaces) -> malloc'd ids; *n >= 1. */
int hy_cli_parse_ids(const char *opt, const char *s, int32_t **ids, int *n);
/* Decimal integer in [lo, hi]. */
int hy_cli_parse_int(const char *opt, const char *s, long lo, long hi, int *out);

#endif
