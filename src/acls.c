/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acls.c — the Kafka ACL bindings of a configuration and their two
 * renderings (see acls.h for what each binding is for).
 *
 * The derivation walks the topic plan pipeline by pipeline, so a topic
 * shared by two pipelines (one's output the other's input, a shared DLQ)
 * is listed where it first appears, and every later reason is added to
 * that binding's why bits.
 *
 * The command rendering groups the bindings by what they are for (the
 * section of the binding's first reason), and within a section puts the
 * resources that need the same operations on one kafka-acls.sh line, so
 * it reads like a hand-written list: the inputs, the state topics, the
 * sinks, the targets, the groups, the transactional id, DescribeConfigs,
 * and last what a DLQ replay adds.  Every binding is granted by exactly
 * one line.
 */
#include "acls.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "apireq.h"
#include "topicplan.h"
#include "util.h"

/* Columns of a command line and of a comment line: the longest
 * one-resource kafka-acls.sh line fits. */
#define LINE_WIDTH    84
#define COMMENT_WIDTH 72

const char *sl_acl_resource_name(sl_acl_resource_t resource) {
        switch (resource) {
        case SL_ACL_TOPIC:
                return "TOPIC";
        case SL_ACL_GROUP:
                return "GROUP";
        case SL_ACL_TRANSACTIONAL_ID:
                return "TRANSACTIONAL_ID";
        }
        return "?";
}

const char *sl_acl_pattern_name(sl_acl_pattern_t pattern) {
        switch (pattern) {
        case SL_ACL_LITERAL:
                return "LITERAL";
        case SL_ACL_PREFIXED:
                return "PREFIXED";
        }
        return "?";
}

const char *sl_acl_op_name(sl_acl_op_t op) {
        switch (op) {
        case SL_ACL_READ:
                return "READ";
        case SL_ACL_WRITE:
                return "WRITE";
        case SL_ACL_DESCRIBE:
                return "DESCRIBE";
        case SL_ACL_DESCRIBE_CONFIGS:
                return "DESCRIBE_CONFIGS";
        }
        return "?";
}

/* kafka-acls.sh's names. */
static const char *op_option(sl_acl_op_t op) {
        switch (op) {
        case SL_ACL_READ:
                return "Read";
        case SL_ACL_WRITE:
                return "Write";
        case SL_ACL_DESCRIBE:
                return "Describe";
        case SL_ACL_DESCRIBE_CONFIGS:
                return "DescribeConfigs";
        }
        return "?";
}

static const char *resource_option(sl_acl_resource_t resource) {
        switch (resource) {
        case SL_ACL_TOPIC:
                return "--topic";
        case SL_ACL_GROUP:
                return "--group";
        case SL_ACL_TRANSACTIONAL_ID:
                return "--transactional-id";
        }
        return "?";
}

/*
 * Derivation
 */

char *sl_acls_glob_pattern(const char *glob, sl_acl_pattern_t *pattern) {
        size_t k = strcspn(glob, "*?[");

        if (!glob[k]) {
                *pattern = SL_ACL_LITERAL;
                return sl_strdup(glob);
        }
        if (k == 0) {
                /* Kafka has no suffix patterns: every topic. */
                *pattern = SL_ACL_LITERAL;
                return sl_strdup("*");
        }
        *pattern = SL_ACL_PREFIXED;
        return sl_strndup(glob, k);
}

typedef struct {
        sl_acls_t *acls;
        int alloc;
} builder_t;

/* Adds glob to the list in *globs ("a.*, a.**"), once. */
static void glob_add(char **globs, const char *glob) {
        size_t n = strlen(glob);
        const char *p = *globs;
        char *s;

        /* A glob holds neither ',' nor ' ' (sl_globs_parse splits there). */
        while (p) {
                if (!strncmp(p, glob, n) && (!p[n] || p[n] == ','))
                        return;
                if ((p = strchr(p, ',')))
                        p += 2;
        }
        if (asprintf(&s, "%s%s%s", *globs ? *globs : "", *globs ? ", " : "",
                     glob) < 0)
                sl_assert(!"out of memory");
        free(*globs);
        *globs = s;
}

static void add(builder_t *b, sl_acl_resource_t resource,
                sl_acl_pattern_t pattern, const char *name, sl_acl_op_t op,
                unsigned why, const char *glob) {
        sl_acls_t *a = b->acls;
        sl_acl_t *e = NULL;

        for (int i = 0; i < a->cnt && !e; i++)
                if (a->acls[i].resource == resource &&
                    a->acls[i].pattern == pattern && a->acls[i].op == op &&
                    !strcmp(a->acls[i].name, name))
                        e = &a->acls[i];
        if (!e) {
                if (a->cnt == b->alloc) {
                        b->alloc = b->alloc ? b->alloc * 2 : 32;
                        a->acls =
                            sl_realloc(a->acls, sizeof(*a->acls) * b->alloc);
                }
                e = &a->acls[a->cnt++];
                memset(e, 0, sizeof(*e));
                e->resource = resource;
                e->pattern = pattern;
                e->name = sl_strdup(name);
                e->op = op;
                e->first = why;
        }
        e->why |= why;
        if (glob)
                glob_add(&e->glob, glob);
}

static void topic(builder_t *b, const char *name, sl_acl_op_t op,
                  unsigned why) {
        add(b, SL_ACL_TOPIC, SL_ACL_LITERAL, name, op, why, NULL);
}

/* 1 when one of the HTTP API's write routes for pipeline p (its
 * operator's, apireq.h) writes to p's topic of role r. */
static int api_writes(const sl_pipeline_conf_t *p, const sl_roledef_t *r) {
        const sl_opdef_t *op = sl_opdef_of(p->type);

        for (int i = 0; op && i < op->route_cnt; i++)
                if (op->routes[i].kind == SL_ROUTE_WRITE &&
                    !strcmp(op->routes[i].topic, r->name))
                        return 1;
        return 0;
}

/* What a topic of the plan needs, by what its role says (opdef.h): Read
 * where sluice reads it; Write where it writes it, and on an input where
 * reroute moves records or the API writes (timers, cancels, flushes;
 * a throttle's rates); DescribeConfigs on each, for the limit a record
 * written there must respect (targets.c's sl_targets_learn_limits
 * describes every topic of the plan but the rates) and for `sluice topics
 * check`, which reads the configs of every topic it checks. */
static void spec_acls(builder_t *b, const sl_conf_t *conf,
                      const sl_pipeline_conf_t *p, const sl_topic_spec_t *s) {
        const sl_roledef_t *r = s->def;
        int api = conf->api_listen && *conf->api_listen && p->api;

        if (r->flags & SL_ROLE_READ)
                topic(b, s->name, SL_ACL_READ, r->acl_why);
        if (r->flags & SL_ROLE_INPUT && p->reroute)
                topic(b, s->name, SL_ACL_WRITE, SL_ACL_WHY_REROUTE);
        if (api && api_writes(p, r))
                topic(b, s->name, SL_ACL_WRITE, r->acl_api_why);
        if (r->flags & SL_ROLE_WRITE)
                topic(b, s->name, SL_ACL_WRITE, r->acl_why);
        topic(b, s->name, SL_ACL_DESCRIBE_CONFIGS, SL_ACL_WHY_LIMITS);
}

/* The targets its records may name (a delay pipeline's allowed_targets):
 * each glob's topic pattern. */
static void target_acls(builder_t *b, const sl_pipeline_conf_t *p) {
        const sl_opdef_t *op = sl_opdef_of(p->type);
        const sl_globs_t *g = op && op->targets ? op->targets(p) : NULL;

        for (int i = 0; g && i < g->cnt; i++) {
                const char *glob = g->pat[i];
                sl_acl_pattern_t pattern;
                char *name = sl_acls_glob_pattern(glob, &pattern);

                add(b, SL_ACL_TOPIC, pattern, name, SL_ACL_WRITE,
                    SL_ACL_WHY_TARGET, glob);
                add(b, SL_ACL_TOPIC, pattern, name, SL_ACL_DESCRIBE_CONFIGS,
                    SL_ACL_WHY_LIMITS, NULL);
                free(name);
        }
}

sl_acls_t *sl_acls_new(const sl_conf_t *conf) {
        builder_t b = {sl_calloc(1, sizeof(sl_acls_t)), 0};
        sl_topicplan_t *plan = sl_topicplan_new(conf);
        const char *app_id = conf->app_id ? conf->app_id : "sluice";
        char *txn_prefix;

        b.acls->path = sl_strdup(conf->path ? conf->path : "");
        b.acls->app_id = sl_strdup(app_id);
        for (int i = 0; i < conf->pipeline_cnt; i++) {
                const sl_pipeline_conf_t *p = &conf->pipelines[i];
                const char *pn = p->name ? p->name : "?";

                /* Pipeline names are unique (config.c). */
                for (int j = 0; j < plan->cnt; j++)
                        if (!strcmp(plan->specs[j].pipeline, pn))
                                spec_acls(&b, conf, p, &plan->specs[j]);
                target_acls(&b, p);
                /* A DLQ replay (dlqreplay.h) reads the DLQ and writes
                 * the input. */
                if (p->dlq && p->input) {
                        topic(&b, p->dlq, SL_ACL_READ, SL_ACL_WHY_REPLAY);
                        topic(&b, p->input, SL_ACL_WRITE, SL_ACL_WHY_REPLAY);
                }
        }
        sl_topicplan_destroy(plan);

        add(&b, SL_ACL_GROUP, SL_ACL_LITERAL, app_id, SL_ACL_READ,
            SL_ACL_WHY_GROUP, NULL);
        add(&b, SL_ACL_GROUP, SL_ACL_LITERAL, SL_ACLS_REBUILD_GROUP,
            SL_ACL_DESCRIBE, SL_ACL_WHY_REBUILD, NULL);
        /* A replay's group, <app_id>-dlq-replay.<pipeline>: its offsets
         * are committed in its transactions, read at its start. */
        for (int i = 0; i < conf->pipeline_cnt; i++) {
                const sl_pipeline_conf_t *p = &conf->pipelines[i];
                char id[512];

                if (!p->dlq || !p->input || !p->name)
                        continue;
                sl_conf_replay_id(conf, p, id, sizeof(id));
                add(&b, SL_ACL_GROUP, SL_ACL_LITERAL, id, SL_ACL_READ,
                    SL_ACL_WHY_REPLAY, NULL);
        }
        /* <app_id>-<instance_id>, <app_id>-<instance_id>#2 (clients.c). */
        if (asprintf(&txn_prefix, "%s-", app_id) < 0)
                sl_assert(!"out of memory");
        /* Write implies Describe (FindCoordinator): 0711 runs without
         * a Describe binding. */
        add(&b, SL_ACL_TRANSACTIONAL_ID, SL_ACL_PREFIXED, txn_prefix,
            SL_ACL_WRITE, SL_ACL_WHY_TXN, NULL);
        /* A replay's, <app_id>-dlq-replay.<pipeline>, has the prefix. */
        for (int i = 0; i < conf->pipeline_cnt; i++)
                if (conf->pipelines[i].dlq && conf->pipelines[i].input)
                        add(&b, SL_ACL_TRANSACTIONAL_ID, SL_ACL_PREFIXED,
                            txn_prefix, SL_ACL_WRITE, SL_ACL_WHY_REPLAY, NULL);
        free(txn_prefix);
        return b.acls;
}

void sl_acls_destroy(sl_acls_t *acls) {
        if (!acls)
                return;
        for (int i = 0; i < acls->cnt; i++) {
                free(acls->acls[i].name);
                free(acls->acls[i].glob);
        }
        free(acls->acls);
        free(acls->path);
        free(acls->app_id);
        free(acls);
}

const sl_acl_t *sl_acls_find(const sl_acls_t *acls, sl_acl_resource_t resource,
                             sl_acl_pattern_t pattern, const char *name,
                             sl_acl_op_t op) {
        for (int i = 0; acls && i < acls->cnt; i++) {
                const sl_acl_t *e = &acls->acls[i];
                if (e->resource == resource && e->pattern == pattern &&
                    e->op == op && !strcmp(e->name, name))
                        return e;
        }
        return NULL;
}

/* Does binding e grant op on resource:name? */
static int acl_covers(const sl_acl_t *e, sl_acl_resource_t resource,
                      const char *name, sl_acl_op_t op) {
        /* A topic's Describe comes with its Read or Write. */
        if (resource == SL_ACL_TOPIC && op == SL_ACL_DESCRIBE)
                return e->resource == resource &&
                       (e->op == SL_ACL_READ || e->op == SL_ACL_WRITE) &&
                       acl_covers(e, resource, name, e->op);
        if (e->resource != resource || (op != SL_ACL_ANY && e->op != op))
                return 0;
        if (e->pattern == SL_ACL_PREFIXED)
                return !strncmp(name, e->name, strlen(e->name));
        return !strcmp(e->name, "*") || !strcmp(e->name, name);
}

static const char *why_text(unsigned first) {
        switch (first) {
        case SL_ACL_WHY_INPUT:
                return "an input";
        case SL_ACL_WHY_RATES:
                return "a rates topic";
        case SL_ACL_WHY_REROUTE:
                return "an input, written by reroute";
        case SL_ACL_WHY_API_INPUT:
                return "an input, written by the HTTP API";
        case SL_ACL_WHY_API_RATES:
                return "a rates topic, written by the HTTP API";
        case SL_ACL_WHY_CHANGELOG:
                return "a changelog";
        case SL_ACL_WHY_OVERFLOW:
                return "an overflow topic";
        case SL_ACL_WHY_PAYLOADS:
                return "a delay pipeline's payload topic";
        case SL_ACL_WHY_DLQ:
                return "a dead-letter topic";
        case SL_ACL_WHY_OUTPUT:
                return "an output";
        case SL_ACL_WHY_DEFAULT_TARGET:
                return "a delay pipeline's default target";
        case SL_ACL_WHY_TARGET:
                return "a delay target";
        case SL_ACL_WHY_LIMITS:
                return "its max.message.bytes";
        case SL_ACL_WHY_GROUP:
                return "the consumer group";
        case SL_ACL_WHY_REBUILD:
                return "the group id of the rebuild reader";
        case SL_ACL_WHY_TXN:
                return "the transactional ids";
        case SL_ACL_WHY_REPLAY:
                return "a DLQ replay";
        }
        return "?";
}

const char *sl_acls_refusal(const sl_acls_t *acls, sl_acl_resource_t resource,
                            const char *name, sl_acl_op_t op, char *buf,
                            size_t size) {
        const sl_acl_t *first = NULL;
        size_t len;
        int n = 0;

        len = (size_t)snprintf(buf, size, "%s on %s %s (",
                               op == SL_ACL_ANY ? "an operation"
                                                : sl_acl_op_name(op),
                               sl_acl_resource_name(resource), name);
        for (int i = 0; acls && i < acls->cnt; i++) {
                const sl_acl_t *e = &acls->acls[i];
                if (!acl_covers(e, resource, name, op))
                        continue;
                if (!first) {
                        first = e;
                        if (len < size)
                                len += (size_t)snprintf(
                                    buf + len, size - len,
                                    "%s; sluice acls lists %s %s %s ",
                                    why_text(e->first),
                                    sl_acl_resource_name(e->resource),
                                    sl_acl_pattern_name(e->pattern), e->name);
                }
                if (e->pattern != first->pattern ||
                    strcmp(e->name, first->name))
                        continue;
                if (len < size)
                        len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                                n++ ? ", " : "",
                                                sl_acl_op_name(e->op));
        }
        if (!first && len < size)
                len += (size_t)snprintf(buf + len, size - len,
                                        "no binding of sluice acls grants it");
        if (len < size)
                snprintf(buf + len, size - len, ")");
        return buf;
}

