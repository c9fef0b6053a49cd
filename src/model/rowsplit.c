/* Work-stealing row split of the decode matmuls (see rowsplit.h). */
#include "model/rowsplit.h"

#include "base/alloc.h"
#include "base/threadpool.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* one word per cache line: owners update theirs every piece */
typedef struct part {
    _Atomic uint64_t w;
    unsigned char pad[56];
} part;

typedef struct counter {
    unsigned long long n; /* dynamic calls this thread has begun in the current step */
    unsigned char pad[56];
} counter;

struct hy_rowsplit {
    int nth;
    part *parts;      /* [HY_ROWSPLIT_RING][nth] */
    counter *calls;   /* [nth] */
};

/* word = gen (16 bits) | front (24) | back (24); gen 0 marks a word no call has used */
static uint64_t pack(unsigned gen, int f, int b) { return (uint64_t)gen << 48 | (uint64_t)f << 24 | (uint64_t)b; }
static unsigned w_gen(uint64_t v) { return (unsigned)(v >> 48); }
static int w_front(uint64_t v) { return (int)(v >> 24 & 0xffffff); }
static int w_back(uint64_t v) { return (int)(v & 0xffffff); }

int hy_rowsplit_create(hy_rowsplit **out, int nth, hy_err *err) {
    *out = NULL;
    hy_rowsplit *s = calloc(1, sizeof *s);
    if (!s) return hy_err_set(err, HY_E_NOMEM, "row split: out of memory");
    s->nth = nth;
    s->parts = hy_calloc_aligned((size_t)HY_ROWSPLIT_RING * (size_t)nth, sizeof(part));
    s->calls = hy_calloc_aligned((size_t)nth, sizeof(counter));
    if (!s->parts || !s->calls) {
        hy_rowsplit_free(s);
        return hy_err_set(err, HY_E_NOMEM, "row split: out of memory for %d threads", nth);
    }
    hy_rowsplit_reset(s);
    *out = s;
    return HY_OK;
}

void hy_rowsplit_free(hy_rowsplit *s) {
    if (!s) return;
    hy_free(s->parts);
    hy_free(s->calls);
    free(s);
}

void hy_rowsplit_reset(hy_rowsplit *s) {
    for (size_t i = 0; i < (size_t)HY_ROWSPLIT_RING * (size_t)s->nth; i++) atomic_store(&s->parts[i].w, 0);
    for (int i = 0; i < s->nth; i++) s->calls[i].n = 0;
}

void hy_rowsplit_begin(hy_rowsplit *s, int rows, int align, int piece, int ith, hy_rowsplit_call *call) {
    HY_ASSERT(rows >= 0 && rows <= HY_ROWSPLIT_MAX_ROWS && align >= 1 && piece >= align && piece % align == 0);
    const unsigned long long n = s->calls[ith].n++;
    call->rows = rows;
    call->align = align;
    call->piece = piece;
    call->slot = (int)(n % HY_ROWSPLIT_RING);
    call->gen = (unsigned)(n % 0xffff) + 1;
}

void hy_rowsplit_static_part(int rows, int align, int ith, int nth, int *r0, int *r1) {
    int b0, b1;
    hy_split_range((rows + align - 1) / align, ith, nth, &b0, &b1);
    *r0 = b0 * align;
    *r1 = b1 * align < rows ? b1 * align : rows;
}

static _Atomic uint64_t *word(hy_rowsplit *s, const hy_rowsplit_call *c, int i) {
    return &s->parts[(size_t)c->slot * (size_t)s->nth + (size_t)i].w;
}

/* Thread i's part of the call, initialised to its static share on first touch. */
static uint64_t part_load(hy_rowsplit *s, const hy_rowsplit_call *c, int i) {
    _Atomic uint64_t *w = word(s, c, i);
    uint64_t v = atomic_load(w);
    if (w_gen(v) == c->gen) return v;
    int f, b;
    hy_rowsplit_static_part(c->rows, c->align, i, s->nth, &f, &b);
    const uint64_t init = pack(c->gen, f, b);
    if (atomic_compare_exchange_strong(w, &v, init)) return init;
    HY_ASSERT(w_gen(v) == c->gen); /* another thread initialised it first */
    return v;
}

bool hy_rowsplit_next(hy_rowsplit *s, hy_rowsplit_call *c, int ith, int *o0, int *o1) {
    for (;;) {
        /* the front of the own part */
        uint64_t v = part_load(s, c, ith);
        while (w_front(v) < w_back(v)) {
            const int f = w_front(v), b = w_back(v);
            /* a quarter of what is left, between 1 and 8 pieces: long reads while there is
             * much to do, short ones at the end where a thief may come */
            int len = ((b - f) / 4 + c->align - 1) / c->align * c->align;
            len = len < c->piece ? c->piece : len > 8 * c->piece ? 8 * c->piece : len;
            const int e = f + len < b ? f + len : b;
            if (atomic_compare_exchange_weak(word(s, c, ith), &v, pack(c->gen, e, b))) {
                *o0 = f;
                *o1 = e;
                return true;
            }
        }
        /* used up: the far half of the largest part left becomes this thread's part */
        bool stole = false;
        while (!stole) {
            int best = -1, best_rem = 0;
            uint64_t bv = 0;
            for (int j = 0; j < s->nth; j++) {
                if (j == ith) continue;
                const uint64_t u = part_load(s, c, j);
                if (w_back(u) - w_front(u) > best_rem) best = j, best_rem = w_back(u) - w_front(u), bv = u;
            }
            if (best < 0) return false;
            const int f = w_front(bv), b = w_back(bv);
            const int keep = (b - f + c->align - 1) / c->align / 2; /* whole blocks left to the owner */
            const int m = f + keep * c->align;
            if (atomic_compare_exchange_strong(word(s, c, best), &bv, pack(c->gen, f, m))) {
                /* the own word is empty, so no other thread writes it now */
                atomic_store(word(s, c, ith), pack(c->gen, m, b));
                stole = true;
            }
        }
    }
}
