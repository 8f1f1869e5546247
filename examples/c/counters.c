/*
 * Counters a program reads itself: touch N fresh pages (each first touch
 * is one minor page fault) between enable and disable, and print what
 * was counted. Usage: counters [N] (default 100).
 *
 * Prints one line per event:
 *   <name> value=<raw> enabled=<ns> running=<ns> scaled=<value*enabled/running>
 *
 * Build: cc -I include examples/c/counters.c target/release/libpmx.a -lpthread -ldl -lm
 *    or: cc examples/c/counters.c $(pkg-config --cflags --libs pmx)
 */
#define _GNU_SOURCE
#include <pmx.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static void touch_pages(long n)
{
    long page = 4096;
    char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, n * page, MADV_NOHUGEPAGE);
    for (long i = 0; i < n; i++)
        ((volatile char *)p)[i * page] = 1;
    munmap(p, n * page);
}

/* Count page-faults and task-clock around touching n pages; print when
 * asked. */
static int count(long n, int print)
{
    /* pid 0, cpu -1: the calling thread, wherever it runs. */
    pmx_counters *c = pmx_counters_open("page-faults,task-clock", 0, -1);
    if (!c) {
        fprintf(stderr, "pmx_counters_open: %s\n", pmx_last_error());
        return 1;
    }
    int k = pmx_counters_count(c);
    pmx_count v[8];
    if (pmx_counters_enable(c) != 0 || (touch_pages(n), 0) ||
        pmx_counters_disable(c) != 0 || pmx_counters_read(c, v, 8) != k) {
        fprintf(stderr, "counting: %s\n", pmx_last_error());
        pmx_counters_close(c);
        return 1;
    }
    for (int i = 0; print && i < k; i++)
        printf("%s value=%llu enabled=%llu running=%llu scaled=%.0f\n",
               pmx_counters_name(c, i), (unsigned long long)v[i].value,
               (unsigned long long)v[i].enabled,
               (unsigned long long)v[i].running, v[i].scaled);
    /* Reset: the values start again from zero. */
    pmx_counters_reset(c);
    pmx_counters_read(c, v, 8);
    if (print)
        printf("after reset: %s value=%llu\n", pmx_counters_name(c, 0),
               (unsigned long long)v[0].value);
    pmx_counters_close(c);
    return 0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100;
    /* Everything once before, so the code and stack pages the calls need
     * are there (a first touch of one is a page fault too). */
    return count(1, 0) || count(n, 1);
}
