/*
 * What pmx_counters_read costs from C, in ns per call, beside the bare
 * read(2) of the same 4-event software group opened directly with
 * perf_event_open (task-clock, page-faults, context-switches,
 * cpu-migrations: the group of `cargo run --release -p pmx --example
 * bench_regions`, whose read_into line is the Rust figure). Measured in
 * turn, round after round, on the thread's CPU clock; each ns figure is
 * the median over 41 rounds, the percentage the median of each round's
 * ratio to the same round's bare read (the system call's cost drifts).
 * Usage: capi_read [N]    (bench/capi.sh builds and runs it)
 */
#define _GNU_SOURCE
#include <pmx.h>

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

static int open_group(void)
{
    int leader = -1;
    for (int i = 0; i < 4; i++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = (unsigned long long[]){ PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS,
                                           PERF_COUNT_SW_CONTEXT_SWITCHES,
                                           PERF_COUNT_SW_CPU_MIGRATIONS }[i];
        a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
                        PERF_FORMAT_TOTAL_TIME_RUNNING;
        a.exclude_kernel = 0;
        int fd = syscall(SYS_perf_event_open, &a, 0, -1, leader, 0);
        if (fd < 0) {
            perror("perf_event_open");
            exit(1);
        }
        if (leader < 0)
            leader = fd;
    }
    ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
    return leader;
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
    int fd = open_group();
    pmx_count v[4];
    unsigned long long buf[3 + 2 * 4];
    double bare[RUNS], capi[RUNS], ratio[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t = now_ns();
        for (long i = 0; i < n; i++)
            if (read(fd, buf, sizeof buf) <= 0)
                return 1;
        bare[r] = (now_ns() - t) / n;
        t = now_ns();
        for (long i = 0; i < n; i++)
            if (pmx_counters_read(c, v, 4) != 4)
                return 1;
        capi[r] = (now_ns() - t) / n;
        ratio[r] = capi[r] / bare[r] - 1;
    }
    qsort(bare, RUNS, sizeof bare[0], cmp);
    qsort(capi, RUNS, sizeof capi[0], cmp);
    qsort(ratio, RUNS, sizeof ratio[0], cmp);
    printf("bare read(2) of the group (C): %.0f ns\n", bare[RUNS / 2]);
    printf("pmx_counters_read (C, 4 events): %.0f ns  (%+.1f%% vs bare read)\n", capi[RUNS / 2],
           100 * ratio[RUNS / 2]);
    pmx_counters_close(c);
    close(fd);
    return 0;
}
