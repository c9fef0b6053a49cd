/*
 * `hyla detokenize`: token ids -> text, as HF tokenizers' decode; the text is written exactly
 * (no newline added). Ids that name no token are skipped, as HF does.
 */
#include "cli/cli.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: hyla detokenize -m DIR --ids 1,2,3 [--skip-special]\n"
               "  ids may be separated by commas and/or spaces; the text is printed without a newline\n");
}

HY_CMD(detokenize) {
    const char *dir = NULL, *list = NULL;
    bool skip = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(a, "--ids") && i + 1 < argc) list = argv[++i];
        else if (!strcmp(a, "--skip-special")) skip = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else { fprintf(stderr, "hyla detokenize: unknown or incomplete option '%s'\n", a); usage(stderr); return 2; }
    }
    if (!dir || !list) { usage(stderr); return 2; }
    size_t cap = strlen(list) / 2 + 1, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return 1;
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX) {
            fprintf(stderr, "hyla detokenize: bad id near '%.20s'\n", p);
            free(ids);
            return 2;
        }
        ids[n++] = (int32_t)v;
        p = end;
    }
    hy_err err = {0};
    hy_tokenizer *t = NULL;
    if (hy_tokenizer_load(&t, dir, &err)) {
        fprintf(stderr, "hyla detokenize: %s\n", err.msg);
        free(ids);
        return 1;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (hy_tokenizer_decode(t, ids, n, skip, &text, &len, &err)) {
        fprintf(stderr, "hyla detokenize: %s\n", err.msg);
        rc = 1;
    } else if (fwrite(text, 1, len, stdout) != len) {
        rc = 1;
    }
    free(text);
    free(ids);
    hy_tokenizer_free(t);
    return rc;
}
