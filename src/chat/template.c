/*
 * Known chat templates, recognised by SHA-256 (see template.h). The hashes of
 * the Qwen3.5 and Qwen3.6 templates match those published for the Hub's
 * Qwen/Qwen3.5-27B and Qwen/Qwen3.6-27B tokenizer configs (fw-ai/cookbook
 * PR #434); tests/unit/test_chat_render.c re-hashes the vendored files.
 * Threading: reentrant.
 */
#include "chat/template.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    hy_chat_template t;
    const char *name;
    const char *sha256;
} KNOWN[] = {
    {HY_CHAT_TEMPLATE_QWEN3_6, "qwen3_6", "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259"},
    {HY_CHAT_TEMPLATE_QWEN3_5, "qwen3_5", "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715"},
    {HY_CHAT_TEMPLATE_QWEN3_5_NOTHINK, "qwen3_5_nothink", "273d8e0e683b885071fb17e08d71e5f2a5ddfb5309756181681de4f5a1822d80"},
};

const char *hy_chat_template_name(hy_chat_template t) {
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
        if (KNOWN[i].t == t) return KNOWN[i].name;
    return "unknown";
}

int hy_chat_template_parse_name(const char *name, hy_chat_template *t) {
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++) {
        if (!strcmp(KNOWN[i].name, name)) {
            *t = KNOWN[i].t;
            return 0;
        }
    }
    return HY_E_INVALID;
}

/* ---- SHA-256 (FIPS 180-4) ---- */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void hy_chat_sha256(const void *data, size_t len, uint8_t out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t n = len;
    while (n >= 64) {
        sha256_block(h, p);
        p += 64, n -= 64;
    }
    uint8_t tail[128] = {0};
    memcpy(tail, p, n);
    tail[n] = 0x80;
    size_t tl = n < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(h, tail);
    if (tl == 128) sha256_block(h, tail + 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24), out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8), out[4 * i + 3] = (uint8_t)h[i];
    }
}

static int match_known(const char *text, size_t len, hy_chat_template *t) {
    uint8_t d[32];
    char hex[65];
    hy_chat_sha256(text, len, d);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++) {
        if (!strcmp(hex, KNOWN[i].sha256)) {
            *t = KNOWN[i].t;
            return 1;
        }
    }
    return 0;
}

int hy_chat_template_identify(const char *text, size_t len, hy_chat_template *t) {
    *t = HY_CHAT_TEMPLATE_QWEN3_6;
    if (match_known(text, len, t)) return 1;
    size_t n = len;
    while (n && strchr(" \t\r\n", text[n - 1]) && text[n - 1]) n--;
    if (n != len && match_known(text, n, t)) return 1;
    *t = HY_CHAT_TEMPLATE_QWEN3_6;
    return 0;
}

static char *read_all(const char *path, size_t *len, int *missing) {
    FILE *f = fopen(path, "rb");
    *missing = 0;
    if (!f) {
        *missing = 1;
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int hy_chat_template_from_dir(const char *dir, hy_chat_template *t, int *known, hy_err *err) {
    char path[4096];
    size_t len;
    int missing;
    *t = HY_CHAT_TEMPLATE_QWEN3_6;
    *known = 0;
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    char *text = read_all(path, &len, &missing);
    if (text) {
        *known = hy_chat_template_identify(text, len, t);
        free(text);
        return 0;
    }
    if (!missing) return hy_err_set(err, HY_E_IO, "%s: cannot read", path);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_error_t je;
    json_t *cfg = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!cfg) {
        FILE *f = fopen(path, "rb");
        if (!f) return 0; /* no template anywhere: default semantics, unknown */
        fclose(f);
        return hy_err_set(err, HY_E_INVALID, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    }
    json_t *ct = json_object_get(cfg, "chat_template");
    const json_t *str = NULL;
    if (json_is_string(ct)) {
        str = ct;
    } else if (json_is_array(ct)) {
        for (size_t i = 0; i < json_array_size(ct); i++) {
            json_t *e = json_array_get(ct, i);
            const char *nm = json_string_value(json_object_get(e, "name"));
            if (nm && !strcmp(nm, "default") && json_is_string(json_object_get(e, "template")))
                str = json_object_get(e, "template");
        }
    } else if (ct) {
        json_decref(cfg);
        return hy_err_set(err, HY_E_INVALID, "%s: chat_template must be a string or a list of {name, template}", path);
    }
    if (str) *known = hy_chat_template_identify(json_string_value(str), json_string_length(str), t);
    json_decref(cfg);
    return 0;
}
