/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.c — the Prometheus metrics registry (see metrics.h).
 *
 * DESIGN
 *
 * The registry holds an array of families kept sorted by name, so lookup is
 * a binary search and rendering walks it in the order the format asks for.
 * Each family holds its series in creation order, each series allocated on
 * its own so the pointer handed out never moves.  A series stores its label
 * pairs already escaped and joined (`a="x",b="y"`): that string is both its
 * identity on get-or-create and what the renderer prints.
 *
 * Threading.  Two threads meet here: the libuv loop updates values and the
 * HTTP server renders them.  Values are C11 atomics updated with relaxed
 * order: each value is read whole, and no ordering between different values
 * is promised (a scrape is a sample anyway).  Gauges and histogram sums are
 * doubles stored as their bit pattern in an atomic uint64, added with a
 * compare-and-swap loop.  A histogram counts each bucket on its own (not
 * cumulatively), so an observation is one increment; the renderer sums the
 * buckets it read into the cumulative `le` series and derives `_count` from
 * the same reads, so `_count` always equals the `+Inf` bucket in one scrape.
 * The structure (families, series arrays) changes only under the mutex,
 * which get-or-create and render share; updates never take it.
 *
 * Process metrics are not stored: they are read from the kernel at render
 * time and merged into the sorted output.
 */
#include "metrics.h"

#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

typedef enum {
        SL_METRIC_COUNTER,
        SL_METRIC_GAUGE,
        SL_METRIC_HISTOGRAM,
} sl_metric_type_t;

static const char *const type_names[] = {"counter", "gauge", "histogram"};

struct sl_counter_s {
        char *labels; /* escaped `k="v",...`; "" when none */
        _Atomic uint64_t value;
};

struct sl_gauge_s {
        char *labels;
        _Atomic uint64_t bits; /* a double's bit pattern */
};

struct sl_histogram_s {
        char *labels;
        const double *bounds; /* the family's, nbounds finite bounds */
        size_t nbounds;
        _Atomic uint64_t *buckets; /* nbounds + 1, not cumulative */
        _Atomic uint64_t sum_bits; /* a double's bit pattern */
};

typedef struct {
        char *name;
        char *help;
        sl_metric_type_t type;
        double *bounds; /* histograms only */
        size_t nbounds;
        void **series; /* creation order */
        size_t cnt, cap;
} sl_family_t;

struct sl_metrics_s {
        pthread_mutex_t lock;
        sl_family_t **fams; /* sorted by name */
        size_t cnt, cap;
        double start_time; /* seconds since the epoch */
};

const double sl_metrics_buckets_latency[] = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                             0.05,  0.1,    0.25,  0.5,  1,
                                             2.5,   5,      10,    30,   60};
const size_t sl_metrics_buckets_latency_cnt =
    SL_ARRAY_SIZE(sl_metrics_buckets_latency);

const double sl_metrics_buckets_size[] = {
    1,    2,    5,     10,    20,    50,     100,    200,    500,    1000,
    2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000};
const size_t sl_metrics_buckets_size_cnt =
    SL_ARRAY_SIZE(sl_metrics_buckets_size);

/* Names the registry renders itself; sorted, for the merge in render. */
static const char *const process_names[] = {
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_start_time_seconds",
};

/*
 * Double <-> bits.  memcpy is the defined way to reinterpret, and compiles to
 * a register move.
 */
static uint64_t dbl_bits(double v) {
        uint64_t b;
        memcpy(&b, &v, sizeof(b));
        return b;
}

static double bits_dbl(uint64_t b) {
        double v;
        memcpy(&v, &b, sizeof(v));
        return v;
}

static void atomic_dbl_add(_Atomic uint64_t *p, double delta) {
        uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(
            p, &old, dbl_bits(bits_dbl(old) + delta), memory_order_relaxed,
            memory_order_relaxed))
                ;
}

/* Rendering into an sl_buf_t (util.h), ended with sl_buf_cstr(). */

static void sb_putc(sl_buf_t *b, char c) {
        sl_buf_put(b, &c, 1);
}

static void sb_puts(sl_buf_t *b, const char *s) {
        sl_buf_put(b, s, strlen(s));
}

