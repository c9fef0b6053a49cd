/*
 * Token sampling: logits processors (penalties, temperature, top-k, top-p,
 * min-p), the draw itself and logprobs.
 *
 * Order (as HF generate's processors): logit_bias -> penalties -> temperature -> top-k ->
 * top-p -> min-p -> draw. Temperature 0 is greedy (argmax, ties -> lowest id).
 * Logits at ids >= n_valid (the padded rows of the LM head beyond the
 * tokenizer's vocabulary) are never candidates and do not enter logprobs.
 *
 * Determinism: the draw uses hy_rng_uniform(seed, stream, step); candidates
 * are visited in an order that depends only on the logits (probability
 * descending, ties by id, or plain id order when no filter needs sorting), so
 * a sequence's tokens do not depend on what else is in the batch.
 *
 * Logprobs are the log-softmax of the RAW logits (before penalties and
 * temperature, vLLM's default "raw_logprobs"), computed in double.
 *
 * Threading: a hy_sampler is scratch memory for one thread (the engine's);
 * params and counts are read-only here.
 */
#ifndef HY_SAMPLING_SAMPLER_H
#define HY_SAMPLING_SAMPLER_H

#include "base/error.h"
#include "sampling/penalty.h"

#include <stdbool.h>
#include <stdint.h>

#define HY_MAX_TOP_LOGPROBS 20

typedef struct hy_sampling_params {
    float temperature;        /* >= 0; 0 = greedy */
    float top_p;              /* (0, 1]; 1 = off */
    int top_k;                /* <= 0 = off */
    float min_p;              /* [0, 1]; 0 = off */
    float presence_penalty;   /* 0 = off */
    float frequency_penalty;  /* 0 = off */
    float repetition_penalty; /* > 0; 1 = off */
    uint64_t seed;
    /* logit_bias: added to the raw logits before everything else. The arrays
     * are borrowed (owned by the request), n_bias entries each. */
    int n_bias;
    const int32_t *bias_ids;
    const float *bias_values;
} hy_sampling_params;

/* Neutral parameters: temperature 1, every filter and penalty off. */
void hy_sampling_params_default(hy_sampling_params *p);

typedef struct hy_logprobs {
    int32_t token;  /* the sampled token */
    float logprob;  /* its raw log-probability */
    int n_top;      /* number of alternatives filled (<= HY_MAX_TOP_LOGPROBS) */
    int32_t top_ids[HY_MAX_TOP_LOGPROBS]; /* most likely first, ties by id */
    float top_logprobs[HY_MAX_TOP_LOGPROBS];
} hy_logprobs;

typedef struct hy_sampler hy_sampler;

/* Scratch for logits rows of width n_vocab (the LM head width). */
int hy_sampler_create(hy_sampler **out, int n_vocab, hy_err *err);
void hy_sampler_free(hy_sampler *s);

/*
 * Samples one token from logits[0..n_valid) (n_valid <= n_vocab). tc may be
 * NULL (no penalties). When lp is non-NULL it receives the sampled token's
 * logprob and the n_top most likely alternatives (n_top in 0..20).
 * logits are not modified. Returns the token id (>= 0).
 */
int32_t hy_sampler_sample(hy_sampler *s, const float *logits, int n_valid, const hy_sampling_params *p,
                          const hy_token_counts *tc, uint64_t stream, uint64_t step, hy_logprobs *lp,
                          int n_top);

/*
 * The final distribution the draw uses, for tests and diagnostics: returns the
 * number of candidates and points *ids / *probs (normalised, in draw order) at
 * scratch owned by s, valid until the next call.
 */
int hy_sampler_distribution(hy_sampler *s, const float *logits, int n_valid, const hy_sampling_params *p,
                            const hy_token_counts *tc, const int32_t **ids, const double **probs);

#endif
