/*
 * Prefix cache (see prefix_cache.h): block/checkpoint keys, a hash table of
 * entries, two LRU pools with byte budgets, pins.
 *
 * One entry type serves both pools: a block (kind BLOCK: bs tokens, KV rows)
 * or a checkpoint (kind CKPT: tail tokens, GDN state + tail KV rows). The
 * tokens and call marks are stored so a hit is verified against the request's
 * own tokens, not trusted to the hash alone.
 */
#include "memory/prefix_cache.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

enum { KIND_BLOCK = 1, KIND_CKPT = 2 };

typedef struct pc_entry {
    hy_pc_key key, parent;
    int kind;
    int pos;      /* block: end position; checkpoint: p */
    int e;        /* block: end of the call that computed its last token */
    int n_tok;    /* block: bs; checkpoint: tail length */
    int refs;     /* pins */
    size_t bytes; /* data bytes, counted against the pool's budget */
    int32_t *toks;
    uint8_t *marks; /* [n_tok] 1 where a forward call starts at that position */
    void *data;
    struct pc_entry *prev, *next; /* LRU: head = most recently used */
    struct pc_entry *hnext;
} pc_entry;

typedef struct pc_pool {
    pc_entry *head, *tail;
    size_t used, budget;
    uint64_t count, evictions;
} pc_pool;

struct hy_prefix_cache {
    hy_prefix_cache_opts o;
    uint64_t k0[2], k1[2]; /* SipHash keys of the two key halves */
    pc_entry **buckets;
    size_t n_buckets, n_entries;
    pc_pool blocks, ckpts;
    hy_prefix_cache_stats st;
};

/* ---------------------------------------------------------------- hashing */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                                       \
    do {                                                                                                               \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                                                     \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                                                         \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                                                         \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                                                     \
    } while (0)

/* SipHash-2-4 over n 64-bit words (the message is the words' little-endian
 * bytes, 8n bytes long). */
static uint64_t siphash_words(uint64_t k0, uint64_t k1, const uint64_t *w, size_t n) {
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    for (size_t i = 0; i < n; i++) {
        v3 ^= w[i];
        SIPROUND;
        SIPROUND;
        v0 ^= w[i];
    }
    uint64_t b = (uint64_t)(8 * n) << 56;
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* Words: kind, parent, pos, e, n, tokens (2 per word), marks (64 per word). */
#define KEY_WORDS (6 + HY_PREFIX_MAX_BLOCK / 2 + HY_PREFIX_MAX_BLOCK / 64)

static hy_pc_key make_key(const hy_prefix_cache *pc, int kind, hy_pc_key parent, int pos, int e, const int32_t *toks,
                          const uint8_t *marks, int n) {
    uint64_t w[KEY_WORDS];
    size_t k = 0;
    w[k++] = (uint64_t)kind;
    w[k++] = parent.a;
    w[k++] = parent.b;
    w[k++] = (uint64_t)(uint32_t)pos;
    w[k++] = (uint64_t)(uint32_t)e;
    w[k++] = (uint64_t)(uint32_t)n;
    for (int i = 0; i < n; i += 2)
        w[k++] = (uint64_t)(uint32_t)toks[i] | (i + 1 < n ? (uint64_t)(uint32_t)toks[i + 1] << 32 : 0);
    for (int i = 0; i < n; i += 64) {
        uint64_t m = 0;
        for (int j = i; j < n && j < i + 64; j++)
            if (marks[j]) m |= 1ull << (j - i);
        w[k++] = m;
    }
    return (hy_pc_key){siphash_words(pc->k0[0], pc->k1[0], w, k), siphash_words(pc->k0[1], pc->k1[1], w, k)};
}

static bool key_eq(hy_pc_key x, hy_pc_key y) { return x.a == y.a && x.b == y.b; }

static const hy_pc_key k_root = {0, 0};

/* ---------------------------------------------------------------- plan */

/* Marks of positions [s, s+n): 1 where a call starts (position 0 or just
 * after a boundary). *bi walks bnd and stays valid for the next position. */
static void plan_marks(const hy_prefix_plan *pl, int s, int n, uint8_t *marks) {
    int j = 0;
    while (j < pl->nb && pl->bnd[j] < s) j++;
    for (int t = 0; t < n; t++) {
        int q = s + t;
        while (j < pl->nb && pl->bnd[j] < q) j++;
        marks[t] = (uint8_t)(q == 0 || (j < pl->nb && pl->bnd[j] == q));
    }
}

/* First boundary >= q. */
static int plan_call_end(const hy_prefix_plan *pl, int q) {
    int lo = 0, hi = pl->nb - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (pl->bnd[mid] >= q) hi = mid;
        else lo = mid + 1;
    }
    return pl->bnd[lo];
}

