/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_metrics.c — the Prometheus registry: exact exposition text, escaping,
 * get-or-create identity, bucket edges, quantiles, process metrics, and
 * updates racing a render on another thread.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"
#include "util.h"

/* The render without the process_* families, whose values change. */
static char *render_app(sl_metrics_t *m) {
        size_t len;
        char *all = sl_metrics_render(m, &len);
        assert_int_equal(strlen(all), len);
        char *out = sl_calloc(1, len + 1);
        size_t o = 0;
        for (char *line = all; *line;) {
                char *nl = strchr(line, '\n');
                assert_non_null(nl); /* every line ends with a newline */
                size_t n = (size_t)(nl - line) + 1;
                if (!memmem(line, n, " process_", 9) &&
                    strncmp(line, "process_", 8) != 0) {
                        memcpy(out + o, line, n);
                        o += n;
                }
                line = nl + 1;
        }
        free(all);
        return out;
}

static void test_render_exact(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        static const double b[] = {0.1, 1};

        /* Created out of name order: rendering sorts families. */
        sl_histogram_t *h = sl_metrics_histogram(
            m, "sluice_timer_lateness_seconds", "Due to fired.", b, 2,
            "pipeline", "timers", NULL);
        sl_gauge_t *g = sl_metrics_gauge(m, "sluice_backlog_bytes",
                                         "Bytes in the backlog.", NULL);
        sl_counter_t *in_a = sl_metrics_counter(
            m, "sluice_records_in_total", "Records read.\nPer pipeline, a\\b.",
            "pipeline", "a", "topic", "in.a", NULL);
        sl_counter_t *in_b = sl_metrics_counter(
            m, "sluice_records_in_total", "ignored: first help wins",
            "pipeline", "b", "topic", "in.b", NULL);
        sl_counter_t *plain =
            sl_metrics_counter(m, "sluice_rebalances_total", "", NULL);

        sl_counter_add(in_a, 41);
        sl_counter_inc(in_a);
        sl_counter_inc(in_b);
        (void)plain;
        sl_gauge_set(g, 2.5);
        sl_gauge_add(g, -1);
        sl_histogram_observe(h, 0.05);
        sl_histogram_observe(h, 0.1);
        sl_histogram_observe(h, 0.5);
        sl_histogram_observe(h, 2);

        char *text = render_app(m);
        assert_string_equal(
            text,
            "# HELP sluice_backlog_bytes Bytes in the backlog.\n"
            "# TYPE sluice_backlog_bytes gauge\n"
            "sluice_backlog_bytes 1.5\n"
            "# HELP sluice_rebalances_total \n"
            "# TYPE sluice_rebalances_total counter\n"
            "sluice_rebalances_total 0\n"
            "# HELP sluice_records_in_total Records read.\\nPer pipeline, "
            "a\\\\b.\n"
            "# TYPE sluice_records_in_total counter\n"
            "sluice_records_in_total{pipeline=\"a\",topic=\"in.a\"} 42\n"
            "sluice_records_in_total{pipeline=\"b\",topic=\"in.b\"} 1\n"
            "# HELP sluice_timer_lateness_seconds Due to fired.\n"
            "# TYPE sluice_timer_lateness_seconds histogram\n"
            "sluice_timer_lateness_seconds_bucket{pipeline=\"timers\","
            "le=\"0.1\"} 2\n"
            "sluice_timer_lateness_seconds_bucket{pipeline=\"timers\","
            "le=\"1\"} 3\n"
            "sluice_timer_lateness_seconds_bucket{pipeline=\"timers\","
            "le=\"+Inf\"} 4\n"
            "sluice_timer_lateness_seconds_sum{pipeline=\"timers\"} 2.65\n"
            "sluice_timer_lateness_seconds_count{pipeline=\"timers\"} 4\n");
        free(text);
        sl_metrics_destroy(m);
}

