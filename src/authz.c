/* SPDX-License-Identifier: Apache-2.0 */
/*
 * authz.c — refusals by Kafka's authorizer (see authz.h).
 */
#include "authz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hash.h"
#include "log.h"
#include "util.h"

/* Refusals said once (sl_authz_first): the last this many. */
#define SL_AUTHZ_SAID 64

struct sl_authz_s {
        sl_runtime_t *rt;
        sl_acls_t *acls; /* the bindings conf needs, made at first use */
        uint64_t said[SL_AUTHZ_SAID]; /* hashes of op and topic, 0 empty */
        unsigned said_next;
};

sl_authz_t *sl_authz_new(sl_runtime_t *rt) {
        sl_authz_t *az = sl_calloc(1, sizeof(*az));
        az->rt = rt;
        return az;
}

void sl_authz_destroy(sl_authz_t *az) {
        if (!az)
                return;
        sl_acls_destroy(az->acls);
        free(az);
}

const char *sl_authz_refusal(sl_runtime_t *rt, sl_acl_resource_t res,
                             const char *name, sl_acl_op_t op, char *buf,
                             size_t size) {
        sl_authz_t *az = rt->authz;
        if (!az->acls)
                az->acls = sl_acls_new(rt->conf);
        return sl_acls_refusal(az->acls, res, name, op, buf, size);
}

int sl_authz_first(sl_runtime_t *rt, sl_acl_op_t op, const char *topic) {
        sl_authz_t *az = rt->authz;
        uint64_t h = (sl_hash(topic, strlen(topic)) + (uint64_t)op) | 1;
        for (int i = 0; i < SL_AUTHZ_SAID; i++)
                if (az->said[i] == h)
                        return 0;
        az->said[az->said_next++ % SL_AUTHZ_SAID] = h;
        return 1;
}

void sl_authz_refused(sl_runtime_t *rt, sl_acl_resource_t res, const char *name,
                      sl_acl_op_t op, const char *what) {
        char buf[512];
        if (rt->phase == SL_RUN_STOPPED)
                return;
        if (name)
                sl_authz_refusal(rt, res, name, op, buf, sizeof(buf));
        else
                snprintf(buf, sizeof(buf), "%s on a %s of %s",
                         op == SL_ACL_ANY ? "an operation" : sl_acl_op_name(op),
                         sl_acl_resource_name(res), what);
        sl_log(LOG_CRIT, "AUTHZ",
               "not authorized: %s; exiting (%s; `sluice acls -c %s` prints "
               "every binding sluice needs)",
               buf, what, rt->conf->path ? rt->conf->path : "FILE");
        sl_runtime_exit(rt, SL_EXIT_FAIL);
}

const char *sl_authz_input_in(const sl_runtime_t *rt, const char *text) {
        for (int i = 0; text && i < rt->conf->pipeline_cnt; i++)
                if (strstr(text, rt->conf->pipelines[i].input))
                        return rt->conf->pipelines[i].input;
        return NULL;
}

int sl_authz_fetch_refused(sl_runtime_t *rt, int reader,
                           rd_kafka_resp_err_t err, const char *topic,
                           const char *errstr) {
        if (err != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
            err != RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
                return 0;
        if (err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED) {
                if (reader)
                        sl_authz_refused(rt, SL_ACL_GROUP,
                                         SL_ACLS_REBUILD_GROUP, SL_ACL_DESCRIBE,
                                         errstr);
                else
                        sl_authz_refused(rt, SL_ACL_GROUP, rt->conf->app_id,
                                         SL_ACL_READ, errstr);
                return 1;
        }
        if (!topic && !reader)
                topic = sl_authz_input_in(rt, errstr);
        sl_authz_refused(rt, SL_ACL_TOPIC, topic, SL_ACL_READ, errstr);
        return 1;
}
