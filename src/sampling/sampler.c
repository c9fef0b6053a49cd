/*
 * Sampler implementation (contract in sampler.h). Cost per call is one pass
 * over the vocabulary for the penalised copy plus:
 *   - top-k: a size-k heap selection, then work on k candidates only;
 *   - top-p without top-k: one exp pass for the normaliser, then a 1024-entry
 *     heap; a full sort only when those 1024 do not reach top_p;
 *   - plain temperature / min-p: exp pass, candidates in id order, no sort.
 * Sums are in double so the cumulative walk does not depend on summation
 * order more than necessary; the order itself is fixed (see sampler.h).
 */
#include "sampling/sampler.h"

#include "sampling/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    float x;
    int32_t id;
} cand;

struct hy_sampler {
    int n_vocab;
    float *work;  /* [n_vocab] penalised logits */
    cand *cands;  /* [n_vocab] */
    int32_t *ids; /* [n_vocab] candidate ids in draw order */
    double *prob; /* [n_vocab] candidate probabilities in draw order */
};

#define TOPP_FIRST_TRY 1024

void hy_sampling_params_default(hy_sampling_params *p) {
    memset(p, 0, sizeof *p);
    p->temperature = 1.0f;
    p->top_p = 1.0f;
    p->top_k = 0;
    p->min_p = 0.0f;
    p->repetition_penalty = 1.0f;
}

int hy_sampler_create(hy_sampler **out, int n_vocab, hy_err *err) {
    *out = NULL;
    if (n_vocab <= 0) return hy_err_set(err, HY_E_INVALID, "sampler: n_vocab must be > 0, got %d", n_vocab);
    hy_sampler *s = calloc(1, sizeof *s);
    if (!s) return hy_err_set(err, HY_E_NOMEM, "sampler: out of memory");
    s->n_vocab = n_vocab;
    s->work = malloc(sizeof(float) * (size_t)n_vocab);
    s->cands = malloc(sizeof(cand) * (size_t)n_vocab);
    s->ids = malloc(sizeof(int32_t) * (size_t)n_vocab);
    s->prob = malloc(sizeof(double) * (size_t)n_vocab);
    if (!s->work || !s->cands || !s->ids || !s->prob) {
        hy_sampler_free(s);
        return hy_err_set(err, HY_E_NOMEM, "sampler: cannot allocate scratch for %d logits", n_vocab);
    }
    *out = s;
    return 0;
}

void hy_sampler_free(hy_sampler *s) {
    if (!s) return;
    free(s->work);
    free(s->cands);
    free(s->ids);
    free(s->prob);
    free(s);
}

/* a ranks before b: larger value first, then smaller id. */
static inline int better(cand a, cand b) { return a.x > b.x || (a.x == b.x && a.id < b.id); }

static int cmp_cand(const void *pa, const void *pb) {
    cand a = *(const cand *)pa, b = *(const cand *)pb;
    if (better(a, b)) return -1;
    if (better(b, a)) return 1;
    return 0;
}

/* Min-heap on "better": the root is the worst of the kept k. */
static void sift_down(cand *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && better(h[w], h[l])) w = l;
        if (r < n && better(h[w], h[r])) w = r;
        if (w == i) return;
        cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void sift_up(cand *h, int i) {
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!better(h[p], h[i])) return;
        cand t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