int hy_prefix_plan_init(const hy_prefix_cache *pc, hy_prefix_plan *plan, const int32_t *toks, int n,
                        const int32_t *bnd, int nb, hy_err *err) {
    memset(plan, 0, sizeof *plan);
    if (n < 1 || nb < 1 || bnd[nb - 1] != n)
        return hy_err_set(err, HY_E_INVALID, "prefix plan: %d boundaries must end at the prompt length %d", nb, n);
    for (int i = 0; i < nb; i++)
        if (bnd[i] < 1 || (i > 0 && bnd[i] <= bnd[i - 1]))
            return hy_err_set(err, HY_E_INVALID, "prefix plan: boundary %d = %d is not ascending inside (0, %d]", i,
                              bnd[i], n);
    plan->toks = toks;
    plan->n = n;
    plan->bnd = bnd;
    plan->nb = nb;
    plan->bs = pc->o.block_size;
    plan->n_blocks = n / plan->bs;
    if (plan->n_blocks > 0) {
        plan->block_key = malloc(sizeof(hy_pc_key) * (size_t)plan->n_blocks);
        if (!plan->block_key) return hy_err_set(err, HY_E_NOMEM, "prefix plan: out of memory");
    }
    uint8_t marks[HY_PREFIX_MAX_BLOCK];
    hy_pc_key parent = k_root;
    for (int i = 0; i < plan->n_blocks; i++) {
        int s = i * plan->bs;
        plan_marks(plan, s, plan->bs, marks);
        parent = plan->block_key[i] =
            make_key(pc, KIND_BLOCK, parent, s + plan->bs, plan_call_end(plan, s + plan->bs), toks + s, marks, plan->bs);
    }
    return HY_OK;
}

void hy_prefix_plan_release(hy_prefix_plan *plan) {
    free(plan->block_key);
    memset(plan, 0, sizeof *plan);
}

static hy_pc_key ckpt_key(const hy_prefix_cache *pc, const hy_prefix_plan *pl, int p, uint8_t *marks) {
    int nbk = p / pl->bs, s = nbk * pl->bs;
    plan_marks(pl, s, p - s, marks);
    return make_key(pc, KIND_CKPT, nbk ? pl->block_key[nbk - 1] : k_root, p, p, pl->toks + s, marks, p - s);
}

/* ---------------------------------------------------------------- table and LRU */

static size_t bucket_of(const hy_prefix_cache *pc, hy_pc_key k) { return (size_t)(k.a ^ (k.b >> 7)) & (pc->n_buckets - 1); }

static pc_entry *find(const hy_prefix_cache *pc, hy_pc_key k) {
    for (pc_entry *x = pc->buckets[bucket_of(pc, k)]; x; x = x->hnext)
        if (key_eq(x->key, k)) return x;
    return NULL;
}

static void table_grow(hy_prefix_cache *pc) {
    size_t nn = pc->n_buckets * 2;
    pc_entry **nb = calloc(nn, sizeof *nb);
    if (!nb) return; /* keep the longer chains; still correct */
    for (size_t i = 0; i < pc->n_buckets; i++) {
        pc_entry *x = pc->buckets[i];
        while (x) {
            pc_entry *nx = x->hnext;
            size_t b = (size_t)(x->key.a ^ (x->key.b >> 7)) & (nn - 1);
            x->hnext = nb[b];
            nb[b] = x;
            x = nx;
        }
    }
    free(pc->buckets);
    pc->buckets = nb;
    pc->n_buckets = nn;
}

static pc_pool *pool_of(hy_prefix_cache *pc, const pc_entry *x) { return x->kind == KIND_BLOCK ? &pc->blocks : &pc->ckpts; }

static void lru_unlink(pc_pool *p, pc_entry *x) {
    if (x->prev) x->prev->next = x->next;
    else p->head = x->next;
    if (x->next) x->next->prev = x->prev;
    else p->tail = x->prev;
    x->prev = x->next = NULL;
}

static void lru_push_head(pc_pool *p, pc_entry *x) {
    x->prev = NULL;
    x->next = p->head;
    if (p->head) p->head->prev = x;
    p->head = x;
    if (!p->tail) p->tail = x;
}

static void touch(hy_prefix_cache *pc, pc_entry *x) {
    pc_pool *p = pool_of(pc, x);
    lru_unlink(p, x);
    lru_push_head(p, x);
}

static void entry_free(pc_entry *x) {
    hy_free(x->data);
    free(x);
}

