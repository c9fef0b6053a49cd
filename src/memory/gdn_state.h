/*
 * Gated DeltaNet state of one sequence (spec §5.10): for every GDN layer the
 * recurrent state [Hv][dk][dv] and the conv state [K-1][conv_dim] (the last
 * K-1 pre-conv inputs, oldest first), both fp32. Zero at sequence start.
 *
 * One contiguous allocation so a snapshot (prefix-cache checkpoint, speculative
 * rollback) is a single memcpy. Threading: owned by the engine thread; forward
 * threads update disjoint heads / channels.
 */
#ifndef HY_MEMORY_GDN_STATE_H
#define HY_MEMORY_GDN_STATE_H

#include "base/error.h"
#include "kernels/gdn.h"

#include <stddef.h>

typedef struct hy_gdn_state {
    int n_layers;     /* GDN layers */
    hy_gdn_dims d;    /* Hk, Hv, dk, dv */
    int conv_dim;     /* 2*Hk*dk + Hv*dv */
    int conv_kernel;  /* K */
    size_t rec_floats;  /* per layer: Hv*dk*dv */
    size_t conv_floats; /* per layer: (K-1)*conv_dim */
    float *data;        /* [n_layers][rec_floats] then [n_layers][conv_floats] */
    size_t bytes;
} hy_gdn_state;

int hy_gdn_state_create(hy_gdn_state **out, int n_layers, const hy_gdn_dims *d, int conv_kernel, hy_err *err);
void hy_gdn_state_free(hy_gdn_state *s);
/* Back to the start-of-sequence state (all zeros). */
void hy_gdn_state_reset(hy_gdn_state *s);
/* dst <- src; both created with the same sizes. */
void hy_gdn_state_copy(hy_gdn_state *dst, const hy_gdn_state *src);

static inline float *hy_gdn_state_rec(const hy_gdn_state *s, int layer) {
    return s->data + (size_t)layer * s->rec_floats;
}
static inline float *hy_gdn_state_conv(const hy_gdn_state *s, int layer) {
    return s->data + (size_t)s->n_layers * s->rec_floats + (size_t)layer * s->conv_floats;
}

#endif
