/*
 * Fuzz target: config.json bytes -> hy_config_parse, then every derived-size
 * function on what was accepted (a config that parses must never make them
 * overflow; hparams.c returns -1 on overflow, which we treat as a bug).
 */
#include "io/config.h"
#include "model/hparams.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hy_hparams hp;
    hy_err err = {0};
    if (hy_config_parse(&hp, (const char *)data, size, "config.json", &err) != 0) {
        HY_ASSERT(err.msg[0] != 0); /* every failure says why */
        return 0;
    }
    HY_ASSERT(hp.num_hidden_layers > 0 && hp.num_hidden_layers <= HY_MAX_LAYERS);
    HY_ASSERT(hy_hp_rotary_dim(&hp) >= 2 && hy_hp_rotary_dim(&hp) % 2 == 0);
    HY_ASSERT(hy_hp_n_attn_layers(&hp) + hy_hp_n_gdn_layers(&hp) == hp.num_hidden_layers);
    HY_ASSERT(hy_hp_text_params(&hp) > 0);
    HY_ASSERT(hy_hp_mtp_params(&hp) >= 0);
    HY_ASSERT(hy_hp_kv_bytes_per_token(&hp, 2) >= 0);
    HY_ASSERT(hy_hp_gdn_state_bytes(&hp) >= 0);
    HY_ASSERT(hy_hp_gdn_conv_bytes(&hp, 2) >= 0);
    HY_ASSERT(hp.num_attention_heads % hp.num_key_value_heads == 0);
    HY_ASSERT(hp.linear_num_value_heads % hp.linear_num_key_heads == 0);
    hy_hparams_release(&hp);
    return 0;
}