static void test_histogram_no_labels(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        static const double b[] = {0.25};
        sl_histogram_t *h =
            sl_metrics_histogram(m, "x_seconds", "X.", b, 1, NULL);
        sl_histogram_observe(h, 0.125);
        char *text = render_app(m);
        assert_string_equal(text, "# HELP x_seconds X.\n"
                                  "# TYPE x_seconds histogram\n"
                                  "x_seconds_bucket{le=\"0.25\"} 1\n"
                                  "x_seconds_bucket{le=\"+Inf\"} 1\n"
                                  "x_seconds_sum 0.125\n"
                                  "x_seconds_count 1\n");
        free(text);
        sl_metrics_destroy(m);
}

static void test_escaping(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        sl_counter_t *c =
            sl_metrics_counter(m, "esc_total", "E.", "v", "a\\b\"c\nd", NULL);
        sl_counter_inc(c);
        char *text = render_app(m);
        assert_string_equal(text, "# HELP esc_total E.\n"
                                  "# TYPE esc_total counter\n"
                                  "esc_total{v=\"a\\\\b\\\"c\\nd\"} 1\n");
        free(text);
        /* The escaped value is the identity: the same raw value finds it. */
        assert_ptr_equal(c, sl_metrics_counter(m, "esc_total", "E.", "v",
                                               "a\\b\"c\nd", NULL));
        sl_metrics_destroy(m);
}

static void test_gauge_values(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        sl_gauge_t *a = sl_metrics_gauge(m, "g", "G.", "k", "a", NULL);
        sl_gauge_t *b = sl_metrics_gauge(m, "g", "G.", "k", "b", NULL);
        sl_gauge_t *c = sl_metrics_gauge(m, "g", "G.", "k", "c", NULL);
        sl_gauge_t *d = sl_metrics_gauge(m, "g", "G.", "k", "d", NULL);
        sl_gauge_set(a, 0.1);
        sl_gauge_set(b, INFINITY);
        sl_gauge_set(c, NAN);
        sl_gauge_set(d, 1e21);
        char *text = render_app(m);
        assert_string_equal(text, "# HELP g G.\n"
                                  "# TYPE g gauge\n"
                                  "g{k=\"a\"} 0.1\n"
                                  "g{k=\"b\"} +Inf\n"
                                  "g{k=\"c\"} NaN\n"
                                  "g{k=\"d\"} 1e+21\n");
        free(text);
        sl_metrics_destroy(m);
}

static void test_get_or_create(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        sl_counter_t *a =
            sl_metrics_counter(m, "c_total", "C.", "p", "x", "r", "y", NULL);
        assert_non_null(a);
        assert_ptr_equal(a, sl_metrics_counter(m, "c_total", "C.", "p", "x",
                                               "r", "y", NULL));
        assert_ptr_not_equal(a, sl_metrics_counter(m, "c_total", "C.", "p", "x",
                                                   "r", "z", NULL));
        assert_ptr_not_equal(a, sl_metrics_counter(m, "c_total", "C.", NULL));

        sl_gauge_t *g = sl_metrics_gauge(m, "g", "G.", NULL);
        assert_ptr_equal(g, sl_metrics_gauge(m, "g", "G.", NULL));

        const double *lb = sl_metrics_buckets_latency;
        size_t ln = sl_metrics_buckets_latency_cnt;
        sl_histogram_t *h =
            sl_metrics_histogram(m, "h_seconds", "H.", lb, ln, NULL);
        assert_ptr_equal(
            h, sl_metrics_histogram(m, "h_seconds", "H.", lb, ln, NULL));

        /* Pointers stay valid while many more families and series arrive. */
        char name[32];
        for (int i = 0; i < 200; i++) {
                snprintf(name, sizeof(name), "f%03d_total", i);
                sl_counter_inc(
                    sl_metrics_counter(m, name, "F.", "i", name, NULL));
        }
        sl_counter_inc(a);
        assert_int_equal(sl_counter_get(a), 1);
        assert_ptr_equal(a, sl_metrics_counter(m, "c_total", "C.", "p", "x",
                                               "r", "y", NULL));

        /* A NULL registry hands out NULL; NULL series ignore updates. */
        assert_null(sl_metrics_counter(NULL, "c_total", "C.", NULL));
        assert_null(sl_metrics_gauge(NULL, "g", "G.", NULL));
        assert_null(sl_metrics_histogram(NULL, "h", "H.", lb, ln, NULL));
        sl_counter_inc(NULL);
        sl_counter_add(NULL, 3);
        sl_gauge_set(NULL, 1);
        sl_gauge_add(NULL, 1);
        sl_histogram_observe(NULL, 1);
        assert_int_equal(sl_counter_get(NULL), 0);
        assert_true(isnan(sl_histogram_quantile(NULL, 0.5)));
        sl_metrics_destroy(m);
        sl_metrics_destroy(NULL);
}

