/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.c — the pipelines of a running process (see pipeline.h).
 */
#include "pipeline.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "describe.h"
#include "kafka.h"
#include "ops.h"
#include "parts.h"
#include "reader.h"
#include "util.h"

/* Every pipeline's series, whatever its type (labelled pipeline="<name>"). */
static const sl_metric_def_t pipeline_metrics[] = {
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, records_in,
                       "sluice_records_in_total", "Input records read."),
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, records_out,
                       "sluice_records_out_total",
                       "Records produced to outputs/targets."),
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, records_rerouted,
                       "sluice_records_rerouted_total",
                       "Keyed input records that arrived on a partition their "
                       "key does not belong to (input_partitioner) and were "
                       "moved to the right one."),
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, rebuild_records,
                       "sluice_rebuild_records_total",
                       "Changelog records applied during rebuilds."),
    SL_METRICS_GAUGE(sl_pipeline_metrics_t, rebuild_seconds,
                     "sluice_rebuild_last_seconds",
                     "Duration of the last partition rebuild."),
    SL_METRICS_GAUGE_L(sl_pipeline_metrics_t, partitions_running,
                       "sluice_partitions", "Assigned partitions by state.",
                       "state", "running"),
    SL_METRICS_GAUGE_L(sl_pipeline_metrics_t, partitions_rebuilding,
                       "sluice_partitions", "Assigned partitions by state.",
                       "state", "rebuilding"),
    SL_METRICS_GAUGE(
        sl_pipeline_metrics_t, consumer_lag, "sluice_consumer_lag",
        "Input records not yet processed (assigned partitions, rebuilding "
        "ones included)."),
};

/* Starts pl's global table, when its operator has one. */
static int pipeline_table(sl_runtime_t *rt, sl_pipeline_t *pl, char *errstr,
                          size_t errstr_size) {
        const char *topic =
            pl->op->table_topic ? pl->op->table_topic(pl) : NULL;
        int cnt;
        if (!topic)
                return 0;
        cnt = sl_kafka_partition_count(rt->reader, topic, 10000);
        if (cnt == SL_KAFKA_PARTS_REFUSED) {
                char why[400];
                snprintf(errstr, errstr_size,
                         "pipeline %s: topic %s is hidden: not authorized: %s",
                         pl->conf->name, topic,
                         sl_authz_refusal(rt, SL_ACL_TOPIC, topic, SL_ACL_READ,
                                          why, sizeof(why)));
                return -1;
        }
        if (cnt <= 0) {
                snprintf(errstr, errstr_size,
                         "pipeline %s: topic %s %s (run `sluice topics apply`)",
                         pl->conf->name, topic,
                         cnt == 0 ? "does not exist" : "cannot be described");
                return -1;
        }
        return sl_reader_table_start(rt, pl, cnt, errstr, errstr_size);
}

/* Sets up pipeline i, whose input has cnt partitions. */
static int pipeline_init(sl_runtime_t *rt, int i, int cnt, char *errstr,
                         size_t errstr_size) {
        sl_pipeline_t *pl = &rt->pipelines[i];
        const sl_pipeline_conf_t *pc = &rt->conf->pipelines[i];

        pl->conf = pc;
        pl->rt = rt;
        pl->index = i;
        if (!(pl->op = sl_op_of(pc->type))) {
                snprintf(errstr, errstr_size,
                         "pipeline %s: type %s is not available in this build",
                         pc->name, sl_op_type_name(pc->type));
                return -1;
        }
        pl->partition_cnt = cnt;
        pl->tasks = sl_calloc(cnt, sizeof(*pl->tasks));
        pl->metrics = sl_calloc(1, sizeof(*pl->metrics));
        sl_metrics_register(rt->metrics, pipeline_metrics,
                            SL_ARRAY_SIZE(pipeline_metrics), pl->metrics,
                            pc->name);
        pl->parts = sl_parts_new(rt, pl);
        if (pl->op->pipeline_init &&
            pl->op->pipeline_init(pl, errstr, errstr_size) == -1)
                return -1;
        return pipeline_table(rt, pl, errstr, errstr_size);
}

int sl_pipeline_create_all(sl_runtime_t *rt, char *errstr, size_t errstr_size) {
        int *in_cnt =
            sl_calloc((size_t)rt->conf->pipeline_cnt + 1, sizeof(*in_cnt));
        int r;

        /* Before the loop runs: a blocking look is fine here. */
        r = sl_parts_check_start(rt->reader, rt->conf, in_cnt, errstr,
                                 errstr_size);
        if (r == 0) {
                rt->pipeline_cnt = rt->conf->pipeline_cnt;
                rt->pipelines =
                    sl_calloc(rt->pipeline_cnt, sizeof(sl_pipeline_t));
                for (int i = 0; i < rt->pipeline_cnt && r == 0; i++)
                        r = pipeline_init(rt, i, in_cnt[i], errstr,
                                          errstr_size);
        }
        free(in_cnt);
        return r;
}

