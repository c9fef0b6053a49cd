/*
 * memory/prefix_cache: keys over tokens AND call boundaries, verified hits,
 * checkpoints only at exact boundaries, tail KV of unaligned checkpoints,
 * LRU eviction under byte budgets (leaves before roots), pins.
 *
 * The "sequence" here is synthetic: the KV row of position t is a function
 * of (t, token, call structure id) and the state a function of (p, id), so a
 * restored match can be checked value by value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "memory/prefix_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW 4          /* floats per position */
#define STATE 32       /* bytes of state */

typedef struct fake_seq {
    const int32_t *toks;
    int pos;
    float tag; /* stands for "how the calls were split" */
} fake_seq;

static float kv_val(const fake_seq *s, int t, int j) { return (float)(t * 1000 + s->toks[t]) + (float)j * 0.25f + s->tag; }

static int fs_kv_read(void *ctx, int pos0, int n, void *dst, hy_err *err) {
    fake_seq *s = ctx;
    if (pos0 + n > s->pos) return hy_err_set(err, HY_E_RANGE, "read past pos");
    float *d = dst;
    for (int t = 0; t < n; t++)
        for (int j = 0; j < ROW; j++) d[t * ROW + j] = kv_val(s, pos0 + t, j);
    return 0;
}

static void fs_state_read(void *ctx, void *dst) {
    fake_seq *s = ctx;
    unsigned char *d = dst;
    for (int i = 0; i < STATE; i++) d[i] = (unsigned char)(s->pos * 7 + i + (int)s->tag);
}

static hy_prefix_cache *mk(int bs, size_t kvb, size_t stb) {
    hy_prefix_cache_opts o = {.block_size = bs, .kv_row_bytes = ROW * sizeof(float), .state_bytes = STATE,
                              .kv_budget = kvb, .state_budget = stb, .salt = 42};
    hy_prefix_cache *pc = NULL;
    hy_err err;
    assert_int_equal(hy_prefix_cache_create(&pc, &o, &err), 0);
    return pc;
}

static void store(hy_prefix_cache *pc, const hy_prefix_plan *pl, fake_seq *s, int p) {
    hy_err err;
    s->pos = p;
    hy_prefix_source src = {s, fs_kv_read, fs_state_read};
    assert_int_equal(hy_prefix_cache_store(pc, pl, p, &src, &err), 0);
}

/* Checks a match against the synthetic sequence that produced it. */
static void check_match(const hy_prefix_match *m, fake_seq *s, int bs) {
    for (int b = 0; b < m->n_blocks; b++) {
        const float *d = m->block_data[b];
        for (int t = 0; t < bs; t++)
            for (int j = 0; j < ROW; j++) assert_true(d[t * ROW + j] == kv_val(s, b * bs + t, j));
    }
    assert_int_equal(m->n_tail, m->pos - m->n_blocks * bs);
    const float *tk = m->tail_kv;
    for (int t = 0; t < m->n_tail; t++)
        for (int j = 0; j < ROW; j++) assert_true(tk[t * ROW + j] == kv_val(s, m->n_blocks * bs + t, j));
    unsigned char want[STATE];
    int save = s->pos;
    s->pos = m->pos;
    fs_state_read(s, want);
    s->pos = save;
    assert_memory_equal(m->state, want, STATE);
}

static int lookup(hy_prefix_cache *pc, const hy_prefix_plan *pl, int max_pos, hy_prefix_match *m) {
    hy_err err;
    assert_int_equal(hy_prefix_cache_lookup(pc, pl, max_pos, m, &err), 0);
    return m->pos;
}

static void seq_tokens(int32_t *t, int n, uint32_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        t[i] = (int32_t)(seed >> 16) % 500;
    }
}

