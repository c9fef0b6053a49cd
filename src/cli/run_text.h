/*
 * Text-prompt mode of `hyla run` (-p TEXT): tokenize (optionally through the
 * chat template), generate with the engine and sampler, stream the decoded
 * text to stdout. Kept apart from cmd_run.c (token-id mode) so the two
 * owners do not edit the same file; cmd_run.c hands over when it sees -p.
 */
#ifndef HY_CLI_RUN_TEXT_H
#define HY_CLI_RUN_TEXT_H

/* True when argv asks for text mode (-p / --prompt present). */
int hy_cli_run_wants_text(int argc, char **argv);
/* Same argv as hy_cmd_run; returns the exit code. */
int hy_cli_run_text(int argc, char **argv);

#endif
