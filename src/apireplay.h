/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apireplay.h — the HTTP API's DLQ replays (POST and GET
 * /v1/pipelines/{p}/dlq/replay, api.c): each runs the CLI's engine
 * (dlqreplay.h) on a thread of its own, so neither the loop nor a
 * connection's thread waits for it; the API answers at once and the
 * client asks for the state until it is done.
 *
 * One replay per pipeline at a time in this instance: a second one is
 * refused while the first runs (the API's 409).  Two instances that each
 * run one for the same pipeline share its transactional id, and Kafka
 * fences the older (it fails; nothing is committed twice).
 *
 * The state of a pipeline's last replay stays until the next starts: its
 * options, running/done/failed, what it replayed (or would, in a dry run)
 * and skipped, per partition once done, the first SL_APIREPLAY_RECORDS
 * records it replayed or could not replay, and the failure's reason.
 *
 * THREADS: any thread may call these but _destroy; one lock guards the
 * states.
 */
#ifndef SL_APIREPLAY_H
#define SL_APIREPLAY_H

#include "config.h"
#include "dlqreplay.h"

typedef struct json_t json_t;
typedef struct sl_apireplay_s sl_apireplay_t;

/* The records a state lists at most. */
#define SL_APIREPLAY_RECORDS 100

/* The replays of conf's pipelines (conf borrowed; it outlives them). */
sl_apireplay_t *sl_apireplay_new(const sl_conf_t *conf);

/* Starts a replay of pipeline (index into conf->pipelines; it has a
 * DLQ) as o says (copied).  Returns 0 and its state in *state (a new
 * reference), or -1 when one of that pipeline runs (*state: its state). */
int sl_apireplay_start(sl_apireplay_t *r, int pipeline,
                       const sl_dlqreplay_opts_t *o, json_t **state);

/* The state of pipeline's last replay (a new reference), or NULL when
 * none was started since sluice started. */
json_t *sl_apireplay_state(sl_apireplay_t *r, int pipeline);

/* Ends the replays that run (what they committed stays), waits for their
 * threads and frees r.  NULL is a no-op. */
void sl_apireplay_destroy(sl_apireplay_t *r);

#endif
