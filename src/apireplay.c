/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apireplay.c — the HTTP API's DLQ replays (see apireplay.h).
 *
 * A job per pipeline, made at its first start and kept: its thread runs
 * sl_dlqreplay_run(); the engine's callbacks count and list records into
 * the job under the lock, and the end writes the result there, so that a
 * state is made from the job alone, under the lock, at any time.  A
 * finished job's thread is joined by the next start of that pipeline, or
 * by _destroy.
 */
#include "apireplay.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "describe.h"
#include "log.h"
#include "util.h"

typedef enum { JOB_IDLE = 0, JOB_RUNNING, JOB_DONE, JOB_FAILED } job_state_t;

typedef struct job_s {
        sl_apireplay_t *r;
        int pipeline;
        job_state_t state;
        int has_thread; /* started, not joined yet */
        pthread_t thread;
        /* The options, with copies of the reasons. */
        sl_dlqreplay_opts_t o;
        char *reasons[SL_DLQREPLAY_MAX_REASONS];
        int64_t started_ms, finished_ms;
        /* As it goes (the callbacks), then at the end. */
        int64_t replayed, skips[SL_DLQREPLAY_SKIP__CNT];
        json_t *records;           /* the first SL_APIREPLAY_RECORDS */
        int64_t listed_out;        /* records not listed */
        sl_dlqreplay_result_t res; /* set at the end */
        char id[512];
        char error[512];
} job_t;

struct sl_apireplay_s {
        const sl_conf_t *conf;
        pthread_mutex_t lock;
        atomic_int cancel;
        job_t **jobs; /* per pipeline, NULL until its first start */
};

sl_apireplay_t *sl_apireplay_new(const sl_conf_t *conf) {
        sl_apireplay_t *r = sl_calloc(1, sizeof(*r));

        r->conf = conf;
        pthread_mutex_init(&r->lock, NULL);
        r->jobs = sl_calloc((size_t)conf->pipeline_cnt + 1, sizeof(*r->jobs));
        return r;
}

/* Forgets what the last run of j said (lock held, no thread). */
static void job_reset(job_t *j) {
        for (int i = 0; i < SL_DLQREPLAY_MAX_REASONS; i++) {
                free(j->reasons[i]);
                j->reasons[i] = NULL;
        }
        json_decref(j->records);
        j->records = json_array();
        sl_dlqreplay_result_clear(&j->res);
        memset(&j->res, 0, sizeof(j->res));
        j->replayed = j->listed_out = 0;
        memset(j->skips, 0, sizeof(j->skips));
        j->started_ms = j->finished_ms = 0;
        j->error[0] = j->id[0] = '\0';
}

static void on_started(void *opaque, const sl_dlqreplay_result_t *res) {
        job_t *j = opaque;

        pthread_mutex_lock(&j->r->lock);
        snprintf(j->id, sizeof(j->id), "%s", res->id);
        pthread_mutex_unlock(&j->r->lock);
}

/* A record of the state: where, key, size, the headers replayed, and
 * why not when it was not. */
static json_t *record_json(const sl_dlqreplay_rec_t *rec) {
        json_t *o = json_object(), *hs = json_array();
        const char *name;
        const void *val;
        size_t len;

        json_object_set_new(o, "partition", json_integer(rec->partition));
        json_object_set_new(o, "offset", json_integer(rec->offset));
        sl_describe_time(o, "timestamp", rec->timestamp_ms);
        if (rec->key)
                sl_describe_bytes(o, "key", rec->key, rec->key_len);
        else
                json_object_set_new(o, "key", json_null());
        json_object_set_new(o, "value_bytes", json_integer(rec->value_len));
        for (size_t i = 0; rec->hdrs && !rd_kafka_header_get_all(
                                            rec->hdrs, i, &name, &val, &len);
             i++) {
                json_t *h = json_object();
                json_object_set_new(h, "name", json_string(name));
                if (val)
                        sl_describe_bytes(h, "value", val, len);
                else
                        json_object_set_new(h, "value", json_null());
                json_array_append_new(hs, h);
        }
        json_object_set_new(o, "headers", hs);
        json_object_set_new(
            o, "skipped",
            rec->skip < 0 ? json_null()
                          : json_string(sl_dlqreplay_skip_name(rec->skip)));
        return o;
}