static void test_plan_validation(void **st) {
    (void)st;
    hy_prefix_cache *pc = mk(16, 1 << 20, 1 << 20);
    int32_t toks[40];
    seq_tokens(toks, 40, 1);
    hy_prefix_plan pl;
    hy_err err;
    int32_t bad1[] = {16, 32};          /* does not end at n */
    int32_t bad2[] = {16, 16, 40};      /* not ascending */
    int32_t bad3[] = {0, 40};           /* 0 is not a call end */
    assert_int_equal(hy_prefix_plan_init(pc, &pl, toks, 40, bad1, 2, &err), HY_E_INVALID);
    assert_int_equal(hy_prefix_plan_init(pc, &pl, toks, 40, bad2, 3, &err), HY_E_INVALID);
    assert_int_equal(hy_prefix_plan_init(pc, &pl, toks, 40, bad3, 2, &err), HY_E_INVALID);
    int32_t good[] = {16, 37, 40};
    assert_int_equal(hy_prefix_plan_init(pc, &pl, toks, 40, good, 3, &err), 0);
    assert_int_equal(pl.n_blocks, 2);
    hy_prefix_source src = {NULL, fs_kv_read, fs_state_read};
    assert_int_equal(hy_prefix_cache_store(pc, &pl, 20, &src, &err), HY_E_INVALID); /* not a boundary */
    hy_prefix_plan_release(&pl);
    hy_prefix_cache_free(pc);
}

static void test_hit_exact_boundaries(void **st) {
    (void)st;
    hy_prefix_cache *pc = mk(16, 1 << 20, 1 << 20);
    int32_t toks[100];
    seq_tokens(toks, 100, 7);
    /* A: 80 tokens, calls end at 32, 53 (unaligned: message boundary), 64, 80 */
    int32_t ba[] = {32, 53, 64, 80};
    hy_prefix_plan pa;
    hy_err err;
    assert_int_equal(hy_prefix_plan_init(pc, &pa, toks, 80, ba, 4, &err), 0);
    fake_seq sa = {toks, 0, 0.5f};
    store(pc, &pa, &sa, 53);
    store(pc, &pa, &sa, 64);

    /* the same prompt: longest stored boundary <= 79 is 64 */
    hy_prefix_match m;
    assert_int_equal(lookup(pc, &pa, 79, &m), 64);
    check_match(&m, &sa, 16);
    hy_prefix_cache_release(pc, &m);
    /* capped below 64: falls back to the unaligned checkpoint at 53 with a 5-token tail */
    assert_int_equal(lookup(pc, &pa, 63, &m), 53);
    assert_int_equal(m.n_blocks, 3);
    assert_int_equal(m.n_tail, 5);
    check_match(&m, &sa, 16);
    hy_prefix_cache_release(pc, &m);
    /* below every checkpoint: nothing (never a checkpoint at another position) */
    assert_int_equal(lookup(pc, &pa, 52, &m), 0);
    hy_prefix_cache_release(pc, &m);

    /* B extends A with the same calls up to 64: hit at 64 */
    int32_t bb[] = {32, 53, 64, 100};
    hy_prefix_plan pb;
    assert_int_equal(hy_prefix_plan_init(pc, &pb, toks, 100, bb, 4, &err), 0);
    assert_int_equal(lookup(pc, &pb, 99, &m), 64);
    check_match(&m, &sa, 16);
    hy_prefix_cache_release(pc, &m);
    hy_prefix_plan_release(&pb);

    /* C: same tokens, but no call end at 53: block 3 ([48,64)) was computed
     * differently, so neither 53 nor 64 may hit; 32 was never checkpointed */
    int32_t bc[] = {32, 64, 100};
    assert_int_equal(hy_prefix_plan_init(pc, &pb, toks, 100, bc, 3, &err), 0);
    assert_int_equal(lookup(pc, &pb, 99, &m), 0);
    hy_prefix_cache_release(pc, &m);
    hy_prefix_plan_release(&pb);

    /* D: same calls, one token changed at 40: only checkpoints below 32 could hit (none) */
    int32_t toks2[100];
    memcpy(toks2, toks, sizeof toks);
    toks2[40] ^= 1;
    assert_int_equal(hy_prefix_plan_init(pc, &pb, toks2, 100, bb, 4, &err), 0);
    assert_int_equal(lookup(pc, &pb, 99, &m), 0);
    hy_prefix_cache_release(pc, &m);
    hy_prefix_plan_release(&pb);

    hy_prefix_cache_stats s;
    hy_prefix_cache_get_stats(pc, &s);
    printf("queries %llu hits %llu hit tokens %llu blocks %llu checkpoints %llu\n", (unsigned long long)s.queries,
           (unsigned long long)s.hits, (unsigned long long)s.hit_tokens, (unsigned long long)s.blocks,
           (unsigned long long)s.checkpoints);
    assert_int_equal(s.queries, 6);
    assert_int_equal(s.hits, 3);
    assert_int_equal(s.hit_tokens, 64 + 53 + 64);
    assert_int_equal(s.blocks, 4);
    assert_int_equal(s.checkpoints, 2);
    assert_int_equal(s.checkpoint_bytes, 2 * STATE + 5 * ROW * sizeof(float));
    hy_prefix_plan_release(&pa);
    hy_prefix_cache_free(pc);
}