static void sb_printf(sl_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sl_buf_t *b, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        sl_assert(n >= 0);
        sl_buf_reserve(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t)n;
}

/*
 * Escapes per the text format: in label values backslash, double quote and
 * newline; in help text backslash and newline only.
 */
static void sb_escape(sl_buf_t *b, const char *s, int quote) {
        for (; *s; s++) {
                if (*s == '\\')
                        sb_puts(b, "\\\\");
                else if (*s == '\n')
                        sb_puts(b, "\\n");
                else if (*s == '"' && quote)
                        sb_puts(b, "\\\"");
                else
                        sb_putc(b, *s);
        }
}

/*
 * Formats a double the way Prometheus parses it: "+Inf", "-Inf", "NaN", else
 * the shortest of %.15g / %.17g that reads back exactly (so 0.1 prints as
 * 0.1, not 0.10000000000000001).
 */
static void fmt_double(char *buf, size_t size, double v) {
        if (isnan(v)) {
                snprintf(buf, size, "NaN");
        } else if (isinf(v)) {
                snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
        } else {
                snprintf(buf, size, "%.15g", v);
                if (strtod(buf, NULL) != v)
                        snprintf(buf, size, "%.17g", v);
        }
}

/*
 * Name rules of the data model: metric names [a-zA-Z_:][a-zA-Z0-9_:]*,
 * label names [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__" (reserved
 * for Prometheus itself).
 */
static int valid_name(const char *s, int colon) {
        if (!s || !*s)
                return 0;
        for (const char *p = s; *p; p++) {
                char c = *p;
                int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         c == '_' || (colon && c == ':') ||
                         (p != s && c >= '0' && c <= '9');
                if (!ok)
                        return 0;
        }
        return 1;
}

static int valid_label_name(const char *s) {
        return valid_name(s, 0) && strncmp(s, "__", 2) != 0;
}

/*
 * Joins the NULL-terminated name/value pairs of ap into the escaped form a
 * series is keyed and rendered by.  Returns a string the caller owns.
 */
static char *labels_build(va_list ap, int histogram) {
        sl_buf_t b = {0};
        const char *names[32];
        size_t n = 0;
        const char *name;

        while ((name = va_arg(ap, const char *)) != NULL) {
                const char *value = va_arg(ap, const char *);
                sl_assert(value != NULL);
                sl_assert(valid_label_name(name));
                sl_assert(!histogram || strcmp(name, "le") != 0);
                sl_assert(n < SL_ARRAY_SIZE(names));
                for (size_t i = 0; i < n; i++)
                        sl_assert(strcmp(names[i], name) != 0);
                names[n++] = name;
                if (b.len)
                        sb_putc(&b, ',');
                sb_puts(&b, name);
                sb_puts(&b, "=\"");
                sb_escape(&b, value, 1);
                sb_putc(&b, '"');
        }
        return sl_buf_cstr(&b);
}

static int is_process_name(const char *name) {
        for (size_t i = 0; i < SL_ARRAY_SIZE(process_names); i++)
                if (!strcmp(process_names[i], name))
                        return 1;
        return 0;
}

/* Binary search; returns the index of name, or where it would go with
 * *found = 0.  Called with the lock held. */
