/*
 * Rows of a matmul shared by the threads of one step job: for streaming in decode, and in
 * prefill so that a thread the machine slows does not hold the other at the next barrier.
 *
 * Each thread starts with its own contiguous part of the rows (a static split) and takes it
 * front to back in pieces (a quarter of what is left of it, 1 to 8 times the call's piece);
 * a thread whose part is used up takes the far half of the largest part still left (work
 * stealing) and goes on with that as its own part. So in the
 * common case every thread reads one contiguous stream per matrix (the hardware and the
 * kernels' software prefetch run straight through piece boundaries), and a thread that
 * another process delays still has its rows taken over instead of stalling the others at
 * the next barrier.
 *
 * Why not a shared ticket counter (the earlier design): with chunks dealt alternately each
 * thread jumps over the other's chunk at every piece, restarting its streams; on this
 * machine's fast-bandwidth minutes that read 0.71-0.80 of the measured bandwidth on the
 * 0.8B shapes where one contiguous part per thread read 0.86-0.99.
 *
 * Protocol: every thread of the job calls hy_rowsplit_begin for the same matmuls in the same
 * order (a call is known by its index within the step), then hy_rowsplit_next until false.
 * Each part is one 64-bit word (call generation | front | back) updated by compare-and-swap:
 * the owner moves front, thieves move back, so each row is handed out exactly once. Words
 * live in a ring of HY_ROWSPLIT_RING calls, initialised lazily by the first thread to touch
 * them; this is sound while no two threads are more than HY_ROWSPLIT_RING calls apart, which
 * the step's barriers guarantee (there are far fewer dynamic matmul calls between two
 * barriers). hy_rowsplit_reset runs between jobs, on one thread.
 *
 * Which rows a thread computes changes from run to run; results do not (each row is computed
 * by one kernel call whatever the split, kernels/matmul.h).
 */
#ifndef HY_MODEL_ROWSPLIT_H
#define HY_MODEL_ROWSPLIT_H

#include "base/error.h"

#include <stdbool.h>

#define HY_ROWSPLIT_RING 32
/* rows are packed into 24 bits */
#define HY_ROWSPLIT_MAX_ROWS ((1 << 24) - 1)

typedef struct hy_rowsplit hy_rowsplit;

/* One thread's view of one matmul call. */
typedef struct hy_rowsplit_call {
    int rows, align, piece; /* piece: fewest rows an owner takes at a time (multiple of align) */
    int slot;
    unsigned gen;
} hy_rowsplit_call;

int hy_rowsplit_create(hy_rowsplit **out, int nth, hy_err *err);
void hy_rowsplit_free(hy_rowsplit *s);
/* Starts a new step: call indices from 0 again. Single-threaded, between jobs. */
void hy_rowsplit_reset(hy_rowsplit *s);
/* Thread ith's static part [*r0, *r1) of `rows` rows of nth threads (whole blocks of `align`,
 * contiguous, balanced): what hy_rowsplit_next hands it first, and the whole split where rows
 * are not shared dynamically. */
void hy_rowsplit_static_part(int rows, int align, int ith, int nth, int *r0, int *r1);
/* Thread ith's start of the next call over `rows` rows (<= HY_ROWSPLIT_MAX_ROWS), pieces of
 * `piece` to 8 x `piece` rows, boundaries at multiples of `align` (or the end). */
void hy_rowsplit_begin(hy_rowsplit *s, int rows, int align, int piece, int ith, hy_rowsplit_call *call);
/* The next rows [*o0, *o1) for thread ith; false when the call has none left anywhere. */
bool hy_rowsplit_next(hy_rowsplit *s, hy_rowsplit_call *call, int ith, int *o0, int *o1);

#endif
