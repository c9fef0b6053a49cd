/*
 * Per-sequence token statistics for the repetition / presence / frequency
 * penalties: a small open-addressing map token id -> (times generated, seen in
 * the prompt). Sparse on purpose: a 248k-entry dense array per sequence would
 * cost more to clear than the penalties cost to apply. Owned by one sequence,
 * touched only by the engine thread.
 */
#ifndef HY_SAMPLING_PENALTY_H
#define HY_SAMPLING_PENALTY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct hy_token_counts {
    int32_t *keys;    /* [cap] token id, -1 = empty slot */
    uint32_t *n_out;  /* [cap] times the token was generated */
    uint8_t *in_prompt; /* [cap] 1 if the token occurs in the prompt */
    uint32_t cap;     /* power of two */
    uint32_t len;     /* occupied slots */
} hy_token_counts;

int hy_token_counts_init(hy_token_counts *tc, uint32_t cap_hint);
void hy_token_counts_release(hy_token_counts *tc);
void hy_token_counts_clear(hy_token_counts *tc);
/* Records one occurrence (prompt or generated). Returns 0 or HY_E_NOMEM. */
int hy_token_counts_add(hy_token_counts *tc, int32_t id, bool prompt);
/* Makes dst an exact copy of src (dst must be initialised). */
int hy_token_counts_copy(hy_token_counts *dst, const hy_token_counts *src);
/* Lookup; returns false when the token was never recorded. */
bool hy_token_counts_get(const hy_token_counts *tc, int32_t id, uint32_t *n_out, bool *in_prompt);

/*
 * Applies the penalties in place to logits[0..n_vocab), vLLM / HF semantics:
 *   repetition (prompt and output tokens): l > 0 ? l / r : l * r
 *   frequency  (output tokens):            l -= f * count
 *   presence   (output tokens):            l -= p
 * Only tokens present in tc are touched (ids >= n_vocab are ignored).
 */
void hy_penalties_apply(float *logits, int n_vocab, const hy_token_counts *tc, float repetition,
                        float frequency, float presence);

#endif
