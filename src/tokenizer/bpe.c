/*
 * Byte-level BPE by merge rank, with HF tokenizers' exact semantics: start from one symbol per
 * byte, repeatedly apply the adjacent pair with the lowest merge rank (leftmost first among
 * equal ranks) until no pair has a merge. Short pieces use a linear scan over cached pair
 * ranks; long ones (runs of spaces, long CJK runs) a binary heap, so work stays O(n log n).
 *
 * Cache: piece bytes -> ids, direct-mapped, split into shards each behind its own mutex (the
 * tokenizer is shared by HTTP threads; shards keep contention low, a direct-mapped table keeps
 * memory bounded without eviction bookkeeping). Only short pieces with few ids are cached.
 */
#include "tokenizer/tok_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SHARDS 16
#define CACHE_SLOTS 2048 /* per shard, power of two */
#define CACHE_KEY_MAX 46
#define CACHE_IDS_MAX 16
#define SMALL_PIECE 128 /* linear scan up to this many bytes, heap above */

typedef struct {
    uint64_t key; /* (left + 1) << 32 | right; 0 = empty */
    uint32_t rank;
    int32_t result;
} merge_slot;

typedef struct {
    uint32_t hash; /* 0 = empty */
    uint8_t klen, nids;
    char key[CACHE_KEY_MAX];
    int32_t ids[CACHE_IDS_MAX];
} cache_entry;

typedef struct {
    pthread_mutex_t mu;
    cache_entry *slots;
} cache_shard;

struct hy_bpe {
    merge_slot *tab;
    size_t cap, count;
    int32_t byte_ids[256];
    cache_shard shards[CACHE_SHARDS];
    bool cache_ok;
};

