/*
 * Counter-based RNG: nested splitmix64 finalisers over (seed, stream, step).
 * Each input is folded in through a full-avalanche mix, so neighbouring
 * counters give unrelated outputs. No state, no globals.
 */
#include "sampling/rng.h"

uint64_t hy_rng_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t hy_rng_u64(uint64_t seed, uint64_t stream, uint64_t step) {
    uint64_t h = hy_rng_mix64(seed);
    h = hy_rng_mix64(h ^ (stream * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull));
    h = hy_rng_mix64(h ^ (step * 0xa0761d6478bd642full + 0xe7037ed1a0b428dbull));
    return h;
}

double hy_rng_uniform(uint64_t seed, uint64_t stream, uint64_t step) {
    return (double)(hy_rng_u64(seed, stream, step) >> 11) * 0x1p-53;
}
