/*
 * Open-addressing hash map from byte strings to int32 (vocabulary lookups at load time and
 * token_id()). Keys are not copied: they point into storage the owner keeps alive. Read-only
 * after load, so concurrent gets are safe.
 */
#include "tokenizer/tok_internal.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, folded */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return (uint32_t)(h ^ (h >> 32));
}

int hy_strmap_init(hy_strmap *m, size_t expected) {
    memset(m, 0, sizeof *m);
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) return HY_E_NOMEM;
    m->cap = cap;
    return 0;
}

void hy_strmap_release(hy_strmap *m) {
    free(m->slots);
    free(m->keys);
    free(m->klen);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static int grow(hy_strmap *m) {
    size_t cap = m->cap * 2;
    uint64_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return HY_E_NOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t s = m->slots[i];
        if (!s) continue;
        size_t j = (uint32_t)s & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = s;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int hy_strmap_put(hy_strmap *m, const char *key, size_t len, int32_t val) {
    if ((m->count + 1) * 2 > m->cap && grow(m)) return HY_E_NOMEM;
    if (m->count == m->kcap) {
        size_t kc = m->kcap ? m->kcap * 2 : 64;
        const char **k = realloc(m->keys, kc * sizeof *k);
        if (!k) return HY_E_NOMEM;
        m->keys = k;
        uint32_t *kl = realloc(m->klen, kc * sizeof *kl);
        if (!kl) return HY_E_NOMEM;
        m->klen = kl;
        int32_t *v = realloc(m->vals, kc * sizeof *v);
        if (!v) return HY_E_NOMEM;
        m->vals = v;
        m->kcap = kc;
    }
    uint32_t h = hash_bytes(key, len);
    size_t j = h & (m->cap - 1);
    while (m->slots[j]) {
        uint64_t s = m->slots[j];
        size_t ki = (size_t)(s >> 32) - 1;
        if ((uint32_t)s == h && m->klen[ki] == len && !memcmp(m->keys[ki], key, len)) return 1;
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[m->count] = key;
    m->klen[m->count] = (uint32_t)len;
    m->vals[m->count] = val;
    m->slots[j] = ((uint64_t)(m->count + 1) << 32) | h;
    m->count++;
    return 0;
}

int32_t hy_strmap_get(const hy_strmap *m, const char *key, size_t len) {
    if (!m->cap) return -1;
    uint32_t h = hash_bytes(key, len);
    size_t j = h & (m->cap - 1);
    while (m->slots[j]) {
        uint64_t s = m->slots[j];
        size_t ki = (size_t)(s >> 32) - 1;
        if ((uint32_t)s == h && m->klen[ki] == len && !memcmp(m->keys[ki], key, len)) return m->vals[ki];
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}
