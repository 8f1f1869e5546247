/*
 * pmx.h — pmx from C, C++ and Fortran: regions, counters, the periodic
 * recorder, MSR sessions, and the register encoder.
 *
 * Build with `cargo build --release -p pmx-capi` (libpmx.so, libpmx.a);
 * after `make -C include install PREFIX=/usr/local` (see the README),
 *     cc app.c $(pkg-config --cflags --libs pmx)
 *
 * REGIONS — count hardware and software events in regions of a program.
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

#include <stdint.h>

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

/*
 * The families below are not region markers: PMX_DISABLE leaves them
 * declared. Every object is freed by one call (which accepts NULL);
 * constructors return NULL and other calls -1 on failure, with the
 * reason in pmx_last_error() (per thread; for a bad event name, the
 * spec with a caret under the error and the close matches). No Rust
 * panic crosses into C.
 */

/* ---- COUNTERS: a set of events read by the program itself ---------- */

typedef struct pmx_counters pmx_counters;

/* One event's reading: raw value, times enabled and running (ns), and the
 * value scaled for multiplexing (value * enabled / running; NaN when the
 * event is not counted here or never ran). */
typedef struct pmx_count {
    uint64_t value;
    uint64_t enabled;
    uint64_t running;
    double scaled;
} pmx_count;

/* Open an -e list ("task-clock,page-faults", "{cycles,instructions}:u")
 * on perf's (pid, cpu) target: pid 0, cpu -1: the calling thread; pid > 0,
 * cpu -1: that process's threads; pid -1, cpu >= 0: every task on that
 * CPU; pid -1, cpu -1: every online CPU. Created disabled. An event this
 * machine cannot count is kept, with its reason (pmx_counters_status);
 * only when none can be opened does this fail. */
pmx_counters *pmx_counters_open(const char *events, int pid, int cpu);
int pmx_counters_enable(pmx_counters *c);
int pmx_counters_disable(pmx_counters *c);
int pmx_counters_reset(pmx_counters *c);
/* Read every event into out (room for n), in the order of
 * pmx_counters_name; returns the number of events. Does not allocate. */
int pmx_counters_read(pmx_counters *c, pmx_count *out, int n);
/* Number of events; name of event i (valid until close; NULL when out of
 * range); why event i is not counted (NULL when it is). */
int pmx_counters_count(const pmx_counters *c);
const char *pmx_counters_name(const pmx_counters *c, int i);
const char *pmx_counters_status(const pmx_counters *c, int i);
void pmx_counters_close(pmx_counters *c);

/* ---- RECORDER: handles read together every N ms, transformed, stored - */

typedef struct pmx_recorder pmx_recorder;

/* What is stored of a handle's raw per-CPU values. */
#define PMX_RAW 0   /* the raw values */
#define PMX_DELTA 1 /* the change since the previous read, modulo the
                       counter's width (wrap-safe) */
/* Where an MSR handle is read: every CPU, one CPU per core, per package. */
#define PMX_SCOPE_THREAD 0
#define PMX_SCOPE_CORE 1
#define PMX_SCOPE_PACKAGE 2

/* A transform: fill out[0..ncpus) from the raw values now and at the
 * previous read (the baseline for the first sample). Called on the
 * recorder's thread once per sample (from the caller's thread for
 * pmx_recorder_sample). */
typedef void (*pmx_transform_fn)(const uint64_t *now, const uint64_t *prev,
                                 uint64_t *out, int ncpus, void *user);

/* A recorder reading every interval_ms until capacity samples are stored. */
pmx_recorder *pmx_recorder_new(int interval_ms, int capacity);
/* A perf event counting every task on each of cpus[0..ncpus) (NULL or 0:
 * every online CPU); transform PMX_RAW or PMX_DELTA. Returns the handle's
 * index. Handles are added before the first sample. */
int pmx_recorder_add_event(pmx_recorder *r, const char *event,
                           const int *cpus, int ncpus, int transform);
/* The same with a C callback as the transform. */
int pmx_recorder_add_event_fn(pmx_recorder *r, const char *event,
                              const int *cpus, int ncpus,
                              pmx_transform_fn fn, void *user);
/* An MSR ("IA32_TIME_STAMP_COUNTER", "0x611") read through the msr driver once per scope
 * domain of every online CPU; PMX_DELTA wraps at the register's width. */
int pmx_recorder_add_msr(pmx_recorder *r, const char *name_or_addr,
                         int scope, int transform);
/* Take the baseline and sample on a background thread until full. */
int pmx_recorder_start(pmx_recorder *r);
/* Stop now (samples kept) / wait until full. */
int pmx_recorder_stop(pmx_recorder *r);
int pmx_recorder_wait(pmx_recorder *r);
/* One sample by hand (not while started): 1 stored, 0 full. */
int pmx_recorder_sample(pmx_recorder *r);
/* Number of samples stored. */
int pmx_recorder_len(pmx_recorder *r);
/* sample,time_s,cpu,<handle>...: one row per sample and CPU. */
int pmx_recorder_write_csv(pmx_recorder *r, const char *path);
/* Stop if running, close every handle, free. */
void pmx_recorder_free(pmx_recorder *r);

/* ---- MSR: registers through /dev/cpu/N/msr (root, msr driver) ------ */

typedef struct pmx_msr_session pmx_msr_session;

/* Open the msr devices of cpus ("0-3,8"; NULL: every online CPU). */
pmx_msr_session *pmx_msr_open(const char *cpus);
/* Read a register by name ("IA32_TIME_STAMP_COUNTER") or address ("0x10") on cpu. */
int pmx_msr_read(pmx_msr_session *s, const char *reg, int cpu, uint64_t *out);
/* Program an -e list with the plan `pmx msr plan` shows; every register
 * it writes is saved and restored by pmx_msr_close, on SIGINT/SIGTERM/
 * SIGHUP, or at exit(). Returns the number of counters programmed. */
int pmx_msr_program(pmx_msr_session *s, const char *events);
/* Restore, close and free. */
int pmx_msr_close(pmx_msr_session *s);

/* ---- REGISTERS: event specs to register values and back ------------ */

/* Encode spec ("event=0x2e,umask=0x41", "r412e:u") for arch ("intel",
 * "amd"; NULL: this CPU's): *reg = the event-select value pmx writes,
 * *config = perf's attr.config (either may be NULL). */
int pmx_encode(const char *spec, const char *arch, uint64_t *reg,
               uint64_t *config);
/* Field `field` ("EventSelect", "umask", "usr"; any case) of `value` read
 * as reg: "intel", "amd" (NULL: this CPU's event select) or a layout of
 * `pmx decode --register` ("evtsel", "fixed-ctrl", "global-ctrl",
 * "global-status", "uncore-evtsel", "perf-ctl"). */
int pmx_decode(const char *reg, uint64_t value, const char *field,
               uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* PMX_H */
