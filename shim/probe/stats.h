/* Statistics of a cell's repetition times. */
#ifndef PFSPROBE_STATS_H
#define PFSPROBE_STATS_H

typedef struct {
    double median, min, max, iqr;
} probe_stats;

/* Quantiles interpolate linearly between order statistics (numpy's default), so the Python side computes
 * the same numbers from `times`. */
double stats_quantile(const double *sorted, int n, double q);
probe_stats stats_of(const double *times, int n);

#endif
