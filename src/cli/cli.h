/*
 * Subcommands of the `hyla` binary. Each lives in src/cli/cmd_<name>.c and
 * returns the process exit code (0 success, 1 runtime error, 2 usage error).
 * Only src/cli/ may print to stdout for the user or decide the exit code.
 * Declared weak so that main.c links while a subcommand is still being built;
 * main.c reports an unavailable one instead of crashing.
 */
#ifndef HY_CLI_H
#define HY_CLI_H

#define HY_CMD(name) int hy_cmd_##name(int argc, char **argv)

__attribute__((weak)) HY_CMD(inspect);
__attribute__((weak)) HY_CMD(logits);
__attribute__((weak)) HY_CMD(run);
__attribute__((weak)) HY_CMD(serve);
__attribute__((weak)) HY_CMD(bench);
__attribute__((weak)) HY_CMD(tokenize);
__attribute__((weak)) HY_CMD(detokenize);
__attribute__((weak)) HY_CMD(random_model);

#endif