/* A table of rows: each handle lands in its field, is the series the
 * variadic calls name, and the render is that of those calls. */
typedef struct owner_s {
        int before;
        sl_counter_t *out;
        sl_gauge_t *depth;
        sl_counter_t *dlq[2];
        int after;
} owner_t;

static void test_register_table(void **state) {
        static const sl_metric_def_t defs[] = {
            SL_METRICS_COUNTER(owner_t, out, "x_out_total", "Out."),
            SL_METRICS_GAUGE(owner_t, depth, "x_depth", "Depth."),
            SL_METRICS_COUNTER_L(owner_t, dlq[0], "x_dlq_total", "DLQ.",
                                 "reason", "expired"),
            SL_METRICS_COUNTER_L(owner_t, dlq[1], "x_dlq_total", "", "reason",
                                 "refused"),
        };
        owner_t a = {.before = 7, .after = 9}, b = {0}, none = {0};
        sl_metrics_t *m = sl_metrics_new();
        (void)state;

        sl_metrics_register(m, defs, SL_ARRAY_SIZE(defs), &a, "p1");
        sl_metrics_register(m, defs, SL_ARRAY_SIZE(defs), &b, NULL);
        assert_int_equal(a.before, 7);
        assert_int_equal(a.after, 9);
        assert_ptr_equal(a.out, sl_metrics_counter(m, "x_out_total", "Out.",
                                                   "pipeline", "p1", NULL));
        assert_ptr_equal(a.depth, sl_metrics_gauge(m, "x_depth", "Depth.",
                                                   "pipeline", "p1", NULL));
        assert_ptr_equal(a.dlq[1],
                         sl_metrics_counter(m, "x_dlq_total", "", "pipeline",
                                            "p1", "reason", "refused", NULL));
        assert_ptr_equal(b.out, sl_metrics_counter(m, "x_out_total", "", NULL));
        assert_ptr_equal(b.dlq[0],
                         sl_metrics_counter(m, "x_dlq_total", "", "reason",
                                            "expired", NULL));
        assert_ptr_not_equal(a.dlq[0], a.dlq[1]);
        sl_counter_inc(a.dlq[1]);
        sl_gauge_set(b.depth, 3);
        char *text = render_app(m);
        assert_string_equal(
            text, "# HELP x_depth Depth.\n"
                  "# TYPE x_depth gauge\n"
                  "x_depth{pipeline=\"p1\"} 0\n"
                  "x_depth 3\n"
                  "# HELP x_dlq_total DLQ.\n"
                  "# TYPE x_dlq_total counter\n"
                  "x_dlq_total{pipeline=\"p1\",reason=\"expired\"} 0\n"
                  "x_dlq_total{pipeline=\"p1\",reason=\"refused\"} 1\n"
                  "x_dlq_total{reason=\"expired\"} 0\n"
                  "x_dlq_total{reason=\"refused\"} 0\n"
                  "# HELP x_out_total Out.\n"
                  "# TYPE x_out_total counter\n"
                  "x_out_total{pipeline=\"p1\"} 0\n"
                  "x_out_total 0\n");
        free(text);

        /* No registry: every handle NULL. */
        none.out = (sl_counter_t *)&none;
        sl_metrics_register(NULL, defs, SL_ARRAY_SIZE(defs), &none, "p");
        assert_null(none.out);
        assert_null(none.depth);
        assert_null(none.dlq[1]);
        sl_metrics_destroy(m);
}

