/*
 * The periodic recorder: cpu-clock on every online CPU read every
 * INTERVAL ms, N samples, stored as deltas (PMX_DELTA); a second
 * cpu-clock handle goes through a C transform callback that stores the
 * raw value and checks it gets the raw values (each call's `prev` is the
 * previous call's `now`). Writes the CSV to PATH.
 * Usage: recorder N INTERVAL_MS PATH
 *
 * Prints: samples=<n> and callback calls=<n> ncpus=<n> chained=<0|1>
 *
 * Build: cc -I include examples/c/recorder.c target/release/libpmx.a -lpthread -ldl -lm
 */
#include <pmx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CPUS 1024

struct seen {
    int calls, ncpus, chained;
    uint64_t last[MAX_CPUS];
};

/* Runs on the recorder's thread, once per sample. */
static void keep_raw(const uint64_t *now, const uint64_t *prev, uint64_t *out,
                     int ncpus, void *user)
{
    struct seen *s = user;
    if (s->calls > 0 && ncpus <= MAX_CPUS &&
        memcmp(prev, s->last, ncpus * sizeof *prev) != 0)
        s->chained = 0;
    for (int i = 0; i < ncpus && i < MAX_CPUS; i++) {
        if (now[i] < prev[i])
            s->chained = 0;
        s->last[i] = now[i];
        out[i] = now[i];
    }
    s->ncpus = ncpus;
    s->calls++;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: recorder N INTERVAL_MS PATH\n");
        return 2;
    }
    int n = atoi(argv[1]), interval = atoi(argv[2]);
    static struct seen seen = { .chained = 1 };
    pmx_recorder *r = pmx_recorder_new(interval, n);
    if (!r || pmx_recorder_add_event(r, "cpu-clock", NULL, 0, PMX_DELTA) < 0 ||
        pmx_recorder_add_event_fn(r, "cpu-clock", NULL, 0, keep_raw, &seen) < 0 ||
        pmx_recorder_start(r) != 0 || pmx_recorder_wait(r) != 0 ||
        pmx_recorder_write_csv(r, argv[3]) != 0) {
        fprintf(stderr, "recorder: %s\n", pmx_last_error());
        pmx_recorder_free(r);
        return 1;
    }
    printf("samples=%d\n", pmx_recorder_len(r));
    printf("callback calls=%d ncpus=%d chained=%d\n", seen.calls, seen.ncpus,
           seen.chained);
    pmx_recorder_free(r);
    return 0;
}
