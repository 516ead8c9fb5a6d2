/*
 * synthetic.h — the synthetic sparse logistic-regression data and its loss,
 * shared by minibatch.c and logreg.c (header-only, like example.h, which it
 * includes; the same requirements apply).
 *
 * An example has 10..30 distinct binary features drawn from a Zipf(1.1)
 * distribution over F feature ranks (power-law feature frequencies), and its
 * label is drawn from sigmoid(0.5 * sum of the true weights of its features),
 * the true weight of feature k being a fixed hash of k in [-3, 3]. Everything
 * is a function of the rng stream, so a seed gives the same data everywhere.
 */
#ifndef KYLIX_SYNTHETIC_H
#define KYLIX_SYNTHETIC_H

#include "example.h"

#include <math.h>
#include <stdint.h>

/* The fixed true weight of feature k, in [-3, 3]. salt picks the hidden model;
   each example keeps its own salt so that its data (and output) stay as they
   were. */
static inline double true_weight(int64_t k, uint64_t salt) {
  return ((mix64((uint64_t)k ^ salt) >> 11) * 0x1.0p-53 - 0.5) * 6.0;
}

/* The feature id of Zipf rank k, (k * 0x9E3779B1 + 12345) mod F: spreads the
   popular ranks over the id space, so popular features are not small numbers. */
static inline int32_t feature_id(int64_t k, int64_t F) {
  return (int32_t)(((uint64_t)k * UINT64_C(0x9E3779B1) + 12345) % (uint64_t)F);
}

static inline double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* log-loss of predicting p = sigmoid(z) for label y, computed stably */
static inline double logloss(double z, int y) {
  double m = y ? -z : z; /* loss = log(1 + exp(m)) */
  return m > 0 ? m + log1p(exp(-m)) : log1p(exp(m));
}

typedef struct {
  long n;
  int64_t *ptr;  /* [n+1] */
  int32_t *feat; /* features of example e: feat[ptr[e] .. ptr[e+1]) */
  char *label;   /* [n] 0 or 1 */
} examples;

/* The Zipf(1.1) sampler over feature ranks 0..F-1: prefix sums of the
   weights, searched with a binary search in make_examples. Caller frees. */
static inline double *zipf_cum(int64_t F) {
  double *cum = xmalloc((size_t)F * sizeof(double));
  double acc = 0;
  for (int64_t k = 0; k < F; k++) cum[k] = acc += pow((double)(k + 1), -1.1);
  return cum;
}

/* n examples from r; cum is the Zipf(1.1) prefix sum over F feature ranks
   (zipf_cum). With spread_ids the stored features are feature_id(rank, F),
   else the Zipf ranks themselves; the true weights (with salt) are those of
   the stored features. */
static inline void make_examples(examples *x, long n, rng *r, const double *cum, int64_t F,
                                 uint64_t salt, int spread_ids) {
  const double total = cum[F - 1];
  x->n = n;
  x->ptr = xmalloc((size_t)(n + 1) * sizeof(int64_t));
  x->feat = xmalloc((size_t)n * 30 * sizeof(int32_t));
  x->label = xmalloc((size_t)n);
  x->ptr[0] = 0;
  for (long e = 0; e < n; e++) {
    int nnz = 10 + (int)(rng_next(r) % 21);
    int64_t at = x->ptr[e];
    double z = 0;
    for (int j = 0; j < nnz; j++) {
      int32_t k;
      int dup;
      do { /* distinct features within an example */
        double u = rng_unif(r) * total;
        int64_t lo = 0, hi = F - 1;
        while (lo < hi) {
          int64_t mid = (lo + hi) / 2;
          if (cum[mid] < u) lo = mid + 1; else hi = mid;
        }
        k = spread_ids ? feature_id(lo, F) : (int32_t)lo;
        dup = 0;
        for (int64_t q = x->ptr[e]; q < at; q++) dup |= x->feat[q] == k;
      } while (dup);
      x->feat[at++] = k;
      z += 0.5 * true_weight(k, salt);
    }
    x->ptr[e + 1] = at;
    x->label[e] = rng_unif(r) < sigmoid(z);
  }
}

/* sum of log-losses of x under the model w (indexed by stored feature) */
static inline double loss_sum(const examples *x, const double *w) {
  double s = 0;
  for (long e = 0; e < x->n; e++) {
    double z = 0;
    for (int64_t q = x->ptr[e]; q < x->ptr[e + 1]; q++) z += w[x->feat[q]];
    s += logloss(z, x->label[e]);
  }
  return s;
}

#endif /* KYLIX_SYNTHETIC_H */