static void test_bucket_edges(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        static const double b[] = {1, 2, 5};
        sl_histogram_t *h = sl_metrics_histogram(m, "e", "E.", b, 3, NULL);

        sl_histogram_observe(h, -3);        /* below everything: le=1 */
        sl_histogram_observe(h, 1);         /* equal to a bound: le=1 */
        sl_histogram_observe(h, 1.0000001); /* just above: le=2 */
        sl_histogram_observe(h, 2);         /* le=2 */
        sl_histogram_observe(h, 5);         /* le=5 */
        sl_histogram_observe(h, 5.5);       /* +Inf */
        sl_histogram_observe(h, INFINITY);  /* +Inf */
        sl_histogram_observe(h, NAN);       /* ignored */

        char *text = render_app(m);
        assert_non_null(strstr(text, "e_bucket{le=\"1\"} 2\n"
                                     "e_bucket{le=\"2\"} 4\n"
                                     "e_bucket{le=\"5\"} 5\n"
                                     "e_bucket{le=\"+Inf\"} 7\n"
                                     "e_sum +Inf\n"
                                     "e_count 7\n"));
        free(text);
        assert_int_equal(sl_histogram_count(h), 7);
        sl_metrics_destroy(m);
}

static void test_quantile(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        static const double b[] = {1, 2, 4};
        sl_histogram_t *h = sl_metrics_histogram(m, "q", "Q.", b, 3, NULL);

        assert_true(isnan(sl_histogram_quantile(h, 0.5)));

        /* 10 in (1, 2]: the median interpolates to the bucket's middle. */
        for (int i = 0; i < 10; i++)
                sl_histogram_observe(h, 1.5);
        assert_float_equal(sl_histogram_quantile(h, 0.5), 1.5, 1e-9);
        assert_float_equal(sl_histogram_quantile(h, 1), 2.0, 1e-9);
        assert_float_equal(sl_histogram_quantile(h, 0), 1.0, 1e-9);
        assert_float_equal(sl_histogram_quantile(h, 0.1), 1.1, 1e-9);

        /* 10 more in (0, 1]: half the mass there; p25 = 0.5 (lower bound 0
         * for the first bucket). */
        for (int i = 0; i < 10; i++)
                sl_histogram_observe(h, 0.5);
        assert_float_equal(sl_histogram_quantile(h, 0.25), 0.5, 1e-9);
        assert_float_equal(sl_histogram_quantile(h, 0.75), 1.5, 1e-9);

        /* Mass beyond the last bound reads as the highest finite bound. */
        for (int i = 0; i < 80; i++)
                sl_histogram_observe(h, 100);
        assert_float_equal(sl_histogram_quantile(h, 0.99), 4.0, 1e-9);
        assert_float_equal(sl_histogram_quantile(h, 0.2), 2.0, 1e-9);

        assert_true(isnan(sl_histogram_quantile(h, -0.1)));
        assert_true(isnan(sl_histogram_quantile(h, 1.1)));
        assert_int_equal(sl_histogram_count(h), 100);
        assert_float_equal(sl_histogram_sum(h), 15 + 5 + 8000, 1e-9);

        /* The latency set: sorted, 1 ms to 60 s. */
        const double *lb = sl_metrics_buckets_latency;
        size_t ln = sl_metrics_buckets_latency_cnt;
        assert_float_equal(lb[0], 0.001, 1e-12);
        assert_float_equal(lb[ln - 1], 60, 1e-12);
        for (size_t i = 1; i < ln; i++)
                assert_true(lb[i - 1] < lb[i]);
        for (size_t i = 1; i < sl_metrics_buckets_size_cnt; i++)
                assert_true(sl_metrics_buckets_size[i - 1] <
                            sl_metrics_buckets_size[i]);
        sl_metrics_destroy(m);
}

/* The value of an unlabelled sample `name value` in text. */
static double sample_value(const char *text, const char *name) {
        char key[128];
        snprintf(key, sizeof(key), "\n%s ", name);
        const char *p = strstr(text, key);
        assert_non_null(p);
        return strtod(p + strlen(key), NULL);
}

