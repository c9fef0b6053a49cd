/* hyla command-line entry: dispatches to one subcommand per file. */
#include "base/log.h"
#include "cli/cli.h"
#include "hyla.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*hy_cmd_fn)(int, char **);

static const struct {
    const char *name;
    hy_cmd_fn fn;
    const char *help;
} k_cmds[] = {
    {"run", hy_cmd_run, "generate from a prompt (token ids or text)"},
    {"serve", hy_cmd_serve, "OpenAI-compatible HTTP server"},
    {"bench", hy_cmd_bench, "prefill/decode throughput (llama-bench style)"},
    {"inspect", hy_cmd_inspect, "print and audit a checkpoint directory"},
    {"tokenize", hy_cmd_tokenize, "text -> token ids"},
    {"detokenize", hy_cmd_detokenize, "token ids -> text"},
    {"logits", hy_cmd_logits, "write the logits of a prompt as float32"},
    {"random-model", hy_cmd_random_model, "write a random-weight checkpoint of a real shape"},
};

static void usage(FILE *f) {
    fprintf(f, "hyla %s - inference engine for Qwen3.5/Qwen3.6 (qwen3_5) models\n\n", HYLA_VERSION);
    fprintf(f, "usage: hyla <command> [options]   (hyla <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++)
        fprintf(f, "  %-13s %s%s\n", k_cmds[i].name, k_cmds[i].help, k_cmds[i].fn ? "" : " (not in this build)");
}

int main(int argc, char **argv) {
    const char *lv = getenv("HYLA_LOG");
    if (lv) {
        if (!strcmp(lv, "debug")) hy_log_set_level(HY_LOG_DEBUG);
        else if (!strcmp(lv, "info")) hy_log_set_level(HY_LOG_INFO);
        else if (!strcmp(lv, "warn")) hy_log_set_level(HY_LOG_WARN);
        else if (!strcmp(lv, "error")) hy_log_set_level(HY_LOG_ERROR);
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("hyla %s\n", HYLA_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++) {
        if (strcmp(argv[1], k_cmds[i].name)) continue;
        if (!k_cmds[i].fn) {
            fprintf(stderr, "hyla: '%s' is not available in this build\n", argv[1]);
            return 2;
        }
        return k_cmds[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "hyla: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