static inline size_t slot_of(uint64_t key, size_t cap) {
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

int hy_bpe_create(hy_bpe **out, size_t n_merges, const int32_t byte_ids[256]) {
    *out = NULL;
    hy_bpe *b = calloc(1, sizeof *b);
    if (!b) return HY_E_NOMEM;
    size_t cap = 16;
    while (cap < n_merges * 2 + 2) cap *= 2;
    b->tab = calloc(cap, sizeof *b->tab);
    if (!b->tab) {
        free(b);
        return HY_E_NOMEM;
    }
    b->cap = cap;
    memcpy(b->byte_ids, byte_ids, sizeof b->byte_ids);
    b->cache_ok = true;
    for (int i = 0; i < CACHE_SHARDS; i++) {
        b->shards[i].slots = calloc(CACHE_SLOTS, sizeof(cache_entry));
        if (!b->shards[i].slots || pthread_mutex_init(&b->shards[i].mu, NULL)) {
            free(b->shards[i].slots);
            b->shards[i].slots = NULL;
            b->cache_ok = false; /* run without a cache rather than fail */
            for (int k = 0; k < i; k++) {
                pthread_mutex_destroy(&b->shards[k].mu);
                free(b->shards[k].slots);
                b->shards[k].slots = NULL;
            }
            break;
        }
    }
    *out = b;
    return 0;
}

void hy_bpe_free(hy_bpe *b) {
    if (!b) return;
    if (b->cache_ok)
        for (int i = 0; i < CACHE_SHARDS; i++) {
            pthread_mutex_destroy(&b->shards[i].mu);
            free(b->shards[i].slots);
        }
    free(b->tab);
    free(b);
}

static int grow(hy_bpe *b) {
    size_t cap = b->cap * 2;
    merge_slot *t = calloc(cap, sizeof *t);
    if (!t) return HY_E_NOMEM;
    for (size_t i = 0; i < b->cap; i++) {
        if (!b->tab[i].key) continue;
        size_t j = slot_of(b->tab[i].key, cap);
        while (t[j].key) j = (j + 1) & (cap - 1);
        t[j] = b->tab[i];
    }
    free(b->tab);
    b->tab = t;
    b->cap = cap;
    return 0;
}

int hy_bpe_add_merge(hy_bpe *b, int32_t left, int32_t right, int32_t result, uint32_t rank) {
    if ((b->count + 1) * 2 > b->cap && grow(b)) return HY_E_NOMEM;
    uint64_t key = ((uint64_t)(uint32_t)(left + 1) << 32) | (uint32_t)right;
    size_t j = slot_of(key, b->cap);
    while (b->tab[j].key) {
        if (b->tab[j].key == key) return 1;
        j = (j + 1) & (b->cap - 1);
    }
    b->tab[j] = (merge_slot){key, rank, result};
    b->count++;
    return 0;
}

static inline const merge_slot *find_merge(const hy_bpe *b, int32_t left, int32_t right) {
    uint64_t key = ((uint64_t)(uint32_t)(left + 1) << 32) | (uint32_t)right;
    size_t j = slot_of(key, b->cap);
    for (;;) {
        const merge_slot *s = &b->tab[j];
        if (s->key == key) return s;
        if (!s->key) return NULL;
        j = (j + 1) & (b->cap - 1);
    }
}

/* ---- linear variant: n <= SMALL_PIECE ---- */
static int bpe_small(const hy_bpe *b, const int32_t *init, size_t n, hy_idvec *out) {
    if (n == 0) return 0;
    int32_t id[SMALL_PIECE];
    int16_t nxt[SMALL_PIECE];
    uint32_t rank[SMALL_PIECE]; /* rank of the pair (i, nxt[i]) */
    int32_t res[SMALL_PIECE];
    for (size_t i = 0; i < n; i++) {
        id[i] = init[i];
        nxt[i] = (int16_t)(i + 1 < n ? (int)(i + 1) : -1);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        const merge_slot *m = find_merge(b, id[i], id[i + 1]);
        rank[i] = m ? m->rank : UINT32_MAX;
        res[i] = m ? m->result : -1;
    }
    if (n) rank[n - 1] = UINT32_MAX;
    for (;;) {
        int best = -1, prev_best = -1, prev = -1;
        uint32_t br = UINT32_MAX;
        for (int i = 0; i != -1; prev = i, i = nxt[i])
            if (rank[i] < br) {
                br = rank[i];
                best = i;
                prev_best = prev;
            }
        if (best < 0) break;
        int j = nxt[best];
        id[best] = res[best];
        nxt[best] = nxt[j];
        if (nxt[best] != -1) {
            const merge_slot *m = find_merge(b, id[best], id[nxt[best]]);
            rank[best] = m ? m->rank : UINT32_MAX;
            res[best] = m ? m->result : -1;
        } else {
            rank[best] = UINT32_MAX;
        }
        if (prev_best != -1) {
            const merge_slot *m = find_merge(b, id[prev_best], id[best]);
            rank[prev_best] = m ? m->rank : UINT32_MAX;
            res[prev_best] = m ? m->result : -1;
        }
    }
    for (int i = 0; i != -1; i = nxt[i])
        if (hy_idvec_push(out, id[i])) return HY_E_NOMEM;
    return 0;
}

/* ---- heap variant (HF's algorithm): entries ordered by (rank, pos) ---- */
typedef struct {
    uint32_t rank;
    uint32_t pos;
    int32_t result;
} heap_ent;

static inline bool ent_less(heap_ent a, heap_ent c) { return a.rank < c.rank || (a.rank == c.rank && a.pos < c.pos); }

static void heap_push(heap_ent *h, size_t *hn, heap_ent e) {
    size_t i = (*hn)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ent_less(e, h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static heap_ent heap_pop(heap_ent *h, size_t *hn) {
    heap_ent top = h[0], last = h[--*hn];
    size_t i = 0, n = *hn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ent_less(h[c + 1], h[c])) c++;
        if (!ent_less(h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static int bpe_heap(const hy_bpe *b, const int32_t *init, size_t n, hy_idvec *out) {
    /* each merge pushes at most 2 entries: the heap never exceeds 3n */
    int32_t *id = malloc(n * sizeof *id);
    int64_t *prv = malloc(n * sizeof *prv), *nxt = malloc(n * sizeof *nxt);
    heap_ent *h = malloc(3 * n * sizeof *h);
    int rc = 0;
    if (!id || !prv || !nxt || !h) {
        rc = HY_E_NOMEM;
        goto done;
    }
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        id[i] = init[i];
        prv[i] = (int64_t)i - 1;
        nxt[i] = i + 1 < n ? (int64_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        const merge_slot *m = find_merge(b, id[i], id[i + 1]);
        if (m) heap_push(h, &hn, (heap_ent){m->rank, (uint32_t)i, m->result});
    }
    while (hn) {
        heap_ent e = heap_pop(h, &hn);
        size_t p = e.pos;
        if (id[p] < 0 || nxt[p] < 0) continue; /* symbol gone, or now last */
        size_t q = (size_t)nxt[p];
        const merge_slot *m = find_merge(b, id[p], id[q]);
        if (!m || m->result != e.result) continue; /* stale entry */
        id[p] = e.result;
        id[q] = -1;
        nxt[p] = nxt[q];
        if (nxt[p] >= 0) prv[nxt[p]] = (int64_t)p;
        if (prv[p] >= 0) {
            const merge_slot *m2 = find_merge(b, id[prv[p]], id[p]);
            if (m2) heap_push(h, &hn, (heap_ent){m2->rank, (uint32_t)prv[p], m2->result});
        }
        if (nxt[p] >= 0) {
            const merge_slot *m2 = find_merge(b, id[p], id[nxt[p]]);
            if (m2) heap_push(h, &hn, (heap_ent){m2->rank, (uint32_t)p, m2->result});
        }
    }
    for (int64_t i = 0; i != -1; i = nxt[i])
        if ((rc = hy_idvec_push(out, id[i]))) break;
done:
    free(id);
    free(prv);
    free(nxt);
    free(h);
    return rc;
}

static uint32_t piece_hash(const uint8_t *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    uint32_t r = (uint32_t)(h ^ (h >> 29));
    return r ? r : 1;
}

int hy_bpe_encode(hy_bpe *b, const uint8_t *s, size_t n, hy_idvec *out) {
    if (n == 0) return 0;
    if (n == 1) return b->byte_ids[s[0]] >= 0 ? hy_idvec_push(out, b->byte_ids[s[0]]) : 0;
    cache_shard *sh = NULL;
    cache_entry *ce = NULL;
    uint32_t h = 0;
    if (b->cache_ok && n <= CACHE_KEY_MAX) {
        h = piece_hash(s, n);
        sh = &b->shards[h % CACHE_SHARDS];
        ce = &sh->slots[(h / CACHE_SHARDS) & (CACHE_SLOTS - 1)];
        pthread_mutex_lock(&sh->mu);
        if (ce->hash == h && ce->klen == n && !memcmp(ce->key, s, n)) {
            int rc = hy_idvec_reserve(out, ce->nids);
            if (!rc) {
                memcpy(out->p + out->n, ce->ids, ce->nids * sizeof(int32_t));
                out->n += ce->nids;
            }
            pthread_mutex_unlock(&sh->mu);
            return rc;
        }
        pthread_mutex_unlock(&sh->mu);
    }
    /* initial symbols: one per byte; bytes without a vocab entry are dropped (HF, no unk) */
    int32_t small[SMALL_PIECE], *init = n <= SMALL_PIECE ? small : malloc(n * sizeof *init);
    if (!init) return HY_E_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (b->byte_ids[s[i]] >= 0) init[m++] = b->byte_ids[s[i]];
    size_t start = out->n;
    int rc = m <= SMALL_PIECE ? bpe_small(b, init, m, out) : bpe_heap(b, init, m, out);
    if (init != small) free(init);
    if (rc) return rc;
    size_t nids = out->n - start;
    if (sh && nids <= CACHE_IDS_MAX) {
        pthread_mutex_lock(&sh->mu);
        ce->hash = h;
        ce->klen = (uint8_t)n;
        ce->nids = (uint8_t)nids;
        memcpy(ce->key, s, n);
        memcpy(ce->ids, out->p + start, nids * sizeof(int32_t));
        pthread_mutex_unlock(&sh->mu);
    }
    return 0;
}
