/*
 * What pmx_counters_read costs from C, in ns per call: the same 4-event
 * software group as `cargo run --release -p pmx --example bench_regions`
 * (whose read_into line is the Rust figure to compare with), timed with
 * the thread's CPU clock, the median over 41 rounds of N reads.
 * Usage: capi_read [N]    (bench/capi.sh builds and runs it)
 */
#define _GNU_SOURCE
#include <pmx.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    enum { RUNS = 41 };
    pmx_counters *c = pmx_counters_open(
        "task-clock,page-faults,context-switches,cpu-migrations", 0, -1);
    if (!c) {
        fprintf(stderr, "%s\n", pmx_last_error());
        return 1;
    }
    pmx_counters_enable(c);
    pmx_count v[4];
    double per[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t = now_ns();
        for (long i = 0; i < n; i++)
            if (pmx_counters_read(c, v, 4) != 4)
                return 1;
        per[r] = (now_ns() - t) / n;
    }
    qsort(per, RUNS, sizeof per[0], cmp);
    printf("pmx_counters_read (C, 4 events): %.0f ns\n", per[RUNS / 2]);
    pmx_counters_close(c);
    return 0;
}