/* Selects the k best of x[0..n) into out[0..k), sorted best first. */
static int select_top(const float *x, int n, int k, cand *out) {
    if (k > n) k = n;
    int m = 0;
    for (int i = 0; i < n; i++) {
        cand c = {x[i], i};
        if (m < k) {
            out[m] = c;
            sift_up(out, m);
            m++;
        } else if (better(c, out[0])) {
            out[0] = c;
            sift_down(out, m, 0);
        }
    }
    qsort(out, (size_t)m, sizeof(cand), cmp_cand);
    return m;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Copies logits, replaces NaN by -inf (a broken row must not poison the draw),
 * adds the logit bias and applies the penalties. */
static void penalised_copy(hy_sampler *s, const float *logits, int n, const hy_sampling_params *p,
                           const hy_token_counts *tc) {
    for (int i = 0; i < n; i++) s->work[i] = isnan(logits[i]) ? -INFINITY : logits[i];
    for (int i = 0; i < p->n_bias; i++)
        if (p->bias_ids[i] >= 0 && p->bias_ids[i] < n) s->work[p->bias_ids[i]] += p->bias_values[i];
    if (tc) hy_penalties_apply(s->work, n, tc, p->repetition_penalty, p->frequency_penalty, p->presence_penalty);
}

/* Builds the distribution from s->work; returns the candidate count. */
static int build_distribution(hy_sampler *s, int n, const hy_sampling_params *p) {
    float *x = s->work;
    if (p->temperature <= 0.0f || p->top_k == 1) {
        s->ids[0] = argmax(x, n);
        s->prob[0] = 1.0;
        return 1;
    }
    const double inv_t = 1.0 / (double)p->temperature;
    const float xmax = x[argmax(x, n)];
    if (xmax == -INFINITY) { /* nothing is possible; fall back to id 0 deterministically */
        s->ids[0] = 0;
        s->prob[0] = 1.0;
        return 1;
    }
    int m;            /* candidates */
    bool sorted;      /* ids[] in probability order */
    double z = 0.0;   /* normaliser of prob[0..m) before top-p / min-p */
    const bool want_top_p = p->top_p > 0.0f && p->top_p < 1.0f;
    if (p->top_k > 0 && p->top_k < n) {
        m = select_top(x, n, p->top_k, s->cands);
        for (int i = 0; i < m; i++) {
            s->ids[i] = s->cands[i].id;
            s->prob[i] = exp(((double)s->cands[i].x - xmax) * inv_t);
            z += s->prob[i];
        }
        sorted = true;
    } else if (want_top_p) {
        for (int i = 0; i < n; i++) z += exp(((double)x[i] - xmax) * inv_t);
        m = select_top(x, n, TOPP_FIRST_TRY, s->cands);
        double mass = 0.0;
        for (int i = 0; i < m; i++) mass += exp(((double)s->cands[i].x - xmax) * inv_t);
        if (mass < (double)p->top_p * z && m < n) {
            for (int i = 0; i < n; i++) s->cands[i] = (cand){x[i], i};
            qsort(s->cands, (size_t)n, sizeof(cand), cmp_cand);
            m = n;
        }
        for (int i = 0; i < m; i++) {
            s->ids[i] = s->cands[i].id;
            s->prob[i] = exp(((double)s->cands[i].x - xmax) * inv_t);
        }
        sorted = true;
    } else {
        for (int i = 0; i < n; i++) {
            s->ids[i] = i;
            s->prob[i] = exp(((double)x[i] - xmax) * inv_t);
            z += s->prob[i];
        }
        m = n;
        sorted = false;
    }
    if (want_top_p && sorted) {
        /* Keep the shortest prefix whose mass reaches top_p (at least one). */
        const double lim = (double)p->top_p * z;
        double c = 0.0;
        int keep = m;
        for (int i = 0; i < m; i++) {
            c += s->prob[i];
            if (c >= lim) {
                keep = i + 1;
                break;
            }
        }
        m = keep;
    }
    if (p->min_p > 0.0f) {
        /* Relative to the most likely candidate; ratios survive renormalisation. */
        double pmax = 0.0;
        for (int i = 0; i < m; i++)
            if (s->prob[i] > pmax) pmax = s->prob[i];
        const double thr = (double)p->min_p * pmax;
        int w = 0;
        for (int i = 0; i < m; i++) {
            if (s->prob[i] >= thr) {
                s->ids[w] = s->ids[i];
                s->prob[w] = s->prob[i];
                w++;
            }
        }
        m = w;
    }
    double sum = 0.0;
    for (int i = 0; i < m; i++) sum += s->prob[i];
    for (int i = 0; i < m; i++) s->prob[i] /= sum;
    return m;
}

static void fill_logprobs(hy_sampler *s, const float *logits, int n, int32_t tok, hy_logprobs *lp, int n_top) {
    /* Raw logits (NaN treated as -inf as in the draw). */
    double m = -INFINITY;
    for (int i = 0; i < n; i++)
        if (!isnan(logits[i]) && logits[i] > m) m = logits[i];
    double z = 0.0;
    for (int i = 0; i < n; i++)
        if (!isnan(logits[i])) z += exp((double)logits[i] - m);
    const double lse = m + log(z);
    lp->token = tok;
    lp->logprob = isnan(logits[tok]) ? -INFINITY : (float)((double)logits[tok] - lse);
    if (n_top < 0) n_top = 0;
    if (n_top > HY_MAX_TOP_LOGPROBS) n_top = HY_MAX_TOP_LOGPROBS;
    lp->n_top = 0;
    if (n_top == 0) return;
    for (int i = 0; i < n; i++) s->work[i] = isnan(logits[i]) ? -INFINITY : logits[i];
    int k = select_top(s->work, n, n_top, s->cands);
    for (int i = 0; i < k; i++) {
        lp->top_ids[i] = s->cands[i].id;
        lp->top_logprobs[i] = (float)((double)s->cands[i].x - lse);
    }
    lp->n_top = k;
}

int hy_sampler_distribution(hy_sampler *s, const float *logits, int n_valid, const hy_sampling_params *p,
                            const hy_token_counts *tc, const int32_t **ids, const double **probs) {
    HY_ASSERT(n_valid > 0 && n_valid <= s->n_vocab);
    penalised_copy(s, logits, n_valid, p, tc);
    int m = build_distribution(s, n_valid, p);
    *ids = s->ids;
    *probs = s->prob;
    return m;
}

int32_t hy_sampler_sample(hy_sampler *s, const float *logits, int n_valid, const hy_sampling_params *p,
                          const hy_token_counts *tc, uint64_t stream, uint64_t step, hy_logprobs *lp,
                          int n_top) {
    HY_ASSERT(n_valid > 0 && n_valid <= s->n_vocab);
    penalised_copy(s, logits, n_valid, p, tc);
    int m = build_distribution(s, n_valid, p);
    int32_t tok = s->ids[0];
    if (m > 1) {
        const double u = hy_rng_uniform(p->seed, stream, step);
        double c = 0.0;
        tok = s->ids[m - 1]; /* rounding: u close to 1 lands on the last candidate */
        for (int i = 0; i < m; i++) {
            c += s->prob[i];
            if (u < c) {
                tok = s->ids[i];
                break;
            }
        }
    }
    if (lp) fill_logprobs(s, logits, n_valid, tok, lp, n_top);
    return tok;
}
