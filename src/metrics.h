/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h — a small Prometheus metrics registry: counters, gauges and
 * histograms, rendered in the text exposition format (version 0.0.4).
 *
 * A *family* has a name, a help line and a type; a *series* is a family plus
 * label pairs.  Modules get-or-create a series once (at setup, or the first
 * time a new pipeline or reason appears) and keep the returned pointer,
 * which stays valid until sl_metrics_destroy().  Updating through that
 * pointer is one relaxed atomic operation and takes no lock.
 *
 * Threads: updates run on the libuv loop thread; sl_metrics_render() runs on
 * the HTTP server's thread.  Get-or-create and render share the registry
 * mutex.  Updates are atomic, so a render sees each value whole, never torn.
 *
 * A NULL registry is allowed everywhere: get-or-create on NULL returns NULL,
 * and updating a NULL series does nothing.  So a module can be built and
 * unit-tested without a registry, and no caller needs "if (metrics)" checks.
 *
 * Misuse is a bug and asserts: an invalid metric or label name, the same
 * name asked for with another type (or another bucket layout), a histogram
 * label named "le", or a name the registry reserves for its process metrics
 * (process_resident_memory_bytes, process_cpu_seconds_total,
 * process_start_time_seconds).
 */
#ifndef SL_METRICS_H
#define SL_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sl_metrics_s sl_metrics_t;
typedef struct sl_counter_s sl_counter_t;
typedef struct sl_gauge_s sl_gauge_t;
typedef struct sl_histogram_s sl_histogram_t;

/* A new, empty registry.  Records the process start time for
 * process_start_time_seconds.  Free with sl_metrics_destroy(). */
sl_metrics_t *sl_metrics_new(void);

/* Frees the registry and every series it handed out; all sl_counter_t,
 * sl_gauge_t and sl_histogram_t pointers become invalid.  The HTTP server
 * must be stopped first.  NULL is a no-op. */
void sl_metrics_destroy(sl_metrics_t *m);

/*
 * Get-or-create a series.  The variadic tail is label name/value pairs
 * ending with NULL:
 *
 *   sl_counter_t *in = sl_metrics_counter(m, "sluice_records_in_total",
 *       "Records read from input topics.", "pipeline", name, NULL);
 *
 * Label names and values are copied; values may hold any bytes of UTF-8
 * (they are escaped when rendered).  Two calls with the same name and the
 * same label pairs in the same order return the same pointer.  The help
 * text of the first call wins.  Returns a pointer owned by the registry,
 * valid until sl_metrics_destroy(), or NULL when m is NULL.  Any thread;
 * takes the registry mutex (do not call per record).
 */
sl_counter_t *sl_metrics_counter(sl_metrics_t *m, const char *name,
                                 const char *help, ...)
    __attribute__((sentinel));
sl_gauge_t *sl_metrics_gauge(sl_metrics_t *m, const char *name,
                             const char *help, ...) __attribute__((sentinel));

/* As above for a histogram with the given upper bounds (strictly increasing,
 * finite; the +Inf bucket is implicit).  The bounds are copied.  Every series
 * of one family must use the same bounds. */
sl_histogram_t *sl_metrics_histogram(sl_metrics_t *m, const char *name,
                                     const char *help, const double *bounds,
                                     size_t nbounds, ...)
    __attribute__((sentinel));

/*
 * A module's counters and gauges as a table: one row per series, the
 * handle stored in the owner's struct at the row's offset.
 *
 *   static const sl_metric_def_t defs[] = {
 *       SL_METRICS_COUNTER(tp_t, m_drained, "sluice_throttle_drained_total",
 *                          "Messages sent from the backlog at their key's "
 *                          "rate."),
 *       SL_METRICS_GAUGE_L(tp_t, m_paused, "sluice_input_paused",
 *                          "1 while the input waits.", "cap", "keys"),
 *   };
 *   sl_metrics_register(m, defs, SL_ARRAY_SIZE(defs), tp, pipeline_name);
 *
 * The macros check at compile time that the field is an sl_counter_t * or
 * an sl_gauge_t * as the row says.
 */
typedef struct sl_metric_def_s {
        size_t off;        /* of the handle in the owner's struct */
        int gauge;         /* 0: counter, 1: gauge */
        const char *name;  /* the family */
        const char *help;  /* its help text (the first registration's wins) */
        const char *label; /* a label pair after "pipeline", or NULL */
        const char *value;
} sl_metric_def_t;

