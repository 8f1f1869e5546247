/*
 * pmx.h — count hardware and software events in regions of a program.
 *
 * Link with libpmx.a (plus -lpthread -ldl -lm) or libpmx.so, built by
 * `cargo build -p pmx-capi`. The events come from $PMX_EVENTS (an -e
 * list, e.g. "task-clock,page-faults,{cycles,instructions}"), metrics from
 * $PMX_METRICS, the results file from $PMX_REGIONS_OUT; `pmx stat
 * --regions -e ... -- ./app` sets all three and prints the results.
 *
 *     pmx_init();
 *     pmx_region_begin("solve");
 *     solve();
 *     pmx_region_end("solve");
 *     pmx_finalize();
 *
 * Every function returns 0 on success and -1 on failure; pmx_last_error()
 * says why (per thread). Counts are per thread: each thread gets its own
 * counters on its first region (or pmx_thread_init()). Regions nest; each
 * gets inclusive counts; pmx_region_end must name the innermost open one.
 *
 * Define PMX_DISABLE to compile every call below to nothing.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef PMX_H
#define PMX_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PMX_DISABLE

/* Configure from the environment and open this thread's counters. */
int pmx_init(void);
/* Configure with this event list (-e syntax) when $PMX_EVENTS is not set
 * (when it is, it wins); before any region. */
int pmx_init_events(const char *events);
/* Open the calling thread's counters now (else its first region does). */
int pmx_thread_init(void);
/* Enter / leave region `name` on the calling thread. */
int pmx_region_begin(const char *name);
int pmx_region_end(const char *name);
/* Number of events; name of event i (0-based), NULL when out of range. */
int pmx_event_count(void);
const char *pmx_event_name(int i);
/* This thread's totals of region `name`: *nevents = room in values on
 * entry, number of events on return; values[i] = event i scaled for
 * multiplexing (NaN when not counted); time_s = seconds inside; calls =
 * completed begin/end pairs. time_s and calls may be NULL. */
int pmx_region_get(const char *name, int *nevents, double *values,
                   double *time_s, long long *calls);
/* Every thread's results as JSON (format pmx-regions/1) to `path`. */
int pmx_write_results(const char *path);
/* The results table on stderr. */
int pmx_print_results(void);
/* Write $PMX_REGIONS_OUT (once; also done at exit). */
int pmx_finalize(void);
/* The calling thread's last error, or NULL. */
const char *pmx_last_error(void);

#else /* PMX_DISABLE: every call compiles to nothing */

#define pmx_init() ((void)0)
#define pmx_init_events(events) ((void)0)
#define pmx_thread_init() ((void)0)
#define pmx_region_begin(name) ((void)0)
#define pmx_region_end(name) ((void)0)
#define pmx_event_count() ((void)0)
#define pmx_event_name(i) ((void)0)
#define pmx_region_get(name, nevents, values, time_s, calls) ((void)0)
#define pmx_write_results(path) ((void)0)
#define pmx_print_results() ((void)0)
#define pmx_finalize() ((void)0)
#define pmx_last_error() ((void)0)

#endif /* PMX_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* PMX_H */
