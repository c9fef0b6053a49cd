/*
 * Generation defaults from a checkpoint's generation_config.json (sampling
 * values and EOS ids), and how they combine with a request: a field the client
 * set wins, else the checkpoint's value, else the neutral value (vLLM's
 * default behaviour). Read once at start-up; immutable afterwards.
 */
#ifndef HY_SERVER_GENCONFIG_H
#define HY_SERVER_GENCONFIG_H

#include "server/openai.h"

#define HY_MAX_EOS_IDS 8

typedef struct hy_gen_defaults {
    unsigned set_mask;   /* which sampling fields the file set (HY_SET_*) */
    hy_sampling_params sp;
    int32_t eos_ids[HY_MAX_EOS_IDS];
    int n_eos;
    int max_new_tokens;  /* -1 when absent */
} hy_gen_defaults;

/* Reads DIR/generation_config.json. A missing file gives empty defaults and
 * returns 0; a malformed one returns HY_E_INVALID with a message naming the
 * file and field. */
int hy_gen_defaults_load(hy_gen_defaults *d, const char *dir, hy_err *err);
/* Same from an in-memory JSON text (for tests). */
int hy_gen_defaults_parse(hy_gen_defaults *d, const char *text, size_t len, const char *what, hy_err *err);
/* Effective sampling parameters for a request. */
void hy_gen_effective_sampling(const hy_oai_request *req, const hy_gen_defaults *d, hy_sampling_params *out);

#endif