static void test_short_checkpoint_no_blocks(void **st) {
    (void)st;
    hy_prefix_cache *pc = mk(16, 1 << 20, 1 << 20);
    int32_t toks[20];
    seq_tokens(toks, 20, 3);
    int32_t b[] = {9, 20};
    hy_prefix_plan pl;
    hy_err err;
    assert_int_equal(hy_prefix_plan_init(pc, &pl, toks, 20, b, 2, &err), 0);
    fake_seq s = {toks, 0, 0};
    store(pc, &pl, &s, 9);
    hy_prefix_match m;
    assert_int_equal(lookup(pc, &pl, 19, &m), 9);
    assert_int_equal(m.n_blocks, 0);
    check_match(&m, &s, 16);
    hy_prefix_cache_release(pc, &m);
    hy_prefix_plan_release(&pl);
    hy_prefix_cache_free(pc);
}

static void test_eviction_lru(void **st) {
    (void)st;
    const size_t blk = 16 * ROW * sizeof(float);
    /* room for 6 blocks and 2 checkpoints */
    hy_prefix_cache *pc = mk(16, 6 * blk, 2 * STATE);
    int32_t ta[64], tb[64], tc[64];
    seq_tokens(ta, 64, 11);
    seq_tokens(tb, 64, 12);
    seq_tokens(tc, 64, 13);
    int32_t bnd[] = {32, 64};
    hy_prefix_plan pa, pb, pcc;
    hy_err err;
    assert_int_equal(hy_prefix_plan_init(pc, &pa, ta, 64, bnd, 2, &err), 0);
    assert_int_equal(hy_prefix_plan_init(pc, &pb, tb, 64, bnd, 2, &err), 0);
    assert_int_equal(hy_prefix_plan_init(pc, &pcc, tc, 64, bnd, 2, &err), 0);
    fake_seq sa = {ta, 0, 0}, sb = {tb, 0, 0}, sc = {tc, 0, 0};
    store(pc, &pa, &sa, 32);
    store(pc, &pb, &sb, 32);
    hy_prefix_match m;
    assert_int_equal(lookup(pc, &pa, 63, &m), 32); /* A is now more recent than B */
    hy_prefix_cache_release(pc, &m);
    store(pc, &pcc, &sc, 32); /* evicts B's checkpoint (LRU), blocks fit (6) */
    hy_prefix_cache_stats s;
    hy_prefix_cache_get_stats(pc, &s);
    assert_int_equal(s.checkpoint_evictions, 1);
    assert_int_equal(s.block_evictions, 0);
    assert_int_equal(lookup(pc, &pb, 63, &m), 0);
    hy_prefix_cache_release(pc, &m);
    assert_int_equal(lookup(pc, &pa, 63, &m), 32);
    check_match(&m, &sa, 16);
    /* while A's match is pinned, storing C at 64 needs 2 more blocks: B's two
     * blocks go (LRU), A's pinned ones stay; the checkpoint pool is full of
     * pinned A + C(32): C(32) is unpinned and goes */
    store(pc, &pcc, &sc, 64);
    hy_prefix_cache_release(pc, &m);
    hy_prefix_cache_get_stats(pc, &s);
    printf("blocks %llu (evicted %llu) checkpoints %llu (evicted %llu)\n", (unsigned long long)s.blocks,
           (unsigned long long)s.block_evictions, (unsigned long long)s.checkpoints,
           (unsigned long long)s.checkpoint_evictions);
    assert_int_equal(s.block_evictions, 2);
    assert_true(s.block_bytes <= 6 * blk);
    assert_true(s.checkpoint_bytes <= 2 * STATE);
    assert_int_equal(lookup(pc, &pcc, 63, &m), 0); /* 64 > max_pos, 32 evicted */
    hy_prefix_cache_release(pc, &m);
    int32_t bnd2[] = {32, 64, 65};
    int32_t tc2[65];
    memcpy(tc2, tc, sizeof tc);
    tc2[64] = 1;
    hy_prefix_plan pc2;
    assert_int_equal(hy_prefix_plan_init(pc, &pc2, tc2, 65, bnd2, 3, &err), 0);
    assert_int_equal(lookup(pc, &pc2, 64, &m), 64);
    check_match(&m, &sc, 16);
    hy_prefix_cache_release(pc, &m);
    assert_int_equal(lookup(pc, &pa, 63, &m), 32);
    hy_prefix_cache_release(pc, &m);

    /* a checkpoint whose blocks were evicted cannot hit: evict by storing more chains */
    hy_prefix_cache_clear(pc);
    hy_prefix_cache_get_stats(pc, &s);
    assert_int_equal(s.blocks, 0);
    assert_int_equal(s.checkpoints, 0);
    assert_int_equal(s.block_bytes, 0);
    hy_prefix_plan_release(&pa);
    hy_prefix_plan_release(&pb);
    hy_prefix_plan_release(&pcc);
    hy_prefix_plan_release(&pc2);
    hy_prefix_cache_free(pc);
}