static void remove_entry(hy_prefix_cache *pc, pc_entry *x) {
    pc_entry **pp = &pc->buckets[bucket_of(pc, x->key)];
    while (*pp != x) pp = &(*pp)->hnext;
    *pp = x->hnext;
    pc->n_entries--;
    pc_pool *p = pool_of(pc, x);
    lru_unlink(p, x);
    p->used -= x->bytes;
    p->count--;
    entry_free(x);
}

/* Evicts least recently used unpinned entries of p until bytes more fit.
 * Returns false when they cannot (everything left is pinned). */
static bool make_room(hy_prefix_cache *pc, pc_pool *p, size_t bytes) {
    if (bytes > p->budget) return false;
    pc_entry *x = p->tail;
    while (p->used + bytes > p->budget && x) {
        pc_entry *prev = x->prev;
        if (x->refs == 0) {
            remove_entry(pc, x);
            p->evictions++;
        }
        x = prev;
    }
    return p->used + bytes <= p->budget;
}

static pc_entry *entry_new(hy_prefix_cache *pc, int kind, hy_pc_key key, hy_pc_key parent, int pos, int e,
                           const int32_t *toks, const uint8_t *marks, int n, size_t bytes) {
    pc_entry *x = calloc(1, sizeof *x + sizeof(int32_t) * (size_t)n + (size_t)n);
    if (!x) return NULL;
    x->data = hy_calloc_aligned(bytes ? bytes : 1, 1);
    if (!x->data) {
        free(x);
        return NULL;
    }
    x->key = key;
    x->parent = parent;
    x->kind = kind;
    x->pos = pos;
    x->e = e;
    x->n_tok = n;
    x->bytes = bytes;
    x->toks = (int32_t *)(x + 1);
    x->marks = (uint8_t *)(x->toks + n);
    if (n) {
        memcpy(x->toks, toks, sizeof(int32_t) * (size_t)n);
        memcpy(x->marks, marks, (size_t)n);
    }
    (void)pc;
    return x;
}

static void entry_insert(hy_prefix_cache *pc, pc_entry *x) {
    if (pc->n_entries >= pc->n_buckets) table_grow(pc);
    size_t b = bucket_of(pc, x->key);
    x->hnext = pc->buckets[b];
    pc->buckets[b] = x;
    pc->n_entries++;
    pc_pool *p = pool_of(pc, x);
    lru_push_head(p, x);
    p->used += x->bytes;
    p->count++;
}

/* The entry under key holds exactly this content (hash hits are verified). */
static pc_entry *find_verified(const hy_prefix_cache *pc, hy_pc_key key, int kind, hy_pc_key parent, int pos, int e,
                               const int32_t *toks, const uint8_t *marks, int n, bool *collision) {
    pc_entry *x = find(pc, key);
    if (!x) return NULL;
    if (x->kind != kind || !key_eq(x->parent, parent) || x->pos != pos || x->e != e || x->n_tok != n ||
        (n && (memcmp(x->toks, toks, sizeof(int32_t) * (size_t)n) || memcmp(x->marks, marks, (size_t)n)))) {
        if (collision) *collision = true;
        return NULL;
    }
    return x;
}

/* ---------------------------------------------------------------- create / free */

int hy_prefix_cache_create(hy_prefix_cache **out, const hy_prefix_cache_opts *o, hy_err *err) {
    *out = NULL;
    if (o->block_size < 1 || o->block_size > HY_PREFIX_MAX_BLOCK)
        return hy_err_set(err, HY_E_INVALID, "prefix cache: block size %d must be in [1, %d]", o->block_size,
                          HY_PREFIX_MAX_BLOCK);
    if (!o->kv_row_bytes || !o->state_bytes)
        return hy_err_set(err, HY_E_INVALID, "prefix cache: KV row bytes (%zu) and state bytes (%zu) must be > 0",
                          o->kv_row_bytes, o->state_bytes);
    hy_prefix_cache *pc = calloc(1, sizeof *pc);
    if (!pc) return hy_err_set(err, HY_E_NOMEM, "prefix cache: out of memory");
    pc->o = *o;
    pc->n_buckets = 1024;
    pc->buckets = calloc(pc->n_buckets, sizeof *pc->buckets);
    if (!pc->buckets) {
        free(pc);
        return hy_err_set(err, HY_E_NOMEM, "prefix cache: out of memory");
    }
    /* A random hash key per cache: keys cannot be precomputed, so nobody can
     * craft a prompt whose key collides with another user's prefix. */
    uint64_t rnd[4] = {0, 0, 0, 0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) memset(rnd, 0, sizeof rnd);
    pc->k0[0] = rnd[0] ^ o->salt;
    pc->k1[0] = rnd[1] ^ 0x9e3779b97f4a7c15ull;
    pc->k0[1] = rnd[2] ^ (o->salt * 0xbf58476d1ce4e5b9ull + 1);
    pc->k1[1] = rnd[3] ^ 0x94d049bb133111ebull;
    pc->blocks.budget = o->kv_budget;
    pc->ckpts.budget = o->state_budget;
    *out = pc;
    return HY_OK;
}

