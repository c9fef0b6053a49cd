/*
 * Decode profile (hy_ctx_profile_start in forward.h): per-thread wall time and matrix bytes
 * by phase of the 1-token steps, for benchmarks that ask where a token's time goes.
 *
 * Each thread adds to its own slot (a multiple of 64 bytes apart, so the two threads' counters
 * never share a line), with no atomics; thread 0 alone counts the steps, so
 * hy_ctx_profile_stop sums the slots after the jobs.
 * A matmul's role comes from where its hy_mat lies in c->lin (which field of which layer), so
 * the call sites pass nothing extra.
 */
#include "model/forward_impl.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOT_BYTES ((sizeof(hy_fwd_profile) + 63) / 64 * 64)

static hy_fwd_profile *slot(const hy_ctx *c, int ith) {
    return (hy_fwd_profile *)((char *)c->prof + (size_t)ith * SLOT_BYTES);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *hy_fwd_phase_name(hy_fwd_phase ph) {
    static const char *const names[HY_PH_COUNT] = {
        [HY_PH_Q_PROJ] = "q_proj",           [HY_PH_K_PROJ] = "k_proj",       [HY_PH_V_PROJ] = "v_proj",
        [HY_PH_ATTN_CORE] = "attention",     [HY_PH_O_PROJ] = "o_proj",       [HY_PH_IN_PROJ_QKV] = "in_proj_qkv",
        [HY_PH_IN_PROJ_Z] = "in_proj_z",     [HY_PH_IN_PROJ_B] = "in_proj_b", [HY_PH_IN_PROJ_A] = "in_proj_a",
        [HY_PH_GDN_CORE] = "gdn core",       [HY_PH_OUT_PROJ] = "out_proj",   [HY_PH_GATE_UP] = "gate+up_proj",
        [HY_PH_DOWN_PROJ] = "down_proj",     [HY_PH_LM_HEAD] = "lm_head",     [HY_PH_BARRIER] = "barrier wait",
    };
    return (unsigned)ph < HY_PH_COUNT ? names[ph] : "?";
}

int hy_ctx_profile_start(hy_ctx *c, hy_err *err) {
    const size_t bytes = SLOT_BYTES * (size_t)c->n_threads;
    if (!c->prof) {
        c->prof = aligned_alloc(64, bytes);
        if (!c->prof) return hy_err_set(err, HY_E_NOMEM, "profile: out of memory");
    }
    memset(c->prof, 0, bytes);
    c->prof_on = true;
    return HY_OK;
}

void hy_fwd_profile_add(hy_fwd_profile *dst, const hy_fwd_profile *src) {
    dst->threads = src->threads;
    dst->steps += src->steps;
    dst->step_s += src->step_s;
    for (int i = 0; i < HY_PH_COUNT; i++) {
        dst->s[i] += src->s[i];
        dst->bytes[i] += src->bytes[i];
    }
}

void hy_ctx_profile_stop(hy_ctx *c, hy_fwd_profile *out) {
    memset(out, 0, sizeof *out);
    c->prof_on = false;
    if (!c->prof) return;
    for (int t = 0; t < c->n_threads; t++) hy_fwd_profile_add(out, slot(c, t));
    out->threads = c->n_threads;
}

double hy_fwd_prof_begin(const hy_ctx *c) { return c->prof_on && c->T == 1 && !c->bseqs ? now_s() : 0; }

void hy_fwd_prof_end(const hy_ctx *c, int ith, hy_fwd_phase ph, double t0, double bytes) {
    if (t0 == 0) return;
    hy_fwd_profile *p = slot(c, ith);
    p->s[ph] += now_s() - t0;
    p->bytes[ph] += bytes;
}

void hy_fwd_prof_step(const hy_ctx *c, int ith, double t0) {
    if (t0 == 0) return;
    hy_fwd_profile *p = slot(c, ith);
    p->step_s += now_s() - t0;
    if (ith == 0) p->steps++;
}

/* The phase of a matrix of c->lin by the field it is; HY_PH_COUNT for none. */
static hy_fwd_phase mat_phase(const hy_ctx *c, const hy_mat *W) {
    if (W == &c->lin.lm_head) return HY_PH_LM_HEAD;
    const char *base = (const char *)c->lin.layers, *w = (const char *)W;
    const size_t all = (size_t)c->d.L * sizeof(hy_layer_mats);
    if (w < base || (size_t)(w - base) >= all) return HY_PH_COUNT;
    const size_t off = (size_t)(w - base) % sizeof(hy_layer_mats);
    static const struct {
        size_t off;
        hy_fwd_phase ph;
    } map[] = {
        {offsetof(hy_layer_mats, q_proj), HY_PH_Q_PROJ},
        {offsetof(hy_layer_mats, k_proj), HY_PH_K_PROJ},
        {offsetof(hy_layer_mats, v_proj), HY_PH_V_PROJ},
        {offsetof(hy_layer_mats, o_proj), HY_PH_O_PROJ},
        {offsetof(hy_layer_mats, in_proj_qkv), HY_PH_IN_PROJ_QKV},
        {offsetof(hy_layer_mats, in_proj_z), HY_PH_IN_PROJ_Z},
        {offsetof(hy_layer_mats, in_proj_b), HY_PH_IN_PROJ_B},
        {offsetof(hy_layer_mats, in_proj_a), HY_PH_IN_PROJ_A},
        {offsetof(hy_layer_mats, out_proj), HY_PH_OUT_PROJ},
        {offsetof(hy_layer_mats, gate_proj), HY_PH_GATE_UP},
        {offsetof(hy_layer_mats, up_proj), HY_PH_GATE_UP},
        {offsetof(hy_layer_mats, down_proj), HY_PH_DOWN_PROJ},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].off == off) return map[i].ph;
    return HY_PH_COUNT;
}

void hy_fwd_prof_mat(const hy_ctx *c, int ith, const hy_mat *W, double t0, double bytes) {
    if (t0 == 0) return;
    const hy_fwd_phase ph = mat_phase(c, W);
    if (ph != HY_PH_COUNT) hy_fwd_prof_end(c, ith, ph, t0, bytes);
}

void hy_fwd_barrier(const hy_ctx *c, int ith) {
    const double t0 = hy_fwd_prof_begin(c);
    hy_threadpool_barrier(c->tp);
    hy_fwd_prof_end(c, ith, HY_PH_BARRIER, t0, 0);
}