#define SL__METRICS_OFF(T, field, H)                                           \
        (offsetof(T, field) + 0 * sizeof(((T *)0)->field == (H *)0))
#define SL_METRICS_COUNTER(T, field, name, help)                               \
        { SL__METRICS_OFF(T, field, sl_counter_t), 0, name, help, NULL, NULL }
#define SL_METRICS_COUNTER_L(T, field, name, help, label, value)               \
        { SL__METRICS_OFF(T, field, sl_counter_t), 0, name, help, label, value }
#define SL_METRICS_GAUGE(T, field, name, help)                                 \
        { SL__METRICS_OFF(T, field, sl_gauge_t), 1, name, help, NULL, NULL }
#define SL_METRICS_GAUGE_L(T, field, name, help, label, value)                 \
        { SL__METRICS_OFF(T, field, sl_gauge_t), 1, name, help, label, value }

/* Gets or creates the n series of defs, in order, each labelled
 * pipeline="<pipeline>" (no pipeline label when pipeline is NULL) and then
 * with its row's own pair, and stores each handle into owner.  With m NULL
 * every handle is NULL.  Any thread; takes the registry mutex. */
void sl_metrics_register(sl_metrics_t *m, const sl_metric_def_t *defs, size_t n,
                         void *owner, const char *pipeline);

/*
 * Renders every family in the Prometheus text format 0.0.4: "# HELP" and
 * "# TYPE" once per family, families sorted by name, series in creation
 * order, then process metrics computed now.  Returns a NUL-terminated
 * string the caller frees with free(); its length (without the NUL) goes to
 * *lenp when lenp is not NULL.  Any thread; takes the registry mutex.
 */
char *sl_metrics_render(sl_metrics_t *m, size_t *lenp);

/* Updates: lock-free, relaxed atomics; NULL series is a no-op.  Meant for
 * the loop thread, but safe from any thread. */
void sl_counter_inc(sl_counter_t *c);
void sl_counter_add(sl_counter_t *c, uint64_t n);
void sl_gauge_set(sl_gauge_t *g, double v);
void sl_gauge_add(sl_gauge_t *g, double delta);

/* The same for a series that one thread alone ever updates (its owner: the
 * loop thread's per-record figures).  A plain load and store instead of a
 * locked read-modify-write: that lock drains the store buffer, where the
 * record's state writes still wait for their cache lines, and took ~7 % of
 * a debounce item's CPU (A/B pairs of bench debounce_ingest,
 * bench/NOTES.md).
 * Readers on other threads still see whole values; a second writer would
 * lose updates, so a series is updated either only by its owner or only
 * through the functions above. */
void sl_counter_inc_owner(sl_counter_t *c);
void sl_gauge_add_owner(sl_gauge_t *g, double delta);

/* Counts v in the first bucket whose bound is >= v (a value equal to a bound
 * goes in that bucket), adds v to the sum.  NaN is ignored. */
void sl_histogram_observe(sl_histogram_t *h, double v);

/* Reads, for logs and tests.  NULL reads as 0. */
uint64_t sl_counter_get(const sl_counter_t *c);
double sl_gauge_get(const sl_gauge_t *g);
uint64_t sl_histogram_count(const sl_histogram_t *h);
double sl_histogram_sum(const sl_histogram_t *h);

/*
 * Estimates the q-quantile (0 <= q <= 1) the way PromQL's
 * histogram_quantile() does: find the bucket holding rank q * count and
 * interpolate linearly between its lower and upper bounds (the first
 * bucket's lower bound is 0 when its upper bound is positive).  A rank in
 * the +Inf bucket returns the highest finite bound.  Returns NaN when the
 * histogram is empty or NULL, or q is out of range.
 */
double sl_histogram_quantile(const sl_histogram_t *h, double q);

/* Standard bucket sets.  Latency in seconds, 1 ms to 60 s: timer lateness,
 * drift, flush lateness, rebuild duration. */
extern const double sl_metrics_buckets_latency[];
extern const size_t sl_metrics_buckets_latency_cnt;
/* Sizes and counts, 1 to 1000000 in 1-2-5 steps: items per batch, records
 * per rebuild. */
extern const double sl_metrics_buckets_size[];
extern const size_t sl_metrics_buckets_size_cnt;

#endif