static void test_process_metrics(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        sl_counter_inc(sl_metrics_counter(m, "zz_total", "Z.", NULL));
        sl_counter_inc(sl_metrics_counter(m, "aa_total", "A.", NULL));
        sl_counter_inc(sl_metrics_counter(m, "process_a_total", "P.", NULL));

        /* Burn a little CPU so the counter is above zero. */
        volatile double x = 0;
        for (int i = 0; i < 3000000; i++)
                x += i * 0.5;

        char *text = sl_metrics_render(m, NULL);
        const char *order[] = {
            "# TYPE aa_total counter\n",
            "# TYPE process_a_total counter\n",
            "# TYPE process_cpu_seconds_total counter\n",
            "# TYPE process_resident_memory_bytes gauge\n",
            "# TYPE process_start_time_seconds gauge\n",
            "# TYPE zz_total counter\n",
        };
        const char *prev = text;
        for (size_t i = 0; i < SL_ARRAY_SIZE(order); i++) {
                const char *p = strstr(text, order[i]);
                assert_non_null(p);
                assert_true(p >= prev);
                prev = p;
        }
        double rss = sample_value(text, "process_resident_memory_bytes");
        double cpu = sample_value(text, "process_cpu_seconds_total");
        double start = sample_value(text, "process_start_time_seconds");
        double now = (double)sl_now_ms() / 1000.0;
        assert_true(rss > 100 * 1024 && rss < 1e11);
        assert_true(cpu > 0 && cpu < 3600);
        /* This test process started moments ago (allow clock-tick slack). */
        assert_true(start <= now + 1 && start > now - 600);
        free(text);
        sl_metrics_destroy(m);
}

/*
 * One thread updates (as the loop would) while this one renders (as the HTTP
 * thread would) and keeps creating series.  No crash, no torn values, and
 * the final figures are exact.
 */
#define RACE_N 200000

typedef struct {
        sl_counter_t *c;
        sl_gauge_t *g;
        sl_histogram_t *h;
        volatile int done;
} race_t;

static void *race_updater(void *arg) {
        race_t *r = arg;
        for (int i = 0; i < RACE_N; i++) {
                sl_counter_inc(r->c);
                sl_gauge_add(r->g, 1);
                sl_histogram_observe(r->h, (i % 4) * 0.5); /* 0,.5,1,1.5 */
        }
        __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
        return NULL;
}

static void test_concurrent_render(void **state) {
        (void)state;
        sl_metrics_t *m = sl_metrics_new();
        static const double b[] = {0.5, 1};
        race_t r = {
            .c = sl_metrics_counter(m, "race_total", "R.", NULL),
            .g = sl_metrics_gauge(m, "race_gauge", "R.", NULL),
            .h = sl_metrics_histogram(m, "race_seconds", "R.", b, 2, NULL),
        };
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, race_updater, &r), 0);

        int renders = 0;
        char name[32];
        uint64_t last = 0;
        while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE) || renders < 3) {
                snprintf(name, sizeof(name), "n%d", renders % 50);
                sl_metrics_counter(m, "race_extra_total", "X.", "n", name,
                                   NULL);
                size_t len;
                char *text = sl_metrics_render(m, &len);
                assert_int_equal(strlen(text), len);
                /* Counts only grow between scrapes. */
                uint64_t v = (uint64_t)sample_value(text, "race_total");
                assert_true(v >= last);
                last = v;
                free(text);
                renders++;
        }
        pthread_join(t, NULL);

        char *text = sl_metrics_render(m, NULL);
        assert_non_null(strstr(text, "\nrace_total 200000\n"));
        assert_non_null(strstr(text, "\nrace_gauge 200000\n"));
        assert_non_null(strstr(text, "race_seconds_bucket{le=\"0.5\"} 100000\n"
                                     "race_seconds_bucket{le=\"1\"} 150000\n"
                                     "race_seconds_bucket{le=\"+Inf\"} 200000\n"
                                     "race_seconds_sum 150000\n"
                                     "race_seconds_count 200000\n"));
        free(text);
        assert_int_equal(sl_counter_get(r.c), RACE_N);
        assert_float_equal(sl_gauge_get(r.g), RACE_N, 0);
        sl_metrics_destroy(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_render_exact),
            cmocka_unit_test(test_histogram_no_labels),
            cmocka_unit_test(test_escaping),
            cmocka_unit_test(test_gauge_values),
            cmocka_unit_test(test_get_or_create),
            cmocka_unit_test(test_register_table),
            cmocka_unit_test(test_bucket_edges),
            cmocka_unit_test(test_quantile),
            cmocka_unit_test(test_process_metrics),
            cmocka_unit_test(test_concurrent_render),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
