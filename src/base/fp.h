/*
 * Scalar conversions between the storage dtypes of checkpoints (bf16, f16,
 * fp8 e4m3/e5m2) and fp32. These are the reference semantics; SIMD kernels
 * must match them bit for bit. bf16 rounding is round-to-nearest-even, NaN kept
 * quiet, as PyTorch does.
 */
#ifndef HY_BASE_FP_H
#define HY_BASE_FP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float hy_bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint32_t hy_f32_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float hy_bf16_to_f32(uint16_t h) { return hy_bits_to_f32((uint32_t)h << 16); }

static inline uint16_t hy_f32_to_bf16(float f) {
    uint32_t u = hy_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Round an fp32 value to the nearest bf16 and back (what a bf16 tensor op does). */
static inline float hy_round_bf16(float f) { return hy_bf16_to_f32(hy_f32_to_bf16(f)); }

static inline float hy_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0) {
        /* zero or subnormal: value = man * 2^-24 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31) return hy_bits_to_f32(sign | 0x7f800000u | (man << 13));
    return hy_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* fp8 e4m3fn (the OCP "fn" variant used by PyTorch/HF FP8 checkpoints):
 * bias 7, no infinities, S.1111.111 is NaN, max 448. */
static inline float hy_fp8_e4m3_to_f32(uint8_t b) {
    uint32_t sign = b >> 7, exp = (b >> 3) & 0xfu, man = b & 7u;
    float v;
    if (exp == 15 && man == 7) return NAN;
    if (exp == 0) v = (float)man * 0x1p-9f;
    else v = ldexpf(1.0f + (float)man / 8.0f, (int)exp - 7);
    return sign ? -v : v;
}

/* fp32 -> fp8 e4m3fn, round to nearest even, saturating to ±448 (quantizers clamp to the
 * finite range; e4m3fn has no infinity). NaN -> 0x7f. */
static inline uint8_t hy_f32_to_fp8_e4m3(float f) {
    const uint8_t sign = signbit(f) ? 0x80 : 0;
    float a = fabsf(f);
    if (isnan(f)) return 0x7f;
    if (a >= 448.0f) return sign | 0x7e;
    if (a < 0x1p-6f) return sign | (uint8_t)rintf(a * 0x1p9f); /* subnormal; 8 rounds up to 0x08 */
    int e;
    frexpf(a, &e);                                              /* a = m·2^e, m in [0.5, 1) */
    int man = (int)rintf((ldexpf(a, 1 - e) - 1.0f) * 8.0f);    /* a/2^(e-1) in [1, 2) */
    int be = e - 1 + 7;
    if (man == 8) man = 0, be++;
    if (be > 15 || (be == 15 && man == 7)) return sign | 0x7e;
    return sign | (uint8_t)(be << 3 | man);
}

/* fp8 e5m2: bias 15, IEEE-like with inf/NaN. */
static inline float hy_fp8_e5m2_to_f32(uint8_t b) { return hy_f16_to_f32((uint16_t)((uint16_t)b << 8)); }

#endif
