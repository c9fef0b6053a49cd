/*
 * The engine: one thread that owns the model, every sequence's state slot,
 * the sampler and the scheduler. Other threads (HTTP handlers, the CLI) talk
 * to it only through this header: submit a tokenized request, read its events
 * from a per-request thread-safe queue, cancel it, read statistics.
 *
 * Scheduling (continuous batching): requests wait in a FIFO queue and are
 * admitted while state slots are free (one slot per choice, at most
 * max_num_seqs). Every step runs the decode token of each running sequence
 * plus prefill chunks of admitted prompts, chunk size fixed
 * (prefill_chunk) so a prompt is always cut at the same offsets whatever
 * else is in the batch, and the step's prefill tokens bounded by
 * max_batch_tokens. The step is handed to the model as ONE batch
 * (hy_engine_model.forward over hy_batch_item[]); the forward-pass adapter
 * (fwd_model.c) runs prefill chunks one sequence at a time and all one-token
 * decode items in one batched step (hy_forward_batch, bit-identical to
 * decoding them one by one).
 *
 * The model and the text decoding are reached through two small vtables so
 * tests can substitute a fake model (deterministic logits) and a fake
 * vocabulary.
 *
 * Threading: hy_engine_* and hy_request_* are thread-safe except create/free.
 * The vtable callbacks are only ever called from the engine thread (or from
 * hy_engine_create/free on the caller's thread).
 */
#ifndef HY_ENGINE_ENGINE_H
#define HY_ENGINE_ENGINE_H

#include "base/error.h"
#include "memory/prefix_cache.h"
#include "sampling/sampler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------- model seam ---------------- */

/* One sequence's work in a step: append ids to its state; when logits is
 * non-NULL write the logits of the LAST appended position there ([n_vocab]),
 * or of every appended position when all_logits ([n_ids][n_vocab]; only
 * requested when the engine's logits_hook is set). */
typedef struct hy_batch_item {
    void *seq;
    const int32_t *ids;
    int n_ids;
    float *logits;
    bool all_logits;
} hy_batch_item;

typedef struct hy_engine_model {
    void *ctx;
    int n_vocab;   /* logits row width (LM head rows, padded) */
    int (*seq_create)(void *ctx, void **seq, hy_err *err);
    void (*seq_free)(void *ctx, void *seq);
    /* Back to the empty state (reuse of a slot). */
    void (*seq_reset)(void *ctx, void *seq);
    /* dst := src (same positions, same recurrent + KV state). NULL when the
     * model cannot copy: then each choice of an n > 1 request prefills itself. */
    int (*seq_copy)(void *ctx, void *dst, const void *src, hy_err *err);
    /* Runs one step. On error every item's sequence is considered broken. */
    int (*forward)(void *ctx, hy_batch_item *items, int n_items, hy_err *err);

    /* Snapshots for the prefix cache (all set, or all NULL / 0 when the model
     * cannot snapshot: then there is no prefix cache). KV rows are packed per
     * position (kv_row_bytes each); a state is state_bytes of GDN recurrent +
     * conv state. restore sets the GDN state and the position; the KV of
     * [0, pos) must have been written with kv_write first. */
    size_t kv_row_bytes;
    size_t state_bytes;
    int (*kv_read)(void *ctx, const void *seq, int pos0, int n, void *dst, hy_err *err);
    int (*kv_write)(void *ctx, void *seq, int pos0, int n, const void *src, hy_err *err);
    void (*state_read)(void *ctx, const void *seq, void *dst);
    int (*restore)(void *ctx, void *seq, const void *state, int pos, hy_err *err);
} hy_engine_model;

/* ---------------- text seam ---------------- */

typedef struct hy_engine_text {
    void *ctx;
    int n_valid;   /* tokenizer vocabulary size: logits rows >= n_valid are masked */
    /* The bytes one token contributes to decoded text (byte-level BPE bytes;
     * empty for special tokens that decoding skips). The pointer must stay
     * valid for the engine's life. Returns 0 or an error for a bad id. */
    int (*token_bytes)(void *ctx, int32_t id, const char **bytes, size_t *len);
} hy_engine_text;

/* ---------------- configuration ---------------- */

#define HY_ENGINE_MAX_EOS 8

