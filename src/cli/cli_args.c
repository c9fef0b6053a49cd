/* Strict parsers for command-line values (see cli_args.h). */
#include "cli/cli_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hy_cli_parse_int(const char *opt, const char *s, long lo, long hi, int *out) {
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "hyla: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi, s ? s : "");
        return -1;
    }
    *out = (int)v;
    return 0;
}

int hy_cli_parse_ids(const char *opt, const char *s, int32_t **ids, int *n) {
    *ids = NULL;
    *n = 0;
    if (!s) {
        fprintf(stderr, "hyla: %s expects a list of token ids like 1,2,3\n", opt);
        return -1;
    }
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        if (*p == ',' || *p == ' ') cap++;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) {
        fprintf(stderr, "hyla: out of memory\n");
        return -1;
    }
    int k = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ') p++;
        if (!*p) break;
        char *end = NULL;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > INT32_MAX || (*end && *end != ',' && *end != ' ')) {
            fprintf(stderr, "hyla: %s: bad token id at '%s' (expected non-negative integers separated by commas)\n",
                    opt, p);
            free(v);
            return -1;
        }
        v[k++] = (int32_t)x;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') {
            p++;
            while (*p == ' ') p++;
            if (!*p) {
                fprintf(stderr, "hyla: %s: trailing comma in '%s'\n", opt, s);
                free(v);
                return -1;
            }
        }
    }
    if (k == 0) {
        fprintf(stderr, "hyla: %s: no token ids in '%s'\n", opt, s);
        free(v);
        return -1;
    }
    *ids = v;
    *n = k;
    return 0;
}

int hy_cli_ctx_opt(int argc, char **argv, int *i, hy_ctx_opts *o) {
    const char *a = argv[*i];
    const bool has_val = *i + 1 < argc;
    if (!strcmp(a, "--weights") && has_val) {
        const int w = hy_wreq_parse(argv[*i + 1]);
        if (w < 0) {
            fprintf(stderr, "hyla: --weights expects auto, bf16, fp8, q8 or q4, got '%s'\n", argv[*i + 1]);
            return -1;
        }
        o->weights = (hy_wreq)w;
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--isa") && has_val) {
        o->isa = argv[++*i];
        return 1;
    }
    if (!strcmp(a, "--quantize-lm-head")) {
        o->quant_flags |= HY_QUANT_LM_HEAD;
        return 1;
    }
    if (!strcmp(a, "--quantize-gdn-ab")) {
        o->quant_flags |= HY_QUANT_GDN_AB;
        return 1;
    }
    if (!strcmp(a, "--fast-prefill")) {
        o->fast_prefill = true;
        return 1;
    }
    if (!strcmp(a, "--fast-decode")) {
        o->fast_decode = true;
        return 1;
    }
    if (!strcmp(a, "--kv-type") && has_val) {
        if (hy_kv_type_parse(argv[*i + 1], &o->kv_type)) {
            fprintf(stderr, "hyla: --kv-type expects f32, bf16 or fp8, got '%s'\n", argv[*i + 1]);
            return -1;
        }
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--mmap") || !strcmp(a, "--no-mmap")) {
        o->weights_res = a[2] == 'm' ? HY_WRES_MMAP : HY_WRES_COPY;
        return 1;
    }
    return 0;
}