static size_t family_find(const sl_metrics_t *m, const char *name, int *found) {
        size_t lo = 0, hi = m->cnt;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(m->fams[mid]->name, name);
                if (c == 0) {
                        *found = 1;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = 0;
        return lo;
}

static sl_family_t *family_get(sl_metrics_t *m, sl_metric_type_t type,
                               const char *name, const char *help,
                               const double *bounds, size_t nbounds) {
        int found;
        size_t i = family_find(m, name, &found);

        if (found) {
                sl_family_t *f = m->fams[i];
                sl_assert(f->type == type);
                if (type == SL_METRIC_HISTOGRAM) {
                        sl_assert(f->nbounds == nbounds);
                        for (size_t j = 0; j < nbounds; j++)
                                sl_assert(f->bounds[j] == bounds[j]);
                }
                return f;
        }

        sl_family_t *f = sl_calloc(1, sizeof(*f));
        f->name = sl_strdup(name);
        f->help = sl_strdup(help ? help : "");
        f->type = type;
        if (type == SL_METRIC_HISTOGRAM) {
                f->bounds = sl_malloc(sizeof(double) * (nbounds ? nbounds : 1));
                if (nbounds)
                        memcpy(f->bounds, bounds, sizeof(double) * nbounds);
                f->nbounds = nbounds;
        }
        if (m->cnt == m->cap) {
                m->cap = m->cap ? m->cap * 2 : 16;
                m->fams = sl_realloc(m->fams, m->cap * sizeof(*m->fams));
        }
        memmove(&m->fams[i + 1], &m->fams[i], (m->cnt - i) * sizeof(*m->fams));
        m->fams[i] = f;
        m->cnt++;
        return f;
}

/* The labels string is the first member of every series type. */
static const char *series_labels(const void *s) {
        return *(char *const *)s;
}

static void *series_new(sl_family_t *f, char *labels) {
        void *s;

        switch (f->type) {
        case SL_METRIC_COUNTER: {
                sl_counter_t *c = sl_calloc(1, sizeof(*c));
                c->labels = labels;
                atomic_init(&c->value, 0);
                s = c;
                break;
        }
        case SL_METRIC_GAUGE: {
                sl_gauge_t *g = sl_calloc(1, sizeof(*g));
                g->labels = labels;
                atomic_init(&g->bits, dbl_bits(0.0));
                s = g;
                break;
        }
        default: {
                sl_histogram_t *h = sl_calloc(1, sizeof(*h));
                h->labels = labels;
                h->bounds = f->bounds;
                h->nbounds = f->nbounds;
                h->buckets = sl_calloc(f->nbounds + 1, sizeof(*h->buckets));
                for (size_t i = 0; i <= f->nbounds; i++)
                        atomic_init(&h->buckets[i], 0);
                atomic_init(&h->sum_bits, dbl_bits(0.0));
                s = h;
                break;
        }
        }
        if (f->cnt == f->cap) {
                f->cap = f->cap ? f->cap * 2 : 4;
                f->series = sl_realloc(f->series, f->cap * sizeof(*f->series));
        }
        f->series[f->cnt++] = s;
        return s;
}

static void *metrics_get(sl_metrics_t *m, sl_metric_type_t type,
                         const char *name, const char *help,
                         const double *bounds, size_t nbounds, va_list ap) {
        sl_assert(valid_name(name, 1));
        sl_assert(!is_process_name(name));
        if (type == SL_METRIC_HISTOGRAM) {
                sl_assert(bounds != NULL || nbounds == 0);
                for (size_t i = 0; i < nbounds; i++) {
                        sl_assert(isfinite(bounds[i]));
                        sl_assert(i == 0 || bounds[i - 1] < bounds[i]);
                }
        }

        char *labels = labels_build(ap, type == SL_METRIC_HISTOGRAM);
        void *s = NULL;

        pthread_mutex_lock(&m->lock);
        sl_family_t *f = family_get(m, type, name, help, bounds, nbounds);
        for (size_t i = 0; i < f->cnt; i++) {
                if (!strcmp(series_labels(f->series[i]), labels)) {
                        s = f->series[i];
                        break;
                }
        }
        if (s)
                free(labels);
        else
                s = series_new(f, labels);
        pthread_mutex_unlock(&m->lock);
        return s;
}

sl_counter_t *sl_metrics_counter(sl_metrics_t *m, const char *name,
                                 const char *help, ...) {
        if (!m)
                return NULL;
        va_list ap;
        va_start(ap, help);
        void *s = metrics_get(m, SL_METRIC_COUNTER, name, help, NULL, 0, ap);
        va_end(ap);
        return s;
}

sl_gauge_t *sl_metrics_gauge(sl_metrics_t *m, const char *name,
                             const char *help, ...) {
        if (!m)
                return NULL;
        va_list ap;
        va_start(ap, help);
        void *s = metrics_get(m, SL_METRIC_GAUGE, name, help, NULL, 0, ap);
        va_end(ap);
        return s;
}

void sl_metrics_register(sl_metrics_t *m, const sl_metric_def_t *defs, size_t n,
                         void *owner, const char *pipeline) {
        for (size_t i = 0; i < n; i++) {
                const sl_metric_def_t *d = &defs[i];
                /* The pairs end at the first NULL name. */
                const char *k1 = d->label, *v1 = d->value, *k2 = NULL,
                           *v2 = NULL;
                void *s;

                if (pipeline) {
                        k2 = k1;
                        v2 = v1;
                        k1 = "pipeline";
                        v1 = pipeline;
                }
                s = d->gauge ? (void *)sl_metrics_gauge(m, d->name, d->help, k1,
                                                        v1, k2, v2, NULL)
                             : (void *)sl_metrics_counter(m, d->name, d->help,
                                                          k1, v1, k2, v2, NULL);
                memcpy((char *)owner + d->off, &s, sizeof(s));
        }
}

sl_histogram_t *sl_metrics_histogram(sl_metrics_t *m, const char *name,
                                     const char *help, const double *bounds,
                                     size_t nbounds, ...) {
        if (!m)
                return NULL;
        va_list ap;
        va_start(ap, nbounds);
        void *s = metrics_get(m, SL_METRIC_HISTOGRAM, name, help, bounds,
                              nbounds, ap);
        va_end(ap);
        return s;
}

/*
 * Process metrics, read from the kernel.
 */

/* Start time as Prometheus's client libraries compute it: the process's
 * start in clock ticks after boot (/proc/self/stat field 22) plus the boot
 * time (/proc/stat btime).  Returns -1 when /proc cannot tell. */
static double proc_start_time(void) {
        char buf[1024];
        FILE *fp = fopen("/proc/self/stat", "r");
        if (!fp)
                return -1;
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[n] = '\0';

        /* The command name (field 2) may hold spaces and parentheses: count
         * fields from the last ')'. */
        char *p = strrchr(buf, ')');
        if (!p)
                return -1;
        p++;
        unsigned long long ticks = 0;
        int field = 2;
        char *save = NULL;
        for (char *tok = strtok_r(p, " ", &save); tok;
             tok = strtok_r(NULL, " ", &save)) {
                if (++field == 22) {
                        ticks = strtoull(tok, NULL, 10);
                        break;
                }
        }
        if (field != 22)
                return -1;

        fp = fopen("/proc/stat", "r");
        if (!fp)
                return -1;
        unsigned long long btime = 0;
        int have = 0;
        while (fgets(buf, sizeof(buf), fp)) {
                if (sscanf(buf, "btime %llu", &btime) == 1) {
                        have = 1;
                        break;
                }
        }
        fclose(fp);
        long hz = sysconf(_SC_CLK_TCK);
        if (!have || hz <= 0)
                return -1;
        return (double)btime + (double)ticks / (double)hz;
}

/* Resident set size in bytes (/proc/self/statm field 2); -1 if unknown. */
static double proc_resident_bytes(void) {
        FILE *fp = fopen("/proc/self/statm", "r");
        if (!fp)
                return -1;
        unsigned long long size, resident;
        int n = fscanf(fp, "%llu %llu", &size, &resident);
        fclose(fp);
        long page = sysconf(_SC_PAGESIZE);
        if (n != 2 || page <= 0)
                return -1;
        return (double)resident * (double)page;
}

static double proc_cpu_seconds(void) {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) != 0)
                return -1;
        return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

