/* SPDX-License-Identifier: Apache-2.0 */
/*
 * authz.h — refusals by Kafka's authorizer, named and then the end of the
 * process.
 *
 * A refusal cannot heal by retrying: it lasts until an operator grants the
 * ACL.  So sluice says once, in one line, which binding is missing, the
 * way `sluice acls` prints it (acls.h), and exits with status 1 — a loop
 * of aborts or fetch errors would bury the cause among its retries
 * (docs/security.md).  Two kinds go on instead, as docs/security.md says:
 * a missing DescribeConfigs (the broker's limit is assumed) and a delay
 * target's Write (its timers go to the DLQ); those are said once per
 * topic (sl_authz_first).
 *
 * Loop thread only.
 */
#ifndef SL_AUTHZ_H
#define SL_AUTHZ_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "acls.h"
#include "runtime.h"

typedef struct sl_authz_s sl_authz_t;

/* Its state (rt->authz); _destroy(NULL) is a no-op. */
sl_authz_t *sl_authz_new(sl_runtime_t *rt);
void sl_authz_destroy(sl_authz_t *az);

/* What a refusal of op on res:name means (sl_acls_refusal), against the
 * bindings of this configuration (derived at the first call), in buf. */
const char *sl_authz_refusal(sl_runtime_t *rt, sl_acl_resource_t res,
                             const char *name, sl_acl_op_t op, char *buf,
                             size_t size);

/* 1 the first time op on topic is refused (of the last 64 refusals): for
 * the refusals that are said once and go on. */
int sl_authz_first(sl_runtime_t *rt, sl_acl_op_t op, const char *topic);

/* Says that op on res:name was refused and ends the process (status 1).
 * name NULL: Kafka did not say which (`what` stands for it then). */
void sl_authz_refused(sl_runtime_t *rt, sl_acl_resource_t res, const char *name,
                      sl_acl_op_t op, const char *what);

/* A fetch or group error of a consumer: 1 when the authorizer refused it
 * (and the process ends), else 0.  reader: the rebuild reader or the
 * lookup client (their group id only looked up), else the group
 * consumer; topic NULL when the error came without a partition. */
int sl_authz_fetch_refused(sl_runtime_t *rt, int reader,
                           rd_kafka_resp_err_t err, const char *topic,
                           const char *errstr);

/* The first pipeline input named in text, or NULL (Kafka's error strings
 * name the partitions it refused). */
const char *sl_authz_input_in(const sl_runtime_t *rt, const char *text);

#endif
