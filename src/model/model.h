/*
 * A loaded checkpoint: hyper-parameters, bound weight views and the resources
 * behind them (safetensors mmaps, converted buffers). Created by
 * hy_model_load from an HF checkpoint directory; immutable afterwards and
 * safe to read from any thread. hy_model_free releases everything.
 */
#ifndef HY_MODEL_MODEL_H
#define HY_MODEL_MODEL_H

#include "base/error.h"
#include "model/hparams.h"
#include "model/weights.h"

typedef struct hy_st_set hy_st_set; /* io/safetensors.h */

typedef struct hy_model {
    char *dir;       /* checkpoint directory (owned) */
    hy_hparams hp;
    hy_weights w;
    hy_st_set *st;   /* owner of the mmapped files the views point into */
} hy_model;

/* Reads DIR/config.json and the safetensors (single or sharded), binds every
 * tensor. Fails with a message naming the file/field/tensor at fault. */
int hy_model_load(hy_model **out, const char *dir, hy_err *err);
void hy_model_free(hy_model *m);

#endif
