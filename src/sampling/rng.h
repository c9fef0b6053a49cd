/*
 * Counter-based random numbers for sampling. A draw is a pure function of
 * (seed, stream, step): no generator state is carried between steps, so the
 * order in which the engine visits sequences in a batch, or whether a request
 * runs alone or with others, can never change which number a sequence gets.
 * `stream` separates the n choices of one request; `step` is the index of the
 * generated token within its choice. Thread-safe (no state).
 */
#ifndef HY_SAMPLING_RNG_H
#define HY_SAMPLING_RNG_H

#include <stdint.h>

/* A well-mixed 64-bit hash of (seed, stream, step). */
uint64_t hy_rng_u64(uint64_t seed, uint64_t stream, uint64_t step);
/* Uniform double in [0, 1) with 53 random bits. */
double hy_rng_uniform(uint64_t seed, uint64_t stream, uint64_t step);
/* The splitmix64 finaliser (bijective 64-bit mixer); also used to derive
 * per-request seeds from an engine-owned counter. */
uint64_t hy_rng_mix64(uint64_t z);

#endif
