/*
 * What the AMX kernels (matmul_amx.c, attn_amx.c) share: the tile configuration (palette 1)
 * and the rounding of fp32 rows to bf16 tile rows. Include it inside the region
 * kernels/cpu/amx_begin.h opens. Every AMX kernel loads its configuration at entry, so kernels
 * never depend on one another's.
 */
#ifndef HY_KERNELS_CPU_AMX_TILES_H
#define HY_KERNELS_CPU_AMX_TILES_H

#include <stdint.h>
#include <string.h>

typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

/* all 8 tiles 16 rows x 64 bytes: C 16 x 16 fp32, A 16 x 32 bf16, B 16 pairs x 16 columns */
static inline void amx_config(void) {
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) c.colsb[i] = 64, c.rows[i] = 16;
    _tile_loadconfig(&c);
}

/* floats s[0, min(n, 16)) in a vector, zeros past them (n may be 0 or less) */
static inline __m512 amx_load16(const float *s, int n) {
    return n >= 16 ? _mm512_loadu_ps(s)
           : n > 0 ? _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), s)
                   : _mm512_setzero_ps();
}
/* floats s[0, min(n, 32)) rounded to bf16 (nearest even), zeros past them */
static inline __m512i amx_bf16x32(const float *s, int n) {
    return (__m512i)_mm512_cvtne2ps_pbh(amx_load16(s + 16, n - 16), amx_load16(s, n));
}

#endif