sl_metrics_t *sl_metrics_new(void) {
        sl_metrics_t *m = sl_calloc(1, sizeof(*m));
        pthread_mutex_init(&m->lock, NULL);
        m->start_time = proc_start_time();
        if (m->start_time < 0)
                m->start_time = (double)sl_now_ms() / 1000.0;
        return m;
}

static void family_free(sl_family_t *f) {
        for (size_t i = 0; i < f->cnt; i++) {
                if (f->type == SL_METRIC_HISTOGRAM)
                        free(((sl_histogram_t *)f->series[i])->buckets);
                free(*(char **)f->series[i]);
                free(f->series[i]);
        }
        free(f->series);
        free(f->bounds);
        free(f->name);
        free(f->help);
        free(f);
}

void sl_metrics_destroy(sl_metrics_t *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->cnt; i++)
                family_free(m->fams[i]);
        free(m->fams);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

/*
 * Updates.
 */

void sl_counter_inc(sl_counter_t *c) {
        if (c)
                atomic_fetch_add_explicit(&c->value, 1, memory_order_relaxed);
}

void sl_counter_add(sl_counter_t *c, uint64_t n) {
        if (c)
                atomic_fetch_add_explicit(&c->value, n, memory_order_relaxed);
}

void sl_counter_inc_owner(sl_counter_t *c) {
        if (c)
                atomic_store_explicit(
                    &c->value,
                    atomic_load_explicit(&c->value, memory_order_relaxed) + 1,
                    memory_order_relaxed);
}