static void on_record(void *opaque, const sl_dlqreplay_rec_t *rec) {
        job_t *j = opaque;
        int listed = rec->skip < 0 || rec->skip >= SL_DLQREPLAY_SKIP_CUT;
        json_t *o = NULL;

        if (listed && json_array_size(j->records) < SL_APIREPLAY_RECORDS)
                o = record_json(rec); /* only this thread adds records */
        pthread_mutex_lock(&j->r->lock);
        if (rec->skip < 0)
                j->replayed++;
        else
                j->skips[rec->skip]++;
        if (o)
                json_array_append_new(j->records, o);
        else if (listed)
                j->listed_out++;
        pthread_mutex_unlock(&j->r->lock);
}

static void *job_main(void *arg) {
        job_t *j = arg;
        sl_apireplay_t *r = j->r;
        const sl_pipeline_conf_t *pc = &r->conf->pipelines[j->pipeline];
        sl_dlqreplay_cbs_t cbs = {on_started, on_record, j};
        sl_dlqreplay_result_t res;
        char errstr[512];
        int rc;

        sl_log(LOG_NOTICE, "DLQ", "replay of %s to %s started%s by the API",
               pc->dlq, pc->input, j->o.dry_run ? " (dry run)" : "");
        rc = sl_dlqreplay_run(r->conf, pc, &j->o, &cbs, &r->cancel, &res,
                              errstr, sizeof(errstr));
        if (rc)
                sl_log(LOG_WARNING, "DLQ", "replay of %s: %s", pc->dlq, errstr);
        sl_log(LOG_NOTICE, "DLQ",
               "replay of %s %s: %s %" PRId64 ", skipped %" PRId64, pc->dlq,
               rc ? "failed" : "done",
               j->o.dry_run ? "would replay" : "replayed", res.replayed,
               res.skipped);
        pthread_mutex_lock(&r->lock);
        j->res = res;
        snprintf(j->id, sizeof(j->id), "%s", res.id);
        if (rc)
                snprintf(j->error, sizeof(j->error), "%s", errstr);
        j->finished_ms = sl_now_ms();
        j->state = rc ? JOB_FAILED : JOB_DONE;
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

static json_t *opt_int(int64_t v) {
        return v < 0 ? json_null() : json_integer(v);
}

/* The state of j (lock held). */
static json_t *job_state(const sl_apireplay_t *r, const job_t *j) {
        static const char *const states[] = {"idle", "running", "done",
                                             "failed"};
        const sl_pipeline_conf_t *pc = &r->conf->pipelines[j->pipeline];
        json_t *o = json_object(), *opts = json_object(),
               *reasons = json_array(), *by = json_object();
        int64_t skipped = 0;

        json_object_set_new(o, "pipeline", json_string(pc->name));
        json_object_set_new(o, "state", json_string(states[j->state]));
        json_object_set_new(o, "dry_run", json_boolean(j->o.dry_run));
        json_object_set_new(o, "dlq", json_string(pc->dlq));
        json_object_set_new(o, "input", json_string(pc->input));
        json_object_set_new(o, "group",
                            j->id[0] ? json_string(j->id) : json_null());
        for (int i = 0; i < j->o.reason_cnt; i++)
                json_array_append_new(reasons, json_string(j->o.reasons[i]));
        json_object_set_new(opts, "reasons", reasons);
        sl_describe_time(opts, "since",
                         j->o.since < 0 ? INT64_MIN : j->o.since);
        sl_describe_time(opts, "until",
                         j->o.until < 0 ? INT64_MIN : j->o.until);
        json_object_set_new(opts, "limit", opt_int(j->o.limit));
        json_object_set_new(opts, "from_beginning",
                            json_boolean(j->o.from_beginning));
        json_object_set_new(o, "options", opts);
        sl_describe_time(o, "started_at", j->started_ms);
        sl_describe_time(o, "finished_at",
                         j->finished_ms ? j->finished_ms : INT64_MIN);
        json_object_set_new(o, "replayed", json_integer(j->replayed));
        for (int s = 0; s < SL_DLQREPLAY_SKIP__CNT; s++) {
                skipped += j->skips[s];
                json_object_set_new(by, sl_dlqreplay_skip_name(s),
                                    json_integer(j->skips[s]));
        }
        json_object_set_new(o, "skipped", json_integer(skipped));
        json_object_set_new(o, "skipped_by", by);
        if (j->state == JOB_DONE || j->state == JOB_FAILED) {
                json_t *parts = json_array();
                for (int p = 0; p < j->res.part_cnt && j->res.started; p++) {
                        const sl_dlqreplay_part_t *dp = &j->res.parts[p];
                        json_array_append_new(
                            parts,
                            json_pack("{s:i, s:I, s:I, s:I, s:I, s:I}",
                                      "partition", p, "start",
                                      (json_int_t)dp->start, "next",
                                      (json_int_t)dp->next, "end",
                                      (json_int_t)dp->end, "replayed",
                                      (json_int_t)dp->replayed, "skipped",
                                      (json_int_t)dp->skipped));
                }
                json_object_set_new(o, "partitions", parts);
        }
        /* A copy: the run's thread adds to j->records. */
        json_object_set_new(o, "records", json_deep_copy(j->records));
        json_object_set_new(o, "records_not_listed",
                            json_integer(j->listed_out));
        json_object_set_new(o, "error",
                            j->state == JOB_FAILED ? json_string(j->error)
                                                   : json_null());
        return o;
}

int sl_apireplay_start(sl_apireplay_t *r, int pipeline,
                       const sl_dlqreplay_opts_t *o, json_t **state) {
        job_t *j;
        pthread_t old;
        int join = 0;

        sl_assert(pipeline >= 0 && pipeline < r->conf->pipeline_cnt);
        pthread_mutex_lock(&r->lock);
        if (!(j = r->jobs[pipeline])) {
                j = r->jobs[pipeline] = sl_calloc(1, sizeof(*j));
                j->r = r;
                j->pipeline = pipeline;
        }
        if (j->state == JOB_RUNNING) {
                *state = job_state(r, j);
                pthread_mutex_unlock(&r->lock);
                return -1;
        }
        if (j->has_thread) {
                /* Finished: its thread has returned or is returning. */
                old = j->thread;
                join = 1;
                j->has_thread = 0;
        }
        job_reset(j);
        j->o = *o;
        for (int i = 0; i < o->reason_cnt; i++)
                j->o.reasons[i] = j->reasons[i] = sl_strdup(o->reasons[i]);
        j->started_ms = sl_now_ms();
        j->state = JOB_RUNNING;
        if (pthread_create(&j->thread, NULL, job_main, j) != 0) {
                j->state = JOB_FAILED;
                j->finished_ms = j->started_ms;
                snprintf(j->error, sizeof(j->error),
                         "could not start a thread");
        } else {
                j->has_thread = 1;
        }
        *state = job_state(r, j);
        pthread_mutex_unlock(&r->lock);
        if (join)
                pthread_join(old, NULL);
        return 0;
}

json_t *sl_apireplay_state(sl_apireplay_t *r, int pipeline) {
        json_t *s = NULL;

        sl_assert(pipeline >= 0 && pipeline < r->conf->pipeline_cnt);
        pthread_mutex_lock(&r->lock);
        if (r->jobs[pipeline])
                s = job_state(r, r->jobs[pipeline]);
        pthread_mutex_unlock(&r->lock);
        return s;
}

void sl_apireplay_destroy(sl_apireplay_t *r) {
        if (!r)
                return;
        atomic_store(&r->cancel, 1);
        for (int i = 0; i < r->conf->pipeline_cnt; i++) {
                job_t *j = r->jobs[i];
                if (!j)
                        continue;
                if (j->has_thread)
                        pthread_join(j->thread, NULL);
                job_reset(j);
                json_decref(j->records);
                free(j);
        }
        free(r->jobs);
        pthread_mutex_destroy(&r->lock);
        free(r);
}
