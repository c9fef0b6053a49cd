/*
 * The matrices of the forward pass in the format the matmul kernels read (kernels/matmul.h),
 * chosen at load time: "auto" keeps every tensor as stored (bf16 / f32 / f16, official
 * block-FP8 with its scale_inv), "bf16" / "fp8" / "q8" / "q4" convert at load into buffers this
 * object owns. Matrices kept as stored are copied out of the mmap or read in place (hy_wres).
 * The checkpoint mmap is never written; the pages of what was copied or converted are let go
 * from this process once read (hy_st_drop_pages), so they do not count twice in its memory.
 *
 * Selective by default (anchors §4 item 9: quantizing the GDN gate projections or the head
 * costs quality out of proportion to their size): only the big projections follow the request:
 * q/k/v/o_proj, in_proj_qkv, in_proj_z, out_proj, gate/up/down_proj. in_proj_a / in_proj_b
 * (HY_QUANT_GDN_AB) and lm_head (HY_QUANT_LM_HEAD) stay as stored unless a flag says otherwise;
 * embed_tokens (a lookup), conv1d, A_log, dt_bias and the norms are never matrices here.
 *
 * Threading: creation converts with the given thread pool (rows split across its threads);
 * afterwards the object is read-only.
 */
#ifndef HY_MODEL_LINEARS_H
#define HY_MODEL_LINEARS_H

#include "base/error.h"
#include "base/threadpool.h"
#include "kernels/matmul.h"
#include "model/model.h"

#include <stdint.h>

typedef enum hy_wreq {
    HY_WEIGHTS_AUTO = 0, /* as stored */
    HY_WEIGHTS_BF16,
    HY_WEIGHTS_FP8,      /* e4m3 with 128x128 block scales (the official layout) */
    HY_WEIGHTS_Q8,
    HY_WEIGHTS_Q4,
    HY_WEIGHTS_COUNT
} hy_wreq;

int hy_wreq_parse(const char *s); /* "auto" "bf16" "fp8" "q8" "q4" -> hy_wreq, -1 if unknown */
const char *hy_wreq_name(hy_wreq r);

#define HY_QUANT_LM_HEAD 1u /* lm_head follows the request too */
#define HY_QUANT_GDN_AB 2u  /* linear_attn.in_proj_a / in_proj_b follow the request too */
#define HY_QUANT_ALL (HY_QUANT_LM_HEAD | HY_QUANT_GDN_AB)
/* BF16 (HY_LIN_BF16_GROUPS) and FP8 (HY_LIN_FP8_GROUPS) matrices that are copied or converted go
 * into row groups (HY_WFMT_BF16G / HY_WFMT_FP8G, same values; FP8 with scale blocks of a multiple
 * of 16 rows): set by the forward context where its matmul kernels read those faster
 * (hy_matmul_bf16_groups, hy_matmul_fp8_groups). Matrices read from the mmap stay row-major. */
#define HY_LIN_BF16_GROUPS 4u
#define HY_LIN_FP8_GROUPS 8u
/* quant_flags plus the row-group flags of the matmul kernels of tier isa, instance tune
 * (hy_cpu_kernels.tune: "intel", "zen" or ""): the flags a forward context with those kernels
 * builds its matrices with. */
unsigned hy_linears_tier_flags(unsigned quant_flags, hy_isa isa, const char *tune);

/* Where matrices used as stored (no conversion) are read from. Decode streams them once per
 * token, and from the checkpoint's page cache (4 KiB pages) that ran measurably slower than
 * from anonymous memory advised for huge pages; a copy costs a pass over them at load and
 * their size in anonymous memory (the page cache copy stays reclaimable). */
typedef enum hy_wres {
    HY_WRES_AUTO = 0, /* copy when they fit in MemAvailable with 1 GiB to spare, else the mmap */
    HY_WRES_COPY,     /* always copy (fails with HY_E_NOMEM where it cannot) */
    HY_WRES_MMAP,     /* read in place from the mmap (shared page cache, least memory) */
} hy_wres;

typedef enum hy_wres_used { HY_WRES_USED_NONE = 0, HY_WRES_USED_COPY, HY_WRES_USED_MMAP } hy_wres_used;

/* Tensor classes for the byte report. */
typedef enum hy_wclass {
    HY_WCLASS_ATTN = 0, /* self_attn q/k/v/o_proj */
    HY_WCLASS_GDN_IN,   /* linear_attn in_proj_qkv, in_proj_z */
    HY_WCLASS_GDN_AB,   /* linear_attn in_proj_a, in_proj_b */
    HY_WCLASS_GDN_OUT,  /* linear_attn out_proj */
    HY_WCLASS_MLP,      /* mlp gate/up/down_proj */
    HY_WCLASS_LM_HEAD,  /* lm_head (tied: the embedding matrix used as a matmul) */
    HY_WCLASS_EMBED,    /* embed_tokens (row lookup, always as stored) */
    HY_WCLASS_SMALL,    /* norms, conv1d, A_log, dt_bias (fp32 copies in the context) */
    HY_WCLASS_COUNT
} hy_wclass;

const char *hy_wclass_name(hy_wclass c);

typedef struct hy_wclass_info {
    int n;                /* tensors */
    int64_t numel;
    int64_t bytes_stored; /* in the checkpoint, fp8 scales included; a tied lm_head counts 0 */
    int64_t bytes_used;   /* what the forward pass reads per token (converted copy or stored) */
    int64_t bytes_owned;  /* converted copies held in memory besides the mmap */
    unsigned fmts;        /* set of hy_wfmt used (bit 1 << fmt) */
} hy_wclass_info;

typedef struct hy_layer_mats {
    hy_mat q_proj, k_proj, v_proj, o_proj;                             /* attention layers */
    hy_mat in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj;    /* GDN layers */
    hy_mat gate_proj, up_proj, down_proj;
} hy_layer_mats;

typedef struct hy_linears {
    hy_layer_mats *layers; /* [num_hidden_layers] */
    hy_mat lm_head;
    hy_wclass_info cls[HY_WCLASS_COUNT];
    int64_t bytes_owned;   /* total of cls[].bytes_owned */
    int64_t bytes_copied;  /* matrices used as stored but copied out of the mmap (hy_wres) */
    hy_wres_used res;      /* where the as-stored matrices are read from */
    unsigned char *arena;  /* the large converted / copied arrays, back to back (hy_alloc_pages) */
    size_t arena_cap, arena_used;
    struct hy_lin_buf *bufs; /* other owned allocations */
    int n_bufs, cap_bufs;
} hy_linears;

/* Builds every matrix view / converted copy. tp may be NULL (one thread). Fails with
 * HY_E_UNSUPPORTED for an fp8 block width the kernels cannot read (columns not a multiple of
 * 32) unless the request converts it, HY_E_INVALID for non-finite weights met while
 * quantizing, HY_E_NOMEM. The model must outlive L. */
int hy_linears_create(hy_linears *L, const hy_model *m, hy_wreq req, unsigned flags, hy_wres res,
                      hy_threadpool *tp, hy_err *err);
void hy_linears_free(hy_linears *L);

/* The class table hy_linears_create would produce with the same arguments, without converting
 * anything (whether `res` copies is judged against the memory available now). */
int hy_linears_plan(const hy_model *m, hy_wreq req, unsigned flags, hy_wres res, hy_wclass_info cls[HY_WCLASS_COUNT],
                    hy_err *err);

#endif