void sl_gauge_set(sl_gauge_t *g, double v) {
        if (g)
                atomic_store_explicit(&g->bits, dbl_bits(v),
                                      memory_order_relaxed);
}

void sl_gauge_add(sl_gauge_t *g, double delta) {
        if (g)
                atomic_dbl_add(&g->bits, delta);
}

void sl_gauge_add_owner(sl_gauge_t *g, double delta) {
        if (g)
                atomic_store_explicit(
                    &g->bits,
                    dbl_bits(bits_dbl(atomic_load_explicit(
                                 &g->bits, memory_order_relaxed)) +
                             delta),
                    memory_order_relaxed);
}

void sl_histogram_observe(sl_histogram_t *h, double v) {
        if (!h || isnan(v))
                return;
        /* Bucket sets are short (~20): a linear scan beats bisection. */
        size_t i = 0;
        while (i < h->nbounds && v > h->bounds[i])
                i++;
        atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
        atomic_dbl_add(&h->sum_bits, v);
}

uint64_t sl_counter_get(const sl_counter_t *c) {
        return c ? atomic_load_explicit(&c->value, memory_order_relaxed) : 0;
}

double sl_gauge_get(const sl_gauge_t *g) {
        return g ? bits_dbl(
                       atomic_load_explicit(&g->bits, memory_order_relaxed))
                 : 0.0;
}

uint64_t sl_histogram_count(const sl_histogram_t *h) {
        uint64_t n = 0;
        if (!h)
                return 0;
        for (size_t i = 0; i <= h->nbounds; i++)
                n += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        return n;
}

double sl_histogram_sum(const sl_histogram_t *h) {
        return h ? bits_dbl(
                       atomic_load_explicit(&h->sum_bits, memory_order_relaxed))
                 : 0.0;
}

double sl_histogram_quantile(const sl_histogram_t *h, double q) {
        if (!h || isnan(q) || q < 0 || q > 1)
                return NAN;

        /* Read each bucket once, so the ranks below agree with the total. */
        uint64_t stackbuf[32];
        uint64_t *cnt = h->nbounds + 1 <= SL_ARRAY_SIZE(stackbuf)
                            ? stackbuf
                            : sl_malloc((h->nbounds + 1) * sizeof(*cnt));
        uint64_t total = 0;
        for (size_t i = 0; i <= h->nbounds; i++) {
                cnt[i] =
                    atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
                total += cnt[i];
        }

        double result = NAN;
        if (total > 0) {
                double rank = q * (double)total;
                uint64_t below = 0;
                size_t i = 0;
                /* The first bucket whose cumulative count reaches rank; an
                 * empty bucket never holds the rank (q = 0 lands on the
                 * first observation's bucket, not an empty one before it). */
                while (i < h->nbounds &&
                       (cnt[i] == 0 || (double)(below + cnt[i]) < rank)) {
                        below += cnt[i];
                        i++;
                }
                if (i == h->nbounds) {
                        result = h->nbounds ? h->bounds[h->nbounds - 1] : NAN;
                } else {
                        double upper = h->bounds[i];
                        double lower = i > 0       ? h->bounds[i - 1]
                                       : upper > 0 ? 0.0
                                                   : upper;
                        result = lower + (upper - lower) *
                                             (rank - (double)below) /
                                             (double)cnt[i];
                }
        }
        if (cnt != stackbuf)
                free(cnt);
        return result;
}

/*
 * Rendering.
 */

