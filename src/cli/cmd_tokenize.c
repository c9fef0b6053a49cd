/*
 * `hyla tokenize`: text -> token ids with a checkpoint's tokenizer.json, exactly as HF
 * tokenizers' encode (special-token text parsed unless --no-special; no BOS ever added).
 */
#include "cli/cli.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: hyla tokenize -m DIR [--text T | --file F] [--json] [--comma] [--no-special]\n"
               "  -m, --model DIR   checkpoint directory with tokenizer.json\n"
               "  --text T          text to tokenize (default: read --file, or stdin)\n"
               "  --file F          read the text from file F ('-' = stdin)\n"
               "  --json            print {\"ids\": [...], \"tokens\": [...]} \n"
               "  --comma           separate ids with commas instead of spaces\n"
               "  --no-special      special-token text (<|im_end|>...) stays text (HF split_special_tokens);\n"
               "                    non-special added tokens (<think>...) are still matched\n");
}

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        char *nb = realloc(b, cap * 2);
        if (!nb) { free(b); return NULL; }
        b = nb;
        cap *= 2;
    }
    if (b) *len = n;
    return b;
}

HY_CMD(tokenize) {
    const char *dir = NULL, *text = NULL, *file = NULL;
    bool json = false, comma = false, special = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(a, "--text") && i + 1 < argc) text = argv[++i];
        else if (!strcmp(a, "--file") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--comma")) comma = true;
        else if (!strcmp(a, "--no-special")) special = false;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else { fprintf(stderr, "hyla tokenize: unknown or incomplete option '%s'\n", a); usage(stderr); return 2; }
    }
    if (!dir || (text && file)) { usage(stderr); return 2; }
    char *buf = NULL;
    size_t len = 0;
    if (text) {
        len = strlen(text);
    } else {
        FILE *f = (!file || !strcmp(file, "-")) ? stdin : fopen(file, "rb");
        if (!f) { fprintf(stderr, "hyla tokenize: cannot open %s\n", file); return 1; }
        buf = read_all(f, &len);
        if (f != stdin) fclose(f);
        if (!buf) { fprintf(stderr, "hyla tokenize: read failed\n"); return 1; }
        text = buf;
    }
    hy_err err = {0};
    hy_tokenizer *t = NULL;
    if (hy_tokenizer_load(&t, dir, &err)) {
        fprintf(stderr, "hyla tokenize: %s\n", err.msg);
        free(buf);
        return 1;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = 0;
    if (hy_tokenizer_encode(t, text, len, special, &ids, &n, &err)) {
        fprintf(stderr, "hyla tokenize: %s\n", err.msg);
        rc = 1;
    } else if (json) {
        json_t *o = json_object(), *ja = json_array(), *jt = json_array();
        for (size_t i = 0; i < n; i++) {
            json_array_append_new(ja, json_integer(ids[i]));
            json_array_append_new(jt, json_string(hy_tokenizer_id_to_piece(t, ids[i])));
        }
        json_object_set_new(o, "ids", ja);
        json_object_set_new(o, "tokens", jt);
        char *s = json_dumps(o, JSON_COMPACT);
        if (s) printf("%s\n", s);
        else rc = 1;
        free(s);
        json_decref(o);
    } else {
        for (size_t i = 0; i < n; i++) printf(i ? (comma ? ",%d" : " %d") : "%d", ids[i]);
        printf("\n");
    }
    free(ids);
    free(buf);
    hy_tokenizer_free(t);
    return rc;
}
