#include "stats.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_quantile(const double *sorted, int n, double q)
{
    if (n <= 0)
        return 0.0;
    double pos = q * (n - 1);
    int lo = (int)pos;
    if (lo >= n - 1)
        return sorted[n - 1];
    double frac = pos - lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

probe_stats stats_of(const double *times, int n)
{
    probe_stats st = {0, 0, 0, 0};
    if (n <= 0)
        return st;
    double *s = malloc(sizeof(double) * (size_t)n);
    if (!s)
        return st;
    memcpy(s, times, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    st.min = s[0];
    st.max = s[n - 1];
    st.median = stats_quantile(s, n, 0.5);
    st.iqr = stats_quantile(s, n, 0.75) - stats_quantile(s, n, 0.25);
    free(s);
    return st;
}