int sl_acls_principal_ok(const char *principal) {
        const char *colon = principal ? strchr(principal, ':') : NULL;

        if (!colon || colon == principal || !colon[1])
                return 0;
        for (const char *p = principal; p < colon; p++)
                if (!isalpha((unsigned char)*p))
                        return 0;
        for (const char *p = colon + 1; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        return 0;
        return 1;
}

/*
 * Table
 */

void sl_acls_write_table(const sl_acls_t *acls, FILE *out) {
        for (int i = 0; i < acls->cnt; i++) {
                const sl_acl_t *e = &acls->acls[i];
                fprintf(out, "%s\t%s\t%s\t%s\n",
                        sl_acl_resource_name(e->resource),
                        sl_acl_pattern_name(e->pattern), e->name,
                        sl_acl_op_name(e->op));
        }
}

/*
 * Commands
 */

static void buf_str(sl_buf_t *b, const char *s) {
        sl_buf_put(b, s, strlen(s));
}

static void buf_fmt(sl_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void buf_fmt(sl_buf_t *b, const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                sl_assert(!"out of memory");
        va_end(ap);
        buf_str(b, s);
        free(s);
}

/* 1 when s stands for itself as one shell word. */
static int shell_safe(const char *s) {
        if (!*s)
                return 0;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && !strchr("._-:/@%+=,", *s))
                        return 0;
        return 1;
}

/* s as one shell word: itself, or single-quoted. */
static void buf_shell_word(sl_buf_t *b, const char *s) {
        if (shell_safe(s)) {
                buf_str(b, s);
                return;
        }
        buf_str(b, "'");
        for (; *s; s++) {
                if (*s == '\'')
                        buf_str(b, "'\\''");
                else
                        sl_buf_put(b, s, 1);
        }
        buf_str(b, "'");
}

/* Words of text as '#' lines of at most COMMENT_WIDTH columns (a longer
 * word has a line of its own).  A control character (a config path may
 * hold one) is written '?', so no comment ends early. */
static void write_comment(FILE *out, const char *text) {
        const char *p = text;
        int col = 0;

        while (*p) {
                size_t n;

                p += strspn(p, " ");
                n = strcspn(p, " ");
                if (!n)
                        break;
                if (col && col + 1 + (int)n > COMMENT_WIDTH) {
                        fputc('\n', out);
                        col = 0;
                }
                if (!col) {
                        fputc('#', out);
                        col = 1;
                }
                fputc(' ', out);
                for (size_t i = 0; i < n; i++) {
                        int c = (unsigned char)p[i];
                        fputc(c < 0x20 || c == 0x7f ? '?' : c, out);
                }
                col += 1 + (int)n;
                p += n;
        }
        if (col)
                fputc('\n', out);
}

/* "a", "a and b", "a, b and c" of the n words given. */
static void buf_list(sl_buf_t *b, const char *const *words, int n) {
        for (int i = 0; i < n; i++) {
                if (i)
                        buf_str(b, i == n - 1 ? " and " : ", ");
                buf_str(b, words[i]);
        }
}

typedef enum {
        SEC_INPUT = 0,
        SEC_STATE,
        SEC_SINK,
        SEC_TARGET,
        SEC_GROUP,
        SEC_TXN,
        SEC_LIMITS,
        SEC_REPLAY,
        SEC_CNT,
} section_t;

static section_t section_of(unsigned first) {
        if (first & (SL_ACL_WHY_INPUT | SL_ACL_WHY_RATES | SL_ACL_WHY_REROUTE |
                     SL_ACL_WHY_API_INPUT | SL_ACL_WHY_API_RATES))
                return SEC_INPUT;
        if (first &
            (SL_ACL_WHY_CHANGELOG | SL_ACL_WHY_OVERFLOW | SL_ACL_WHY_PAYLOADS))
                return SEC_STATE;
        if (first &
            (SL_ACL_WHY_DLQ | SL_ACL_WHY_OUTPUT | SL_ACL_WHY_DEFAULT_TARGET))
                return SEC_SINK;
        if (first & SL_ACL_WHY_TARGET)
                return SEC_TARGET;
        if (first & (SL_ACL_WHY_GROUP | SL_ACL_WHY_REBUILD))
                return SEC_GROUP;
        if (first & SL_ACL_WHY_TXN)
                return SEC_TXN;
        if (first & SL_ACL_WHY_REPLAY)
                return SEC_REPLAY;
        sl_assert(first & SL_ACL_WHY_LIMITS);
        return SEC_LIMITS;
}

/* The comment of a section whose bindings have the why bits why, in b. */
static void section_comment(sl_buf_t *b, section_t sec, unsigned why,
                            const sl_acls_t *acls) {
        const char *words[4];
        int n = 0, rates = 0, payloads = 0;

        for (int i = 0; i < acls->cnt; i++) {
                rates += acls->acls[i].op == SL_ACL_READ &&
                         acls->acls[i].why & SL_ACL_WHY_RATES;
                payloads += acls->acls[i].op == SL_ACL_READ &&
                            acls->acls[i].why & SL_ACL_WHY_PAYLOADS;
        }

        switch (sec) {
        case SEC_INPUT:
                if (why & SL_ACL_WHY_INPUT || !(why & SL_ACL_WHY_RATES))
                        words[n++] = "Inputs";
                if (why & SL_ACL_WHY_RATES)
                        words[n++] =
                            rates > 1 ? "the rates topics" : "the rates topic";
                buf_list(b, words, n);
                buf_str(b, ": read (Read implies Describe).");
                n = 0;
                if (why & SL_ACL_WHY_REROUTE)
                        buf_str(b, " An input is written too: a keyed record "
                                   "off its key's partition is moved there "
                                   "(reroute; not needed with reroute = "
                                   "false).");
                if (why & SL_ACL_WHY_API_INPUT)
                        words[n++] = "to the inputs it serves (timers, "
                                     "cancels, flushes)";
                if (why & SL_ACL_WHY_API_RATES)
                        words[n++] = rates > 1 ? "to the rates topics (rates)"
                                               : "to the rates topic (rates)";
                if (n) {
                        buf_str(b, " The HTTP API (api_listen) writes ");
                        buf_list(b, words, n);
                        buf_str(b, ".");
                }
                if (why & SL_ACL_WHY_REPLAY)
                        buf_str(b, " A DLQ replay writes to the inputs "
                                   "too.");
                break;
        case SEC_STATE:
                words[n++] = "Changelogs";
                if (why & SL_ACL_WHY_OVERFLOW)
                        words[n++] = "the overflow";
                if (why & SL_ACL_WHY_PAYLOADS)
                        words[n++] = payloads > 1 ? "the payload topics"
                                                  : "the payload topic";
                buf_list(b, words, n);
                if (n == 1) {
                        buf_str(b, ": written, and read back at every "
                                   "rebuild.");
                        break;
                }
                buf_str(b, ": written, and read back (at every rebuild");
                if (why & SL_ACL_WHY_OVERFLOW)
                        buf_str(b, "; the overflow as its backlog drains");
                if (why & SL_ACL_WHY_PAYLOADS)
                        buf_str(b, "; payloads ahead of their timers' due "
                                   "time");
                buf_str(b, ").");
                break;
        case SEC_SINK:
                if (why & SL_ACL_WHY_DLQ)
                        words[n++] = "DLQs";
                if (why & SL_ACL_WHY_OUTPUT)
                        words[n++] = "outputs";
                if (why & SL_ACL_WHY_DEFAULT_TARGET)
                        words[n++] = "default targets";
                buf_list(b, words, n);
                buf_str(b, ": write only.");
                break;
        case SEC_TARGET: {
                int prefixed = 0, wildcard = 0, globs = 0;

                buf_str(b, "Delay targets (allowed_targets ");
                for (int i = 0; i < acls->cnt; i++) {
                        const sl_acl_t *e = &acls->acls[i];
                        if (!e->glob || section_of(e->first) != SEC_TARGET)
                                continue;
                        buf_fmt(b, "%s%s", globs++ ? ", " : "", e->glob);
                        prefixed |= e->pattern == SL_ACL_PREFIXED;
                        wildcard |= e->pattern == SL_ACL_LITERAL &&
                                    !strcmp(e->name, "*");
                }
                buf_str(b, "): write only.");
                if (prefixed)
                        buf_str(b, " A prefixed ACL grants every topic under "
                                   "its prefix, which may be more than the "
                                   "glob matches (sluice still checks the "
                                   "glob).");
                if (wildcard)
                        buf_str(b, " A glob without a literal prefix (** is "
                                   "the default) needs Kafka's wildcard "
                                   "topic '*', Write on every topic: narrow "
                                   "allowed_targets to narrow it.");
                break;
        }
        case SEC_GROUP:
                buf_str(b, "The consumer group (group.id = app_id; offsets "
                           "are committed in the transaction), and the group "
                           "id of the assign-only rebuild reader.");
                break;
        case SEC_TXN:
                buf_str(b, "Transactions: transactional.id is "
                           "<app_id>-<instance_id> (<app_id>-<client.id> "
                           "without instance_id), and the second "
                           "producer's has #2 after it");
                buf_str(b, why & SL_ACL_WHY_REPLAY
                               ? "; a DLQ replay's is "
                                 "<app_id>-dlq-replay.<pipeline>."
                               : ".");
                break;
        case SEC_REPLAY:
                buf_str(b, "DLQ replay (sluice dlq replay, POST "
                           "/v1/pipelines/{p}/dlq/replay): it reads the "
                           "DLQs, writes to the inputs, and commits its "
                           "offsets as the group "
                           "<app_id>-dlq-replay.<pipeline> in its "
                           "transactions. Not needed by sluice run "
                           "without the API.");
                break;
        case SEC_LIMITS:
                buf_str(b, "DescribeConfigs on every topic: sluice learns "
                           "the largest record each takes (max.message.bytes), "
                           "and `sluice topics check` reads their configs.");
                break;
        case SEC_CNT:
                break;
        }
}

/* One kafka-acls.sh line: head, then each arg; on one line when it fits
 * LINE_WIDTH, else the args on continuation lines. */
static void write_command(FILE *out, const char *head, char **args, int n) {
        size_t total = strlen(head);
        size_t col;

        for (int i = 0; i < n; i++)
                total += 1 + strlen(args[i]);
        if (total <= LINE_WIDTH) {
                fputs(head, out);
                for (int i = 0; i < n; i++)
                        fprintf(out, " %s", args[i]);
                fputc('\n', out);
                return;
        }
        fprintf(out, "%s \\\n ", head);
        col = 1;
        for (int i = 0; i < n; i++) {
                size_t len = strlen(args[i]);
                /* Room for " \" after it unless it is the last. */
                size_t tail = i < n - 1 ? 2 : 0;
                if (col > 1 && col + 1 + len + tail > LINE_WIDTH) {
                        fputs(" \\\n ", out);
                        col = 1;
                }
                fprintf(out, " %s", args[i]);
                col += 1 + len;
        }
        fputc('\n', out);
}

/* A resource of a section and the operations it needs there. */
typedef struct {
        const sl_acl_t *acl; /* the first binding: resource, pattern, name */
        unsigned ops;        /* bits 1 << sl_acl_op_t */
} entry_t;

static void write_section(FILE *out, const sl_acls_t *acls, section_t sec,
                          const char *grant) {
        entry_t *ents = sl_calloc((size_t)acls->cnt + 1, sizeof(*ents));
        int *line_of = sl_calloc((size_t)acls->cnt + 1, sizeof(*line_of));
        int ent_cnt = 0, line_cnt = 0;
        unsigned why = 0;
        sl_buf_t comment = {0};

        for (int i = 0; i < acls->cnt; i++) {
                const sl_acl_t *e = &acls->acls[i];
                int j;
                if (section_of(e->first) != sec)
                        continue;
                why |= e->why;
                for (j = 0; j < ent_cnt; j++)
                        if (ents[j].acl->resource == e->resource &&
                            ents[j].acl->pattern == e->pattern &&
                            !strcmp(ents[j].acl->name, e->name))
                                break;
                if (j == ent_cnt)
                        ents[ent_cnt++].acl = e;
                ents[j].ops |= 1u << e->op;
        }
        if (!ent_cnt)
                goto out;

        section_comment(&comment, sec, why, acls);
        write_comment(out, sl_buf_cstr(&comment));

        /* Lines: the entries with the same resource type, pattern type and
         * operations, in the order of their first entry. */
        for (int i = 0; i < ent_cnt; i++) {
                int j;
                for (j = 0; j < i; j++)
                        if (ents[j].acl->resource == ents[i].acl->resource &&
                            ents[j].acl->pattern == ents[i].acl->pattern &&
                            ents[j].ops == ents[i].ops)
                                break;
                line_of[i] = j < i ? line_of[j] : line_cnt++;
        }
        for (int l = 0; l < line_cnt; l++) {
                char **args = sl_calloc((size_t)ent_cnt + 1, sizeof(*args));
                sl_buf_t head = {0};
                const entry_t *first = NULL;
                int n = 0;

                for (int i = 0; i < ent_cnt; i++) {
                        sl_buf_t arg = {0};
                        if (line_of[i] != l)
                                continue;
                        if (!first) {
                                first = &ents[i];
                                if (first->acl->pattern == SL_ACL_PREFIXED)
                                        args[n++] =
                                            sl_strdup("--resource-pattern-type "
                                                      "prefixed");
                        }
                        buf_fmt(&arg, "%s ",
                                resource_option(ents[i].acl->resource));
                        buf_shell_word(&arg, ents[i].acl->name);
                        args[n++] = sl_buf_cstr(&arg);
                }
                buf_str(&head, grant);
                for (int op = SL_ACL_READ; op <= SL_ACL_DESCRIBE_CONFIGS; op++)
                        if (first->ops & (1u << op))
                                buf_fmt(&head, " --operation %s",
                                        op_option((sl_acl_op_t)op));
                write_command(out, sl_buf_cstr(&head), args, n);
                for (int i = 0; i < n; i++)
                        free(args[i]);
                free(args);
                free(head.p);
        }
out:
        free(comment.p);
        free(line_of);
        free(ents);
}

void sl_acls_write_commands(const sl_acls_t *acls, const char *principal,
                            const char *bootstrap, FILE *out) {
        sl_buf_t b = {0};
        int quote = !shell_safe(principal);

        buf_str(&b, "The Kafka ACLs sluice's principal needs with ");
        buf_str(&b, *acls->path ? acls->path : "this configuration");
        buf_fmt(&b, " (app_id %s), from `sluice acls -c FILE`.", acls->app_id);
        write_comment(out, sl_buf_cstr(&b));
        free(b.p);

        /* A: where, and as whom, kafka-acls.sh runs; inside "...". */
        fputs("A=\"--bootstrap-server ", out);
        for (const char *p = bootstrap ? bootstrap : "broker:9092"; *p; p++) {
                if (strchr("\"$`\\", *p))
                        fputc('\\', out);
                fputc(*p, out);
        }
        fputs(" --command-config admin.properties\"\n", out);
        b = (sl_buf_t){0};
        buf_str(&b, "P=");
        buf_shell_word(&b, principal);
        fprintf(out, "%s\n", sl_buf_cstr(&b));
        free(b.p);

        for (int sec = 0; sec < SEC_CNT; sec++)
                write_section(out, acls, (section_t)sec,
                              quote ? "kafka-acls.sh $A --add "
                                      "--allow-principal \"$P\""
                                    : "kafka-acls.sh $A --add "
                                      "--allow-principal $P");
}
