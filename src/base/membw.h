/*
 * Memory read bandwidth measured on the spot, with the caller's thread pool, so a decode
 * benchmark can state what fraction of the machine's bandwidth it reached in the same
 * process, minutes apart at most (on a shared machine the figure moves minute to minute).
 *
 * Each thread streams its share of a caller-owned buffer (far larger than the last-level
 * cache) with vector loads (AVX2; on AVX-512 CPUs AVX2 and AVX-512 passes in turn, the best
 * counting; else one load per line).
 * Reported two ways: bytes / elapsed time, and bytes / the longest thread-CPU time (what the
 * threads achieve while they hold a core: robust when other processes compete for the CPUs).
 *
 * Threading: hy_membw_measure runs one job on the pool (the caller is thread 0); not
 * reentrant on one pool, like every pool job.
 */
#ifndef HY_BASE_MEMBW_H
#define HY_BASE_MEMBW_H

#include "base/threadpool.h"

#include <stddef.h>

typedef struct hy_membw {
    double gbs_wall; /* 1e9 bytes per elapsed second */
    double gbs_cpu;  /* 1e9 bytes per second of the slowest thread's CPU time */
} hy_membw;

/* Best-of-`passes` read bandwidth over buf (n_floats floats, 64-byte aligned, touched once
 * before so its pages exist). Each pass reads the whole buffer once. */
void hy_membw_measure(hy_threadpool *tp, const float *buf, size_t n_floats, int passes, hy_membw *out);

#endif