typedef struct hy_engine_config {
    int max_num_seqs;      /* state slots = concurrently running sequences */
    int max_model_len;     /* prompt + generated tokens per sequence */
    int prefill_chunk;     /* prompt tokens per sequence per step */
    int max_batch_tokens;  /* prefill tokens per step (>= prefill_chunk) */
    int max_queue;         /* waiting requests before submit refuses (429) */
    int32_t eos_ids[HY_ENGINE_MAX_EOS];
    int n_eos;
    uint64_t seed_base;    /* mixed into the seeds of requests without one */

    /* Prefix caching (memory/prefix_cache.h), active when the model can
     * snapshot. Whenever it can, prompts are computed in forward calls that
     * end at a fixed set of positions (multiples of prefill_chunk and of
     * checkpoint_interval, the last block boundary below the prompt end, the
     * request's split_at / checkpoint_at hints), with the cache on or off,
     * so a cached run and an uncached one compute exactly the same calls. */
    bool prefix_cache;          /* store and reuse (false: --no-prefix-cache) */
    int block_size;             /* tokens per KV block */
    int checkpoint_interval;    /* checkpoint every this many prompt tokens (0: none) */
    size_t prefix_kv_bytes;     /* budget of cached KV blocks; 0: auto (the KV of one
                                   max_model_len context, at most 1/4 of physical memory) */
    size_t state_cache_bytes;   /* budget of GDN checkpoints; 0: auto (max(1 GiB, 8 checkpoints)) */
    uint64_t cache_salt;        /* model identity / dtypes, mixed into the keys */
    /* Reuse of generated tokens (slot retention, engine.c): a choice that
     * ends (stop, length or cancel; never an error) leaves its state in its
     * free slot together with the ids of every token fed (prompt + generated
     * but the last sampled one). A later prompt that strictly extends those
     * ids, further than the prefix cache reaches, resumes in that slot. Not
     * bit-identical to an uncached prefill (decode-fed tokens, resumption off
     * the schedule): within 1e-6 of max |logit| (tests/model/
     * test_reuse_generated.c). Active only with prefix_cache (so
     * --no-prefix-cache turns every reuse off); false: --no-reuse-generated. */
    bool reuse_generated;

    /* Test hook: called on the engine thread with the logits of every
     * computed position (prompt and generated; row = next-token logits after
     * position pos) of request `tag`, choice `choice`. NULL in production. */
    void (*logits_hook)(void *ctx, uint64_t tag, int choice, int pos, const float *row);
    void *logits_hook_ctx;
} hy_engine_config;

void hy_engine_config_default(hy_engine_config *c);

/* ---------------- requests ---------------- */

typedef struct hy_gen_params {
    const int32_t *prompt;  /* copied at submit */
    int n_prompt;
    int n;                  /* choices, 1..max_num_seqs */
    int max_tokens;         /* > 0; generation also stops at max_model_len */
    hy_sampling_params sp;  /* bias arrays copied at submit */
    bool has_seed;          /* else the engine picks a seed */
    const char *const *stop; /* stop strings, copied */
    int n_stop;
    const int32_t *stop_ids;
    int n_stop_ids;
    bool ignore_eos;
    int n_logprobs;         /* -1: no logprobs; else 0..20 alternatives */
    /* Prompt positions (0 < q < n_prompt) where a forward call must end
     * (chat message ends: a later request whose prompt extends this one's
     * messages can then resume there) and where the prefix cache should also
     * checkpoint (the last user-turn boundary, the end of the history).
     * Copied at submit. */
    const int32_t *split_at;
    int n_split_at;
    const int32_t *checkpoint_at;
    int n_checkpoint_at;
    uint64_t tag;           /* passed to logits_hook */
} hy_gen_params;

typedef enum hy_finish {
    HY_FINISH_NONE = 0,
    HY_FINISH_STOP,    /* eos, stop token or stop string */
    HY_FINISH_LENGTH,  /* max_tokens or max_model_len */
    HY_FINISH_ABORT,   /* cancelled or engine shut down */
    HY_FINISH_ERROR,   /* the forward pass failed */
} hy_finish;

const char *hy_finish_str(hy_finish f); /* "stop", "length", "abort", "error" */

typedef enum hy_event_type {
    HY_EV_TOKEN = 1,   /* a sampled token and the text it released (maybe empty) */
    HY_EV_FINISH,      /* one choice ended */
    HY_EV_DONE,        /* the whole request ended; always the last event */
} hy_event_type;

