/* generation_config.json reader and request/default merge (see genconfig.h). */
#include "server/genconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void init(hy_gen_defaults *d) {
    memset(d, 0, sizeof *d);
    hy_sampling_params_default(&d->sp);
    d->max_new_tokens = -1;
}

static int num(json_t *root, const char *key, double *out, const char *what, hy_err *err) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return hy_err_set(err, HY_E_INVALID, "%s: '%s' must be a number", what, key);
    *out = json_number_value(v);
    return 1;
}

int hy_gen_defaults_parse(hy_gen_defaults *d, const char *text, size_t len, const char *what, hy_err *err) {
    init(d);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return hy_err_set(err, HY_E_INVALID, "%s: invalid JSON at line %d column %d: %s", what, je.line, je.column, je.text);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = hy_err_set(err, HY_E_INVALID, "%s: top level must be an object", what);
        goto out;
    }
    double v;
    int r;
#define NUMF(key, bit, lo, hi, assign)                                                          \
    if ((r = num(root, key, &v, what, err)) < 0) { rc = r; goto out; }                            \
    if (r) {                                                                                     \
        if (!(v >= (lo) && v <= (hi))) {                                                        \
            rc = hy_err_set(err, HY_E_INVALID, "%s: '%s' = %g is out of range [%g, %g]", what, key, v, (double)(lo), (double)(hi)); \
            goto out;                                                                            \
        }                                                                                        \
        assign;                                                                                  \
        d->set_mask |= bit;                                                                      \
    }
    NUMF("temperature", HY_SET_TEMPERATURE, 0, 1e6, d->sp.temperature = (float)v)
    NUMF("top_p", HY_SET_TOP_P, 1e-9, 1, d->sp.top_p = (float)v)
    NUMF("top_k", HY_SET_TOP_K, -1, 1e9, d->sp.top_k = (int)v)
    NUMF("min_p", HY_SET_MIN_P, 0, 1, d->sp.min_p = (float)v)
    NUMF("repetition_penalty", HY_SET_REPETITION, 1e-9, 1e6, d->sp.repetition_penalty = (float)v)
    NUMF("presence_penalty", HY_SET_PRESENCE, -2, 2, d->sp.presence_penalty = (float)v)
    NUMF("frequency_penalty", HY_SET_FREQUENCY, -2, 2, d->sp.frequency_penalty = (float)v)
#undef NUMF
    /* do_sample=false means greedy in HF generate. */
    json_t *ds = json_object_get(root, "do_sample");
    if (ds && json_is_false(ds)) {
        d->sp.temperature = 0.0f;
        d->set_mask |= HY_SET_TEMPERATURE;
    }
    json_t *mnt = json_object_get(root, "max_new_tokens");
    if (mnt && json_is_integer(mnt) && json_integer_value(mnt) > 0 && json_integer_value(mnt) < (1 << 30))
        d->max_new_tokens = (int)json_integer_value(mnt);
    json_t *eos = json_object_get(root, "eos_token_id");
    if (eos && json_is_integer(eos)) {
        if (json_integer_value(eos) < 0 || json_integer_value(eos) > INT32_MAX) {
            rc = hy_err_set(err, HY_E_INVALID, "%s: 'eos_token_id' out of range", what);
            goto out;
        }
        d->eos_ids[d->n_eos++] = (int32_t)json_integer_value(eos);
    } else if (eos && json_is_array(eos)) {
        size_t i;
        json_t *x;
        json_array_foreach(eos, i, x) {
            if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
                rc = hy_err_set(err, HY_E_INVALID, "%s: 'eos_token_id[%zu]' must be a non-negative integer", what, i);
                goto out;
            }
            if (d->n_eos == HY_MAX_EOS_IDS) {
                rc = hy_err_set(err, HY_E_INVALID, "%s: more than %d eos_token_id values", what, HY_MAX_EOS_IDS);
                goto out;
            }
            d->eos_ids[d->n_eos++] = (int32_t)json_integer_value(x);
        }
    } else if (eos && !json_is_null(eos)) {
        rc = hy_err_set(err, HY_E_INVALID, "%s: 'eos_token_id' must be an integer or a list of integers", what);
        goto out;
    }
out:
    json_decref(root);
    if (rc) init(d);
    return rc;
}

int hy_gen_defaults_load(hy_gen_defaults *d, const char *dir, hy_err *err) {
    init(d);
    char path[4096];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (1u << 24)) {
                free(buf);
                fclose(f);
                return hy_err_set(err, HY_E_INVALID, "%s: file too large", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    int rc = hy_gen_defaults_parse(d, buf ? buf : "", len, path, err);
    free(buf);
    return rc;
}

void hy_gen_effective_sampling(const hy_oai_request *req, const hy_gen_defaults *d, hy_sampling_params *out) {
    *out = req->sp;
    unsigned m = req->set_mask;
#define PICK(bit, field)                                   \
    if (!(m & (bit)) && d && (d->set_mask & (bit))) out->field = d->sp.field;
    PICK(HY_SET_TEMPERATURE, temperature)
    PICK(HY_SET_TOP_P, top_p)
    PICK(HY_SET_TOP_K, top_k)
    PICK(HY_SET_MIN_P, min_p)
    PICK(HY_SET_PRESENCE, presence_penalty)
    PICK(HY_SET_FREQUENCY, frequency_penalty)
    PICK(HY_SET_REPETITION, repetition_penalty)
#undef PICK
}