void hy_prefix_cache_free(hy_prefix_cache *pc) {
    if (!pc) return;
    for (size_t i = 0; i < pc->n_buckets; i++) {
        pc_entry *x = pc->buckets[i];
        while (x) {
            pc_entry *nx = x->hnext;
            entry_free(x);
            x = nx;
        }
    }
    free(pc->buckets);
    free(pc);
}

const hy_prefix_cache_opts *hy_prefix_cache_get_opts(const hy_prefix_cache *pc) { return &pc->o; }

void hy_prefix_cache_get_stats(const hy_prefix_cache *pc, hy_prefix_cache_stats *out) {
    *out = pc->st;
    out->blocks = pc->blocks.count;
    out->block_bytes = pc->blocks.used;
    out->block_evictions = pc->blocks.evictions;
    out->checkpoints = pc->ckpts.count;
    out->checkpoint_bytes = pc->ckpts.used;
    out->checkpoint_evictions = pc->ckpts.evictions;
}

void hy_prefix_cache_clear(hy_prefix_cache *pc) {
    for (size_t i = 0; i < pc->n_buckets; i++) {
        pc_entry **pp = &pc->buckets[i];
        while (*pp) {
            pc_entry *x = *pp;
            if (x->refs) {
                pp = &x->hnext;
                continue;
            }
            *pp = x->hnext;
            pc->n_entries--;
            pc_pool *p = pool_of(pc, x);
            lru_unlink(p, x);
            p->used -= x->bytes;
            p->count--;
            entry_free(x);
        }
    }
}

/* ---------------------------------------------------------------- lookup */

/* Blocks of the plan found (verified), from block 0 on; stops at the first miss. */
static int block_hits(const hy_prefix_cache *pc, const hy_prefix_plan *pl, int max_blocks, pc_entry **found) {
    uint8_t marks[HY_PREFIX_MAX_BLOCK];
    int i = 0;
    for (; i < max_blocks; i++) {
        int s = i * pl->bs;
        plan_marks(pl, s, pl->bs, marks);
        pc_entry *x = find_verified(pc, pl->block_key[i], KIND_BLOCK, i ? pl->block_key[i - 1] : k_root, s + pl->bs,
                                    plan_call_end(pl, s + pl->bs), pl->toks + s, marks, pl->bs, NULL);
        if (!x) break;
        if (found) found[i] = x;
    }
    return i;
}

int hy_prefix_cache_lookup(hy_prefix_cache *pc, const hy_prefix_plan *pl, int max_pos, hy_prefix_match *m, hy_err *err) {
    memset(m, 0, sizeof *m);
    pc->st.queries++;
    pc->st.query_tokens += (uint64_t)pl->n;
    if (max_pos > pl->n) max_pos = pl->n;
    int max_blocks = max_pos / pl->bs;
    pc_entry **found = NULL;
    if (max_blocks > 0) {
        found = malloc(sizeof *found * (size_t)max_blocks);
        if (!found) return hy_err_set(err, HY_E_NOMEM, "prefix cache: out of memory");
    }
    int hits = block_hits(pc, pl, max_blocks, found);
    uint8_t marks[HY_PREFIX_MAX_BLOCK];
    pc_entry *ck = NULL;
    for (int j = pl->nb - 1; j >= 0 && !ck; j--) {
        int p = pl->bnd[j];
        if (p > max_pos || p / pl->bs > hits) continue;
        int nbk = p / pl->bs, s = nbk * pl->bs;
        hy_pc_key key = ckpt_key(pc, pl, p, marks);
        ck = find_verified(pc, key, KIND_CKPT, nbk ? pl->block_key[nbk - 1] : k_root, p, p, pl->toks + s, marks,
                           p - s, NULL);
    }
    if (!ck) {
        free(found);
        return HY_OK;
    }
    const int nbk = ck->pos / pl->bs;
    const void **data = malloc(sizeof(void *) * (size_t)(nbk ? nbk : 1));
    if (!data) {
        free(found);
        return hy_err_set(err, HY_E_NOMEM, "prefix cache: out of memory");
    }
    for (int i = 0; i < nbk; i++) data[i] = found[i]->data;
    m->pos = ck->pos;
    m->n_blocks = nbk;
    m->n_tail = ck->n_tok;
    m->state = ck->data;
    m->tail_kv = (const char *)ck->data + pc->o.state_bytes;
    m->ckpt_ = ck;
    m->blocks_ = (void **)found;
    m->block_data = data;
    ck->refs++;
    touch(pc, ck);
    for (int i = nbk - 1; i >= 0; i--) { /* deepest first: the root ends most recent */
        found[i]->refs++;
        touch(pc, found[i]);
    }
    pc->st.hits++;
    pc->st.hit_tokens += (uint64_t)m->pos;
    return HY_OK;
}