/* Randomised: many prompts sharing prefixes, tiny budgets; every hit's data is
 * exactly what the producing sequence had (verified value by value). */
static void test_random_consistency(void **st) {
    (void)st;
    const size_t blk = 8 * ROW * sizeof(float);
    hy_prefix_cache *pc = mk(8, 40 * blk, 5 * (STATE + 8 * ROW * sizeof(float)));
    uint32_t r = 99;
    int hits = 0;
    int32_t base[256];
    seq_tokens(base, 256, 5);
    for (int it = 0; it < 400; it++) {
        r = r * 1664525u + 1013904223u;
        int n = 20 + (int)(r >> 8) % 200;
        int32_t toks[256];
        memcpy(toks, base, sizeof toks);
        int div = (int)(r >> 4) % 256;
        if (div < n) toks[div] = (int32_t)((r >> 20) % 500); /* diverge somewhere */
        int32_t bnd[64];
        int nb = 0;
        for (int q = 37; q < n; q += 37) bnd[nb++] = q; /* the same rule for every prompt */
        if (nb == 0 || bnd[nb - 1] != n) bnd[nb++] = n;
        hy_prefix_plan pl;
        hy_err err;
        assert_int_equal(hy_prefix_plan_init(pc, &pl, toks, n, bnd, nb, &err), 0);
        fake_seq s = {toks, 0, 0};
        hy_prefix_match m;
        if (lookup(pc, &pl, n - 1, &m) > 0) {
            hits++;
            check_match(&m, &s, 8); /* values are a function of the tokens: same prefix, same data */
        }
        hy_prefix_cache_release(pc, &m);
        for (int j = 0; j < nb - 1; j++) store(pc, &pl, &s, bnd[j]);
        hy_prefix_plan_release(&pl);
    }
    hy_prefix_cache_stats s;
    hy_prefix_cache_get_stats(pc, &s);
    printf("random: %d hits of 400, block evictions %llu, checkpoint evictions %llu\n", hits,
           (unsigned long long)s.block_evictions, (unsigned long long)s.checkpoint_evictions);
    assert_true(hits > 50);
    assert_true(s.block_evictions > 0 && s.checkpoint_evictions > 0);
    hy_prefix_cache_free(pc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_validation),
        cmocka_unit_test(test_hit_exact_boundaries),
        cmocka_unit_test(test_short_checkpoint_no_blocks),
        cmocka_unit_test(test_eviction_lru),
        cmocka_unit_test(test_random_consistency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
