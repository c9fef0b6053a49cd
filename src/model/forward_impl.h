/*
 * Internals shared by forward.c and the per-layer files (layer_attn.c,
 * layer_gdn.c, layer_ffn.c). Not part of the module's API.
 *
 * A forward step is one thread-pool job: every thread runs the whole layer loop
 * and calls the layer functions below with its (ith, nth); each layer function
 * splits its phases by output (rows, tokens, heads, channels), separates phases
 * with barriers, and ends with its result accumulated into the residual stream
 * x followed by a barrier.
 */
#ifndef HY_MODEL_FORWARD_IMPL_H
#define HY_MODEL_FORWARD_IMPL_H

#include "base/threadpool.h"
#include "kernels/attn.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/gdn.h"
#include "kernels/ops.h"
#include "model/forward.h"
#include "model/rowsplit.h"

/* fp32 copies of one layer's small tensors (owned by the context). */
typedef struct hy_layer_f32 {
    hy_layer_type type;
    int slot;             /* index among the attention layers or among the GDN layers */
    float *input_norm;    /* [D] zero-centred */
    float *post_norm;     /* [D] zero-centred */
    float *q_norm;        /* [Dh] zero-centred (attention) */
    float *k_norm;        /* [Dh] zero-centred (attention) */
    float *conv_w;        /* [K][conv_dim], tap-major (GDN) */
    float *A_log;         /* [Hv] (GDN) */
    float *dt_bias;       /* [Hv] (GDN) */
    float *gdn_norm;      /* [dv] plain scale (GDN) */
} hy_layer_f32;

/* Dimensions, named as in the HF config (spec §1.2). */
typedef struct hy_fwd_dims {
    int D, F, vocab, L;
    int Hq, Hkv, Dh, rot_half; /* rotary dims = 2*rot_half */
    int Hk, Hv, dk, dv, K, key_dim, value_dim, conv_dim;
    float eps;
} hy_fwd_dims;

struct hy_seq {
    const hy_model *m;
    int pos;
    int max_tokens;
    hy_kv_cache *kv;
    hy_gdn_state *gdn;
};

struct hy_ctx {
    const hy_model *m;
    hy_cpu_kernels kern;    /* the kernel tier; ops and gdn point into it */
    const hy_ops *ops;
    const hy_gdn_ops *gdn;
    hy_linears lin;         /* the matrices the layers multiply by */
    hy_tensor embed;        /* embed_tokens as looked up: a tied lm_head's copy (lin) when there is one,
                               so the rows are not read back into memory from the mmap too */
    hy_act act;             /* activations of prefill matmuls */
    hy_kv_type kv_type;     /* of the sequences made for it (hy_ctx_opts.kv_type) */
    unsigned char *mm_scratch; /* [nth][mm_scratch_bytes] matmul scratch */
    size_t mm_scratch_bytes;
    hy_threadpool *tp;
    int n_threads;
    hy_rowsplit *split;     /* rows of the decode matmuls (hy_fwd_split_*) */
    hy_fwd_dims d;
    hy_gdn_dims gd;
    int max_chunk;

    hy_layer_f32 *layers; /* [L] */
    float *final_norm;    /* [D] */
    float *inv_freq;      /* [rot_half] */
    float *small;         /* backing store of every fp32 copy above */
    size_t small_floats;

    /* scratch, [max_chunk] rows each unless noted */
    float *x;          /* [D] residual stream */
    float *xn;         /* [D] normed input of the current sub-block */
    float *xn_thr;     /* [nth][xn_thr_ld] the same, one private copy per thread, for 1-token steps */
    size_t xn_thr_ld;
    float *rope_cos;   /* [rot_half] */
    float *rope_sin;   /* [rot_half] */
    float *work;       /* per-layer-type buffers below point into it */
    size_t work_floats;
    float *thr_work;      /* [nth][thr_work_floats] per-thread kernel scratch (GDN chunk work, attention) */
    size_t thr_work_floats;
    float *gdn_prep;      /* [Hv][max_chunk/64][gdn_prep_floats] prepared GDN chunks of one step */
    size_t gdn_prep_floats;
    int attn_tb;          /* tokens per attention work unit (one KV head x attn_tb tokens) */
    int attn_tb_bf16;     /* the same for kern.attn_bf16 (fast prefill): more rows share each
                             key block it converts */
    size_t scratch_bytes;

