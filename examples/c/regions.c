/*
 * Two regions with known work, on two threads: "alloc" touches A fresh
 * pages and "fill" B fresh pages (each first touch is one minor page
 * fault), plus "outer" around both. Usage: regions [A B]
 * (default 64 16); the second thread does twice as many.
 *
 * Prints one line per region of the main thread, from pmx_region_get:
 *   region <name> calls <n> <event>=<value> ...
 * and, with PMX_DISABLE, just "disabled".
 *
 * Build: cc -I include examples/c/regions.c target/debug/libpmx.a -lpthread -ldl -lm
 */
#define _GNU_SOURCE
#include <pmx.h>

#include <pthread.h>
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

#ifndef PMX_DISABLE
static void check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", what, pmx_last_error());
        exit(1);
    }
}
#define CHECK(call, what) check(call, what)
#else
/* The calls are ((void)0): nothing to check. */
#define CHECK(call, what) call
#endif

struct work { long a, b; };

static void *run(void *arg)
{
    struct work *w = arg;
    CHECK(pmx_thread_init(), "pmx_thread_init");
    CHECK(pmx_region_begin("outer"), "begin outer");
    CHECK(pmx_region_begin("alloc"), "begin alloc");
    touch_pages(w->a);
    CHECK(pmx_region_end("alloc"), "end alloc");
    CHECK(pmx_region_begin("fill"), "begin fill");
    touch_pages(w->b);
    CHECK(pmx_region_end("fill"), "end fill");
    CHECK(pmx_region_end("outer"), "end outer");
    return NULL;
}

int main(int argc, char **argv)
{
    struct work mine = { 64, 16 };
    if (argc == 3) {
        mine.a = atol(argv[1]);
        mine.b = atol(argv[2]);
    }
    struct work other = { 2 * mine.a, 2 * mine.b };
    CHECK(pmx_init(), "pmx_init");
    pthread_t t;
    if (pthread_create(&t, NULL, run, &other) != 0) {
        perror("pthread_create");
        return 1;
    }
    pthread_join(t, NULL);
    run(&mine);
#ifndef PMX_DISABLE
    const char *names[] = { "alloc", "fill", "outer" };
    for (int r = 0; r < 3; r++) {
        double values[16];
        int n = 16;
        long long calls = 0;
        CHECK(pmx_region_get(names[r], &n, values, NULL, &calls), "pmx_region_get");
        printf("region %s calls %lld", names[r], calls);
        for (int i = 0; i < n; i++)
            printf(" %s=%.0f", pmx_event_name(i), values[i]);
        printf("\n");
    }
    /* An end without a begin is reported, not fatal. */
    if (pmx_region_end("never") != -1 || pmx_last_error() == NULL) {
        fprintf(stderr, "expected an error\n");
        return 1;
    }
    const char *out = getenv("PMX_TEST_RESULTS");
    if (out)
        CHECK(pmx_write_results(out), "pmx_write_results");
#else
    printf("disabled\n");
#endif
    CHECK(pmx_finalize(), "pmx_finalize");
    return 0;
}