typedef struct hy_event {
    hy_event_type type;
    int choice;
    /* TOKEN */
    int32_t token;
    char *text;             /* valid UTF-8, owned by the event (NULL when empty) */
    size_t text_len;
    bool has_logprobs;
    hy_logprobs lp;
    /* FINISH */
    hy_finish finish;
    int32_t stop_token;     /* the eos / stop token that ended it, or -1 */
    char *stop_str;         /* the stop string that ended it, or NULL (owned) */
    char *error;            /* HY_FINISH_ERROR message (owned) */
    /* DONE */
    int prompt_tokens;
    int completion_tokens;
    int cached_tokens;      /* prompt tokens not recomputed: restored from the prefix
                               cache or resumed in a retained slot */
} hy_event;

void hy_event_clear(hy_event *ev);

typedef struct hy_engine hy_engine;
typedef struct hy_request hy_request;

/* The engine copies model/text (the structs, not what ctx points to; those
 * must outlive the engine). Creates the slots and starts the thread. */
int hy_engine_create(hy_engine **out, const hy_engine_config *cfg, const hy_engine_model *model,
                     const hy_engine_text *text, hy_err *err);
/* Stops accepting requests. drain=true lets admitted and queued requests run
 * to completion; drain=false aborts them. Returns when the thread has exited. */
void hy_engine_shutdown(hy_engine *e, bool drain);
/* Shuts down (without drain) if needed and frees everything. Requests still
 * referenced by clients stay valid until released. */
void hy_engine_free(hy_engine *e);
const hy_engine_config *hy_engine_get_config(const hy_engine *e);

/*
 * Queues a request. Errors: HY_E_INVALID (bad parameters), HY_E_RANGE (the
 * prompt leaves no room below max_model_len), HY_E_NOMEM (queue full: the
 * caller answers 429), HY_E_STATE (shutting down). On success *out holds the
 * caller's reference.
 */
int hy_engine_submit(hy_engine *e, const hy_gen_params *p, hy_request **out, hy_err *err);
/* Asks the engine to stop the request; its slots are freed at the next step
 * boundary and it ends with HY_FINISH_ABORT. Idempotent. */
void hy_request_cancel(hy_request *r);
/* Pops the next event, waiting up to timeout_ms (< 0: forever).
 * Returns 1 with *ev filled (caller clears it), 0 on timeout, -1 when the
 * DONE event was already consumed. */
int hy_request_next_event(hy_request *r, hy_event *ev, int timeout_ms);
/* Drops the caller's reference; cancels the request if it has not ended. */
void hy_request_release(hy_request *r);

/* ---------------- statistics ---------------- */

#define HY_HIST_BUCKETS 16

typedef struct hy_hist {
    double le[HY_HIST_BUCKETS];        /* upper bounds (seconds), ascending */
    int n_le;
    uint64_t counts[HY_HIST_BUCKETS];  /* per bucket, not cumulative; +Inf implied by count */
    uint64_t count;
    double sum;
} hy_hist;

void hy_hist_observe(hy_hist *h, double v);

typedef struct hy_engine_stats {
    int running_requests;
    int waiting_requests;
    int running_seqs;
    int max_num_seqs;
    uint64_t prompt_tokens_total;
    uint64_t generation_tokens_total;
    uint64_t finished_total[5];        /* by hy_finish */
    uint64_t steps_total;
    hy_hist ttft;                      /* submit -> first token */
    hy_hist itl;                       /* between tokens of a choice */
    hy_hist e2e;                       /* submit -> done */
    hy_hist queue;                     /* submit -> admitted */
    bool prefix_cache;                 /* a prefix cache exists */
    hy_prefix_cache_stats pc;
    bool reuse_generated;              /* slot retention is active */
    int retained_seqs;                 /* free slots holding a finished sequence's state */
    uint64_t retained_tokens;          /* tokens those slots hold */
    uint64_t reuse_hits;               /* sequences that resumed in a retained slot */
    uint64_t reuse_hit_tokens;         /* prompt tokens those resumptions did not recompute */
    uint64_t retained_evictions;       /* retained states dropped to serve another prompt (LRU) */
} hy_engine_stats;

void hy_engine_get_stats(hy_engine *e, hy_engine_stats *out);

#endif