    /* attention views into work */
    float *a_qg;   /* [2*Hq*Dh] per-head (query | gate) as q_proj emits it */
    float *a_k;    /* [Hkv*Dh] */
    float *a_v;    /* [Hkv*Dh] */
    float *a_out;  /* [Hq*Dh] gated attention output */
    /* GDN views into work */
    float *g_qkv;  /* [conv_dim] pre-conv */
    float *g_y;    /* [conv_dim] post-conv+SiLU */
    float *g_z;    /* [Hv*dv] */
    float *g_a, *g_b, *g_g, *g_beta; /* [Hv] */
    float *g_q, *g_k; /* [Hk*dk] normalised */
    float *g_v;    /* [Hv*dv] */
    float *g_o;    /* [Hv*dv] core output, then gated-normed in place */
    /* FFN views into work */
    float *f_gate; /* [F] gate, then silu(gate)*up */
    float *f_up;   /* [F] */

    /* the step being run (set by hy_forward before each job) */
    hy_seq *seq;
    const int32_t *ids; /* [T] */
    int T;
    int pos0;
    float *logits;      /* [T][vocab] (all) or [vocab] (last), NULL for none */
    bool all_logits;
    /* batched decode (forward_batch.c): token t belongs to bseqs[t] at bseqs[t]->pos */
    hy_seq **bseqs;

    /* decode profile (forward_prof.c): [nth] per-thread totals, on while prof_on */
    hy_fwd_profile *prof;
    bool prof_on;
};

/* Layer bodies, run by every thread of a step job (ith of nth). They read the normed input
 * xn (attention, GDN: hy_fwd_norm_input of input_layernorm) or ctx->x (the FFN norms it
 * itself), use work, and add their output to ctx->x; a barrier ends each. */
void hy_layer_attn(hy_ctx *c, int layer, const float *xn, int ith, int nth);
void hy_layer_gdn(hy_ctx *c, int layer, const float *xn, int ith, int nth);
void hy_layer_ffn(hy_ctx *c, int layer, int ith, int nth);
/* The same for a batched decode step: token t is ONE new token of c->bseqs[t] (forward_batch.c). */
void hy_layer_attn_batch(hy_ctx *c, int layer, int ith, int nth);
void hy_layer_gdn_batch(hy_ctx *c, int layer, int ith, int nth);
/* A layer's input projections (hy_fwd_layer_set: attention q(+gate)/k/v into a_qg / a_k /
 * a_v, GDN qkv / z / b / a into g_qkv / g_z / g_b / g_a) as one set (hy_fwd_matmul_set),
 * barrier included; both forms of both layer kinds (layer_*.c, forward_batch.c) start with it.
 * xn: the normed input (hy_fwd_norm_input, or c->xn). */
void hy_fwd_layer_project(hy_ctx *c, int layer, const float *xn, int ith, int nth);

/* y[t] = rmsnorm(x[t]) for the tokens [t0, t1) owned by this thread. */
void hy_fwd_norm_rows(const hy_ctx *c, const float *x, const float *w, bool one_plus, float *y, int ith, int nth);
/* rmsnorm (1+w) of the residual c->x for a sub-block's matmuls; returns the buffer this
 * thread's matmuls read. A 1-token step: every thread norms the whole row into its own copy
 * (c->xn_thr), so no barrier separates the norm from the matmuls (decode runs ~50 of these a
 * token, and one thread would idle through each). Longer steps: tokens split into c->xn, then a
 * barrier. Every copy is computed by the same code, so all threads read equal values. */
const float *hy_fwd_norm_input(hy_ctx *c, const float *w, int ith, int nth);
/* Rows [*o0, *o1) of W for thread ith of nth: balanced, starting at multiples of the
 * kernels' row tile (hy_matmul_row_align). */
void hy_fwd_rows(const hy_mat *W, int ith, int nth, int *o0, int *o1);
/* Rows of one matmul call handed to a thread piece by piece. Every thread of the job calls
 * hy_fwd_split_begin for the same matrices in the same order (as for hy_fwd_matmul).
 * model/rowsplit.h: each thread takes its own contiguous part piece by piece, a thread that
 * runs out takes over half of another's. Decode and batched decode (up to
 * HY_MATMUL_GEMV_MAX_T tokens) take pieces of 64 KiB of weights or more, so each thread
 * streams; prefill pieces of 128 rows or more (compute bound: the pieces only keep both
 * threads busy to the barrier when the machine slows one of them). Results never depend on
 * the split (kernels/matmul.h). */