void hy_prefix_cache_discard(hy_prefix_cache *pc, hy_prefix_match *m) {
    if (m->pos > 0) { /* the lookup counted a hit that was not used */
        pc->st.hits--;
        pc->st.hit_tokens -= (uint64_t)m->pos;
    }
    hy_prefix_cache_release(pc, m);
}

void hy_prefix_cache_release(hy_prefix_cache *pc, hy_prefix_match *m) {
    if (m->ckpt_) ((pc_entry *)m->ckpt_)->refs--;
    for (int i = 0; m->blocks_ && i < m->n_blocks; i++) ((pc_entry *)m->blocks_[i])->refs--;
    free(m->blocks_);
    free((void *)m->block_data);
    (void)pc;
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- store */

int hy_prefix_cache_store(hy_prefix_cache *pc, const hy_prefix_plan *pl, int p, const hy_prefix_source *src,
                          hy_err *err) {
    bool is_bound = false;
    for (int j = 0; j < pl->nb; j++) is_bound |= pl->bnd[j] == p;
    if (!is_bound) return hy_err_set(err, HY_E_INVALID, "prefix cache: position %d is not a call boundary", p);
    const int bs = pl->bs, nbk = p / bs;
    const size_t blk_bytes = pc->o.kv_row_bytes * (size_t)bs;
    pc_entry **chain = NULL;
    if (nbk > 0) {
        chain = calloc((size_t)nbk, sizeof *chain);
        if (!chain) return hy_err_set(err, HY_E_NOMEM, "prefix cache: out of memory");
    }
    uint8_t marks[HY_PREFIX_MAX_BLOCK];
    int rc = HY_OK, have = 0;
    for (int i = 0; i < nbk; i++, have++) {
        int s = i * bs, e = plan_call_end(pl, s + bs);
        hy_pc_key parent = i ? pl->block_key[i - 1] : k_root;
        plan_marks(pl, s, bs, marks);
        bool coll = false;
        pc_entry *x = find_verified(pc, pl->block_key[i], KIND_BLOCK, parent, s + bs, e, pl->toks + s, marks, bs, &coll);
        if (!x) {
            if (coll || !make_room(pc, &pc->blocks, blk_bytes)) break;
            x = entry_new(pc, KIND_BLOCK, pl->block_key[i], parent, s + bs, e, pl->toks + s, marks, bs, blk_bytes);
            if (!x) break; /* out of memory: cache less, never fail the request */
            if ((rc = src->kv_read(src->ctx, s, bs, x->data, err))) {
                entry_free(x);
                break;
            }
            entry_insert(pc, x);
        }
        x->refs++; /* pinned while the rest of the chain is stored */
        chain[i] = x;
    }
    if (!rc && have == nbk) {
        int s = nbk * bs;
        hy_pc_key key = ckpt_key(pc, pl, p, marks);
        hy_pc_key parent = nbk ? pl->block_key[nbk - 1] : k_root;
        bool coll = false;
        pc_entry *ck = find_verified(pc, key, KIND_CKPT, parent, p, p, pl->toks + s, marks, p - s, &coll);
        if (ck) {
            touch(pc, ck);
        } else if (!coll) {
            size_t bytes = pc->o.state_bytes + pc->o.kv_row_bytes * (size_t)(p - s);
            if (make_room(pc, &pc->ckpts, bytes) &&
                (ck = entry_new(pc, KIND_CKPT, key, parent, p, p, pl->toks + s, marks, p - s, bytes))) {
                src->state_read(src->ctx, ck->data);
                if (p > s) rc = src->kv_read(src->ctx, s, p - s, (char *)ck->data + pc->o.state_bytes, err);
                if (rc) entry_free(ck);
                else {
                    entry_insert(pc, ck);
                    pc->st.checkpoints_stored++;
                }
            }
        }
    }
    for (int i = have - 1; i >= 0; i--) {
        chain[i]->refs--;
        touch(pc, chain[i]);
    }
    free(chain);
    return rc;
}