static void render_header(sl_buf_t *b, const char *name, const char *help,
                          const char *type) {
        sb_printf(b, "# HELP %s ", name);
        sb_escape(b, help, 0);
        sb_printf(b, "\n# TYPE %s %s\n", name, type);
}

/* `name{labels} value\n`; extra is one more pre-escaped pair (le="..."). */
static void render_sample(sl_buf_t *b, const char *name, const char *suffix,
                          const char *labels, const char *extra,
                          const char *value) {
        sb_puts(b, name);
        sb_puts(b, suffix);
        if (*labels || extra) {
                sb_putc(b, '{');
                sb_puts(b, labels);
                if (extra) {
                        if (*labels)
                                sb_putc(b, ',');
                        sb_puts(b, extra);
                }
                sb_putc(b, '}');
        }
        sb_putc(b, ' ');
        sb_puts(b, value);
        sb_putc(b, '\n');
}

static void render_histogram(sl_buf_t *b, const char *name,
                             const sl_histogram_t *h) {
        char val[40], le[48], bound[40];
        uint64_t cum = 0;

        for (size_t i = 0; i <= h->nbounds; i++) {
                cum +=
                    atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
                fmt_double(bound, sizeof(bound),
                           i < h->nbounds ? h->bounds[i] : INFINITY);
                snprintf(le, sizeof(le), "le=\"%s\"", bound);
                snprintf(val, sizeof(val), "%llu", (unsigned long long)cum);
                render_sample(b, name, "_bucket", h->labels, le, val);
        }
        fmt_double(val, sizeof(val), sl_histogram_sum(h));
        render_sample(b, name, "_sum", h->labels, NULL, val);
        snprintf(val, sizeof(val), "%llu", (unsigned long long)cum);
        render_sample(b, name, "_count", h->labels, NULL, val);
}

static void render_family(sl_buf_t *b, const sl_family_t *f) {
        char val[40];

        render_header(b, f->name, f->help, type_names[f->type]);
        for (size_t i = 0; i < f->cnt; i++) {
                const void *s = f->series[i];
                switch (f->type) {
                case SL_METRIC_COUNTER:
                        snprintf(val, sizeof(val), "%llu",
                                 (unsigned long long)sl_counter_get(s));
                        render_sample(b, f->name, "", series_labels(s), NULL,
                                      val);
                        break;
                case SL_METRIC_GAUGE:
                        fmt_double(val, sizeof(val), sl_gauge_get(s));
                        render_sample(b, f->name, "", series_labels(s), NULL,
                                      val);
                        break;
                case SL_METRIC_HISTOGRAM:
                        render_histogram(b, f->name, s);
                        break;
                }
        }
}

/* One process metric; skipped when the kernel could not tell (value < 0). */
static void render_process(sl_buf_t *b, const sl_metrics_t *m, size_t i) {
        static const char *const help[] = {
            "Total user and system CPU time spent in seconds.",
            "Resident memory size in bytes.",
            "Start time of the process since unix epoch in seconds.",
        };
        static const char *const type[] = {"counter", "gauge", "gauge"};
        double v = i == 0   ? proc_cpu_seconds()
                   : i == 1 ? proc_resident_bytes()
                            : m->start_time;
        char val[40];

        if (v < 0)
                return;
        render_header(b, process_names[i], help[i], type[i]);
        fmt_double(val, sizeof(val), v);
        render_sample(b, process_names[i], "", "", NULL, val);
}

char *sl_metrics_render(sl_metrics_t *m, size_t *lenp) {
        sl_buf_t b = {0};
        size_t pi = 0;

        sl_buf_reserve(&b, 4096);
        if (m) {
                pthread_mutex_lock(&m->lock);
                /* Merge the sorted families with the sorted process names. */
                for (size_t i = 0; i < m->cnt; i++) {
                        while (pi < SL_ARRAY_SIZE(process_names) &&
                               strcmp(process_names[pi], m->fams[i]->name) < 0)
                                render_process(&b, m, pi++);
                        render_family(&b, m->fams[i]);
                }
                while (pi < SL_ARRAY_SIZE(process_names))
                        render_process(&b, m, pi++);
                pthread_mutex_unlock(&m->lock);
        }
        if (lenp)
                *lenp = b.len;
        return sl_buf_cstr(&b);
}
