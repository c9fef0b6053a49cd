/*
 * Fuzz target: arbitrary bytes as an HTTP body for both OpenAI endpoints.
 * Parse/validate must return 0 or a 4xx/5xx with a message, never crash or
 * leak; an accepted request is also run through the sampling merge and the
 * error serialiser to exercise the code behind the parser.
 */
#include "server/genconfig.h"
#include "server/openai.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const hy_oai_limits lim = {.vocab_size = 248320, .max_n = 8};
    for (int k = 0; k < 2; k++) {
        hy_oai_request r;
        hy_oai_error e;
        int rc = hy_oai_parse_request(k ? HY_OAI_COMPLETION : HY_OAI_CHAT, (const char *)data, size, &lim, &r, &e);
        if (rc) {
            if (rc < 400 || rc > 599 || !e.message[0]) abort();
            char *j = hy_oai_error_json(&e);
            if (!j) abort();
            free(j);
            continue;
        }
        if (r.n < 1 || r.n > lim.max_n || r.top_logprobs < 0 || r.top_logprobs > HY_MAX_TOP_LOGPROBS) abort();
        if (r.kind == HY_OAI_COMPLETION && !r.prompt && r.n_prompt_ids <= 0) abort();
        if (r.kind == HY_OAI_CHAT && !json_is_array(r.messages)) abort();
        hy_sampling_params sp;
        hy_gen_effective_sampling(&r, NULL, &sp);
        if (!(sp.temperature >= 0.0f) || !(sp.top_p > 0.0f && sp.top_p <= 1.0f)) abort();
        hy_oai_request_release(&r);
    }
    return 0;
}
