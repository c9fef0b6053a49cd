/*
 * Token-count map for sampling penalties (see penalty.h). Linear probing with
 * a multiplicative hash; grows at 1/2 load. Single-threaded by contract.
 */
#include "sampling/penalty.h"

#include "hyla.h"

#include <stdlib.h>
#include <string.h>

static uint32_t slot_of(int32_t id, uint32_t cap) {
    return (uint32_t)(((uint64_t)(uint32_t)id * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static int alloc_table(hy_token_counts *tc, uint32_t cap) {
    tc->keys = malloc(sizeof(int32_t) * cap);
    tc->n_out = calloc(cap, sizeof(uint32_t));
    tc->in_prompt = calloc(cap, 1);
    if (!tc->keys || !tc->n_out || !tc->in_prompt) {
        free(tc->keys);
        free(tc->n_out);
        free(tc->in_prompt);
        memset(tc, 0, sizeof *tc);
        return HY_E_NOMEM;
    }
    memset(tc->keys, 0xff, sizeof(int32_t) * cap);
    tc->cap = cap;
    tc->len = 0;
    return 0;
}

int hy_token_counts_init(hy_token_counts *tc, uint32_t cap_hint) {
    uint32_t cap = 64;
    while (cap < cap_hint * 2 && cap < (1u << 30)) cap <<= 1;
    return alloc_table(tc, cap);
}

void hy_token_counts_release(hy_token_counts *tc) {
    free(tc->keys);
    free(tc->n_out);
    free(tc->in_prompt);
    memset(tc, 0, sizeof *tc);
}

void hy_token_counts_clear(hy_token_counts *tc) {
    if (!tc->cap) return;
    memset(tc->keys, 0xff, sizeof(int32_t) * tc->cap);
    memset(tc->n_out, 0, sizeof(uint32_t) * tc->cap);
    memset(tc->in_prompt, 0, tc->cap);
    tc->len = 0;
}

static int grow(hy_token_counts *tc) {
    hy_token_counts old = *tc;
    if (alloc_table(tc, old.cap ? old.cap * 2 : 64)) {
        *tc = old;
        return HY_E_NOMEM;
    }
    for (uint32_t i = 0; i < old.cap; i++) {
        if (old.keys[i] < 0) continue;
        uint32_t s = slot_of(old.keys[i], tc->cap);
        while (tc->keys[s] >= 0) s = (s + 1) & (tc->cap - 1);
        tc->keys[s] = old.keys[i];
        tc->n_out[s] = old.n_out[i];
        tc->in_prompt[s] = old.in_prompt[i];
        tc->len++;
    }
    hy_token_counts_release(&old);
    return 0;
}

int hy_token_counts_add(hy_token_counts *tc, int32_t id, bool prompt) {
    if (id < 0) return HY_E_INVALID;
    if ((tc->len + 1) * 2 > tc->cap && grow(tc)) return HY_E_NOMEM;
    uint32_t s = slot_of(id, tc->cap);
    while (tc->keys[s] >= 0 && tc->keys[s] != id) s = (s + 1) & (tc->cap - 1);
    if (tc->keys[s] < 0) {
        tc->keys[s] = id;
        tc->len++;
    }
    if (prompt) tc->in_prompt[s] = 1;
    else tc->n_out[s]++;
    return 0;
}

int hy_token_counts_copy(hy_token_counts *dst, const hy_token_counts *src) {
    if (dst->cap != src->cap) {
        hy_token_counts_release(dst);
        if (alloc_table(dst, src->cap)) return HY_E_NOMEM;
    }
    memcpy(dst->keys, src->keys, sizeof(int32_t) * src->cap);
    memcpy(dst->n_out, src->n_out, sizeof(uint32_t) * src->cap);
    memcpy(dst->in_prompt, src->in_prompt, src->cap);
    dst->len = src->len;
    return 0;
}

bool hy_token_counts_get(const hy_token_counts *tc, int32_t id, uint32_t *n_out, bool *in_prompt) {
    if (!tc->cap || id < 0) return false;
    uint32_t s = slot_of(id, tc->cap);
    while (tc->keys[s] >= 0) {
        if (tc->keys[s] == id) {
            if (n_out) *n_out = tc->n_out[s];
            if (in_prompt) *in_prompt = tc->in_prompt[s] != 0;
            return true;
        }
        s = (s + 1) & (tc->cap - 1);
    }
    return false;
}

void hy_penalties_apply(float *logits, int n_vocab, const hy_token_counts *tc, float repetition,
                        float frequency, float presence) {
    bool rep = repetition != 1.0f, fp = frequency != 0.0f || presence != 0.0f;
    if ((!rep && !fp) || !tc->cap) return;
    for (uint32_t i = 0; i < tc->cap; i++) {
        int32_t id = tc->keys[i];
        if (id < 0 || id >= n_vocab) continue;
        float l = logits[id];
        if (rep) l = l > 0.0f ? l / repetition : l * repetition;
        if (tc->n_out[i]) l -= frequency * (float)tc->n_out[i] + presence;
        logits[id] = l;
    }
}