void sl_pipeline_destroy_all(sl_runtime_t *rt) {
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &rt->pipelines[i];
                if (pl->op && pl->op->pipeline_destroy)
                        pl->op->pipeline_destroy(pl);
                sl_parts_destroy(pl->parts);
                free(pl->tasks);
                free(pl->metrics);
                sl_reader_table_free(pl);
                sl_pipeline_caps_destroy(pl);
        }
        free(rt->pipelines);
        rt->pipelines = NULL;
        rt->pipeline_cnt = 0;
}

static void task_drop(sl_task_t *t, void *opaque) {
        (void)opaque;
        t->pl->tasks[t->partition] = NULL;
        sl_task_destroy(t);
}

void sl_pipeline_drop_tasks(sl_runtime_t *rt) {
        sl_pipeline_foreach_task(rt, task_drop, NULL);
}

void sl_pipeline_foreach_task(sl_runtime_t *rt,
                              void (*fn)(sl_task_t *t, void *opaque),
                              void *opaque) {
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &rt->pipelines[i];
                for (int p = 0; p < pl->partition_cnt; p++)
                        if (pl->tasks[p])
                                fn(pl->tasks[p], opaque);
        }
}

sl_pipeline_t *sl_pipeline_by_input(sl_runtime_t *rt, const char *topic) {
        for (int i = 0; i < rt->pipeline_cnt; i++)
                if (!strcmp(rt->pipelines[i].conf->input, topic))
                        return &rt->pipelines[i];
        return NULL;
}

sl_task_t *sl_pipeline_task(sl_runtime_t *rt, const char *topic, int32_t p) {
        sl_pipeline_t *pl = sl_pipeline_by_input(rt, topic);
        return pl && p >= 0 && p < pl->partition_cnt ? pl->tasks[p] : NULL;
}

sl_task_t *sl_pipeline_task_at(sl_runtime_t *rt, int pl_index, int32_t p) {
        if (pl_index < 0 || pl_index >= rt->pipeline_cnt || p < 0 ||
            p >= rt->pipelines[pl_index].partition_cnt)
                return NULL;
        return rt->pipelines[pl_index].tasks[p];
}

static void task_count(sl_task_t *t, void *opaque) {
        (void)t;
        (*(int *)opaque)++;
}

int sl_pipeline_task_cnt(sl_runtime_t *rt) {
        int n = 0;
        sl_pipeline_foreach_task(rt, task_count, &n);
        return n;
}

int sl_pipeline_tracks_deliveries(const sl_runtime_t *rt) {
        for (int i = 0; i < rt->pipeline_cnt; i++)
                if (rt->pipelines[i].op->delivered &&
                    (!rt->pipelines[i].op->tracks ||
                     rt->pipelines[i].op->tracks(&rt->pipelines[i])))
                        return 1;
        return 0;
}

sl_api_lookup_t sl_pipeline_describe(void *opaque, int pi, int32_t p,
                                     const void *key, size_t keylen,
                                     char **jsonp) {
        sl_runtime_t *rt = opaque;
        sl_pipeline_t *pl;
        sl_task_t *t;
        json_t *j;
        int gone;

        if (pi < 0 || pi >= rt->pipeline_cnt)
                return SL_API_UNOWNED;
        pl = &rt->pipelines[pi];
        /* Ownership first: another member's partition is forwarded there,
         * whatever this one can describe. */
        if (!pl->tasks || p < 0 || p >= pl->partition_cnt ||
            !(t = pl->tasks[p]))
                return SL_API_UNOWNED;
        if (t->state != SL_TASK_RUNNING || t->revoking)
                return SL_API_REBUILDING;
        if (!pl->op || !pl->op->describe)
                return SL_API_UNSUPPORTED;
        if (!(j = pl->op->describe(t, key, keylen)))
                return SL_API_ABSENT;
        if (sl_describe_is_retry(j)) {
                json_decref(j);
                return SL_API_READING;
        }
        gone = sl_describe_gone_due(j) >= 0;
        *jsonp = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!*jsonp)
                return SL_API_ABSENT;
        return gone ? SL_API_GONE : SL_API_FOUND;
}
