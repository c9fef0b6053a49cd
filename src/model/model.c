/*
 * hy_model_load: config.json + safetensors + strict binding, in that order,
 * each failure wrapped with the checkpoint directory. The model owns the
 * mappings and never changes after load, so any thread may read it.
 */
#include "model/model.h"

#include "base/log.h"
#include "io/config.h"
#include "io/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hy_model_load(hy_model **out, const char *dir, hy_err *err) {
    *out = NULL;
    hy_model *m = calloc(1, sizeof *m);
    if (!m) return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", dir);
    int rc = HY_E_NOMEM;
    m->dir = strdup(dir);
    size_t n = strlen(dir) + 16;
    char *cfg = malloc(n);
    if (!m->dir || !cfg) {
        hy_err_set(err, rc, "%s: out of memory", dir);
        goto fail;
    }
    snprintf(cfg, n, "%s/config.json", dir);
    rc = hy_config_load(&m->hp, cfg, err);
    free(cfg);
    if (rc) goto fail;
    if ((rc = hy_st_open_dir(&m->st, dir, err))) goto fail;
    if ((rc = hy_weights_bind(&m->w, &m->hp, m->st, err))) {
        hy_err_wrap(err, "%s", dir);
        goto fail;
    }
    HY_LOGI("loaded %s: %d layers, %d tensor files%s", dir, m->hp.num_hidden_layers, hy_st_n_files(m->st),
            m->w.has_mtp ? ", MTP head" : "");
    *out = m;
    return 0;
fail:
    hy_model_free(m);
    return rc;
}

void hy_model_free(hy_model *m) {
    if (!m) return;
    hy_weights_release(&m->w);
    hy_st_free(m->st);
    hy_hparams_release(&m->hp);
    free(m->dir);
    free(m);
}