typedef struct hy_fwd_split {
    hy_rowsplit_call call;
    bool dynamic, done;
    int o0, o1; /* static range */
} hy_fwd_split;
/* Barrier before a phase that first reads the matrices W1 and W2 (either may be NULL), for
 * up to HY_MATMUL_GEMV_MAX_T tokens: while this thread waits, the start of its static part of
 * each (the rows the split hands it first) is prefetched (hy_threadpool_barrier_prefetch).
 * Longer steps: a plain barrier. */
void hy_fwd_barrier_next(const hy_ctx *c, const hy_mat *W1, const hy_mat *W2, int ith, int nth);

/* One matmul of a set over the same x: y[t][o] = W[o]·x[t], ldy floats per token. */
typedef struct hy_fwd_mm {
    const hy_mat *W;
    float *y;
    size_t ldy;
} hy_fwd_mm;
#define HY_FWD_SET_MAX 4
/* The matrices layer `layer` reads first, all over its normed input: attention q_proj, k_proj,
 * v_proj; GDN in_proj_qkv, in_proj_z, in_proj_b, in_proj_a (their outputs in the context's
 * buffers). Past the last layer the lm_head when the step computes logits (y NULL: for the
 * prefetch only). Returns how many, 0 for none. */
int hy_fwd_layer_set(const hy_ctx *c, int layer, hy_fwd_mm m[HY_FWD_SET_MAX]);
/* The n matmuls of a set (none accumulating). Up to HY_MATMUL_GEMV_MAX_T tokens with several
 * threads their rows are laid end to end and split as one matmul's (hy_fwd_split_*), so each
 * thread streams one contiguous part across the matrices instead of starting (and ending,
 * where the threads take over each other's rows) a stream in every small one: the 0.8B's
 * k_proj / v_proj (0.5 MiB in fp8) and in_proj_a / in_proj_b (32 KiB) read at 22-37% of the
 * bandwidth one by one. Longer steps: hy_fwd_matmul on each. */
void hy_fwd_matmul_set(const hy_ctx *c, const hy_fwd_mm *m, int n, int T, const float *x, size_t ldx, int ith,
                       int nth);
/* hy_fwd_barrier_next for what layer `layer` reads first (hy_fwd_layer_set): the start of
 * this thread's part of the set's split. */
void hy_fwd_barrier_next_layer(const hy_ctx *c, int layer, int ith, int nth);
/* Starts a step's calls from the first again; called before each step job is run
 * (single-threaded). */
void hy_fwd_split_reset(hy_ctx *c);
void hy_fwd_split_begin(const hy_ctx *c, const hy_mat *W, int T, int ith, int nth, hy_fwd_split *sp);
/* The next rows [*o0, *o1) for thread ith; false when this call has none left for it. */
bool hy_fwd_split_next(const hy_ctx *c, hy_fwd_split *sp, int ith, int *o0, int *o1);

/* Matmul with rows split across threads (hy_fwd_split_*): y[t][o] (+)= W[o]·x[t], t < T. */
void hy_fwd_matmul(const hy_ctx *c, const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy,
                   bool accumulate, int ith, int nth);
/* The same on rows [o0, o1) chosen by the caller (thread ith's scratch). keep_x: x has not changed
 * since this thread's previous call, which had the same x, T and ldx (HY_ACT_KEEP_X). */
void hy_fwd_matmul_rows(const hy_ctx *c, const hy_mat *W, int T, const float *x, size_t ldx, float *y, size_t ldy,
                        int o0, int o1, bool accumulate, bool keep_x, int ith);

/* Decode profile (hy_ctx_profile_start): the start time of a phase of thread ith, 0 when the
 * step is not profiled; hy_fwd_prof_end adds the time since t0 (and bytes of matrices read) to
 * phase ph. hy_fwd_prof_mat adds a matmul of W by its role (lin.layers[].*, lm_head). */
double hy_fwd_prof_begin(const hy_ctx *c);
void hy_fwd_prof_end(const hy_ctx *c, int ith, hy_fwd_phase ph, double t0, double bytes);
void hy_fwd_prof_mat(const hy_ctx *c, int ith, const hy_mat *W, double t0, double bytes);
/* Whole-step time of a profiled step. */
void hy_fwd_prof_step(const hy_ctx *c, int ith, double t0);
/* hy_threadpool_barrier, its wait counted as HY_PH_BARRIER in a profiled step. */
void hy_fwd_barrier(const hy_ctx *c, int ith);

#endif
