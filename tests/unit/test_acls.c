/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_acls.c — the ACL bindings a configuration needs (acls.c), their
 * table and kafka-acls.sh renderings, and `sluice acls`.  Each config is
 * written to a temporary file and loaded by config.c, so its defaults
 * (reroute = true, allowed_targets = **, dlq NAME.dlq) are the real ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "acls.h"
#include "cli.h"
#include "config.h"

static char tmpdir[] = "/tmp/sluice-test-acls-XXXXXX";
static char cfg_path[256];

static int setup(void **state) {
        (void)state;
        if (!mkdtemp(tmpdir))
                return -1;
        snprintf(cfg_path, sizeof(cfg_path), "%s/t.ini", tmpdir);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        unlink(cfg_path);
        rmdir(tmpdir);
        return 0;
}

static void write_file(const char *path, const char *text) {
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

static sl_acls_t *acls_of(const char *ini) {
        sl_conf_t *conf = NULL;
        sl_acls_t *acls;
        char *buf = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);

        write_file(cfg_path, ini);
        if (sl_conf_load(cfg_path, 0, &conf, mem) != 0) {
                fclose(mem);
                fail_msg("config errors:\n%s", buf);
        }
        fclose(mem);
        free(buf);
        acls = sl_acls_new(conf);
        sl_conf_destroy(conf); /* the set keeps what it needs */
        return acls;
}

static char *table_of(const sl_acls_t *acls) {
        char *buf = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);

        sl_acls_write_table(acls, mem);
        fclose(mem);
        return buf;
}

static char *commands_of(const sl_acls_t *acls, const char *principal) {
        char *buf = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);

        sl_acls_write_commands(acls, principal, "b1:9092,b2:9092", mem);
        fclose(mem);
        return buf;
}

/* The comment lines of cmds as one text, wrapping undone. */
static char *comments_of(const char *cmds) {
        char *out = calloc(1, strlen(cmds) + 1);
        size_t len = 0;

        for (const char *l = cmds; *l;) {
                size_t n = strcspn(l, "\n");
                if (l[0] == '#' && n > 2) {
                        if (len)
                                out[len++] = ' ';
                        memcpy(out + len, l + 2, n - 2);
                        len += n - 2;
                }
                l += n + (l[n] == '\n');
        }
        return out;
}

static void expect_comment(const char *cmds, const char *needle, int want) {
        char *text = comments_of(cmds);

        if (!strstr(text, needle) != !want)
                fail_msg("comments %s '%s':\n%s", want ? "lack" : "hold",
                         needle, text);
        free(text);
}

static void expect_table(const sl_acls_t *acls, const char *expected) {
        char *got = table_of(acls);

        if (strcmp(got, expected))
                fail_msg("table differs\n--- expected\n%s--- got\n%s", expected,
                         got);
        free(got);
}

static int has(const sl_acls_t *acls, sl_acl_resource_t r, sl_acl_pattern_t p,
               const char *name, sl_acl_op_t op) {
        return sl_acls_find(acls, r, p, name, op) != NULL;
}

static int has_topic(const sl_acls_t *acls, const char *name, sl_acl_op_t op) {
        return has(acls, SL_ACL_TOPIC, SL_ACL_LITERAL, name, op);
}

/* The why bits of the Write on topic name, 0 when there is none. */
static unsigned write_why(const sl_acls_t *acls, const char *name) {
        const sl_acl_t *e = sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL,
                                         name, SL_ACL_WRITE);
        return e ? e->why : 0;
}

/* No two bindings of acls are the same (resource, pattern, name, op). */
static void assert_distinct(const sl_acls_t *acls) {
        for (int i = 0; i < acls->cnt; i++)
                for (int j = i + 1; j < acls->cnt; j++) {
                        const sl_acl_t *a = &acls->acls[i], *b = &acls->acls[j];
                        if (a->resource == b->resource &&
                            a->pattern == b->pattern && a->op == b->op &&
                            !strcmp(a->name, b->name))
                                fail_msg("%s %s twice", a->name,
                                         sl_acl_op_name(a->op));
                }
}

/*
 * The commands, read back: every kafka-acls.sh line (continuations
 * joined) becomes the table lines it grants.  Handles what the writer
 * emits: words, single-quoted words, $A and $P.
 */

static int words_of(const char *line, char **words, int max) {
        int n = 0;
        const char *p = line;

        while (*p) {
                char buf[512];
                size_t len = 0;

                p += strspn(p, " ");
                if (!*p)
                        break;
                while (*p && *p != ' ') {
                        if (*p == '\'') {
                                for (p++; *p && *p != '\''; p++)
                                        buf[len++] = *p;
                                assert_int_equal(*p, '\'');
                                p++;
                        } else if (*p == '"') {
                                p++;
                        } else if (*p == '\\' && p[1]) {
                                buf[len++] = p[1];
                                p += 2;
                        } else {
                                buf[len++] = *p++;
                        }
                        assert_true(len < sizeof(buf));
                }
                buf[len] = '\0';
                assert_true(n < max);
                words[n++] = strdup(buf);
        }
        return n;
}

static const char *upper_op(const char *op) {
        if (!strcmp(op, "Read"))
                return "READ";
        if (!strcmp(op, "Write"))
                return "WRITE";
        if (!strcmp(op, "Describe"))
                return "DESCRIBE";
        if (!strcmp(op, "DescribeConfigs"))
                return "DESCRIBE_CONFIGS";
        fail_msg("unknown operation %s", op);
        return NULL;
}

/* The table lines the command grants, appended to out. */
static void grants_of(const char *cmd, FILE *out) {
        char *w[64] = {0};
        const char *ops[4];
        int n = words_of(cmd, w, 64), op_cnt = 0, prefixed = 0;

        assert_true(n > 4);
        assert_string_equal(w[0], "kafka-acls.sh");
        assert_string_equal(w[1], "$A");
        assert_string_equal(w[2], "--add");
        assert_string_equal(w[3], "--allow-principal");
        assert_string_equal(w[4], "$P");
        for (int i = 5; i < n; i += 2) {
                assert_true(i + 1 < n);
                if (!strcmp(w[i], "--operation"))
                        ops[op_cnt++] = upper_op(w[i + 1]);
                else if (!strcmp(w[i], "--resource-pattern-type"))
                        prefixed = !strcmp(w[i + 1], "prefixed");
        }
        assert_true(op_cnt > 0);
        for (int i = 5; i < n; i += 2) {
                const char *type = !strcmp(w[i], "--topic")   ? "TOPIC"
                                   : !strcmp(w[i], "--group") ? "GROUP"
                                   : !strcmp(w[i], "--transactional-id")
                                       ? "TRANSACTIONAL_ID"
                                       : NULL;
                if (!type)
                        continue;
                for (int k = 0; k < op_cnt; k++)
                        fprintf(out, "%s\t%s\t%s\t%s\n", type,
                                prefixed ? "PREFIXED" : "LITERAL", w[i + 1],
                                ops[k]);
        }
        for (int i = 0; i < n; i++)
                free(w[i]);
}

static int cmp_lines(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* text's lines, sorted, joined again. */
static char *sorted(const char *text) {
        char *copy = strdup(text), *lines[512], *out, *save = NULL;
        int n = 0;
        size_t len = 0;

        for (char *l = strtok_r(copy, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save)) {
                assert_true(n < 512);
                lines[n++] = l;
        }
        qsort(lines, (size_t)n, sizeof(*lines), cmp_lines);
        out = calloc(1, strlen(text) + 2);
        for (int i = 0; i < n; i++) {
                strcpy(out + len, lines[i]);
                len += strlen(lines[i]);
                out[len++] = '\n';
        }
        free(copy);
        return out;
}

/* The commands grant exactly the table's bindings, each once; the
 * comments and the variables are as documented. */
static void assert_commands_grant_table(const sl_acls_t *acls,
                                        const char *principal) {
        char *cmds = commands_of(acls, principal), *table = table_of(acls);
        char *grants = NULL, *line = NULL, *save = NULL, *copy = strdup(cmds);
        size_t size = 0;
        FILE *mem = open_memstream(&grants, &size);
        char *a, *b;
        int saw_a = 0, saw_p = 0;

        for (char *l = strtok_r(copy, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save)) {
                size_t len = strlen(l);
                if (!line && l[0] == '#') {
                        assert_true(len <= 72);
                        continue;
                }
                if (!line && !strncmp(l, "A=", 2)) {
                        assert_string_equal(l, "A=\"--bootstrap-server "
                                               "b1:9092,b2:9092 "
                                               "--command-config "
                                               "admin.properties\"");
                        saw_a = 1;
                        continue;
                }
                if (!line && !strncmp(l, "P=", 2)) {
                        saw_p = 1;
                        continue;
                }
                if (line) {
                        char *joined;
                        assert_true(asprintf(&joined, "%s %s", line, l) > 0);
                        free(line);
                        line = joined;
                } else {
                        line = strdup(l);
                }
                len = strlen(line);
                if (len >= 2 && !strcmp(line + len - 2, " \\")) {
                        line[len - 2] = '\0';
                        continue;
                }
                grants_of(line, mem);
                free(line);
                line = NULL;
        }
        assert_null(line);
        assert_true(saw_a && saw_p);
        fclose(mem);
        a = sorted(grants);
        b = sorted(table);
        if (strcmp(a, b))
                fail_msg("commands grant\n%s--- the table has\n%s", a, b);
        free(a);
        free(b);
        free(grants);
        free(copy);
        free(table);
        free(cmds);
}

/*
 * Tests
 */

#define THREE_OPS                                                              \
        "[sluice]\n"                                                           \
        "app_id = orders-sluice\n"                                             \
        "[pipeline timers]\n"                                                  \
        "type = delay\n"                                                       \
        "input = timers.in\n"                                                  \
        "default_target = notify.default\n"                                    \
        "allowed_targets = notify.*, audit.log\n"                              \
        "[pipeline limits]\n"                                                  \
        "type = throttle\n"                                                    \
        "input = api.calls\n"                                                  \
        "output = api.calls.limited\n"                                         \
        "[pipeline batches]\n"                                                 \
        "type = debounce\n"                                                    \
        "input = orders.in\n"                                                  \
        "output = transfers.out\n"                                             \
        "dlq = none\n"

/* A refusal names the operation, the resource, what sluice uses it for and
 * the binding that grants it. */
static void test_refusal(void **state) {
        sl_acls_t *acls;
        char buf[320];
        (void)state;

        acls = acls_of(THREE_OPS);
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TOPIC, "timers.in", SL_ACL_READ, buf,
                            sizeof(buf)),
            "READ on TOPIC timers.in (an input; sluice acls lists TOPIC "
            "LITERAL timers.in READ)");
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TOPIC, "limits.dlq", SL_ACL_WRITE, buf,
                            sizeof(buf)),
            "WRITE on TOPIC limits.dlq (a dead-letter topic; sluice acls "
            "lists TOPIC LITERAL limits.dlq WRITE)");
        /* A target under a prefix: the prefixed binding. */
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TOPIC, "notify.sms", SL_ACL_WRITE, buf,
                            sizeof(buf)),
            "WRITE on TOPIC notify.sms (a delay target; sluice acls lists "
            "TOPIC PREFIXED notify. WRITE)");
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_GROUP, "orders-sluice", SL_ACL_READ,
                            buf, sizeof(buf)),
            "READ on GROUP orders-sluice (the consumer group; sluice acls "
            "lists GROUP LITERAL orders-sluice READ)");
        /* Kafka does not say which operation on a transactional id. */
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TRANSACTIONAL_ID, "orders-sluice-a",
                            SL_ACL_ANY, buf, sizeof(buf)),
            "an operation on TRANSACTIONAL_ID orders-sluice-a (the "
            "transactional ids; sluice acls lists TRANSACTIONAL_ID PREFIXED "
            "orders-sluice- WRITE)");
        /* A hidden topic: the bindings that imply Describe. */
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TOPIC, "timers.changelog",
                            SL_ACL_DESCRIBE, buf, sizeof(buf)),
            "DESCRIBE on TOPIC timers.changelog (a changelog; sluice acls "
            "lists TOPIC LITERAL timers.changelog READ, WRITE)");
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TOPIC, "elsewhere", SL_ACL_WRITE, buf,
                            sizeof(buf)),
            "WRITE on TOPIC elsewhere (no binding of sluice acls grants it)");
        /* Cut to the buffer, still a string. */
        sl_acls_refusal(acls, SL_ACL_TOPIC, "timers.in", SL_ACL_READ, buf, 12);
        assert_string_equal(buf, "READ on TOP");
        sl_acls_destroy(acls);
}

static void test_three_operators(void **state) {
        sl_acls_t *acls;
        (void)state;

        acls = acls_of(THREE_OPS);
        expect_table(acls,
                     "TOPIC\tLITERAL\ttimers.in\tREAD\n"
                     "TOPIC\tLITERAL\ttimers.in\tWRITE\n"
                     "TOPIC\tLITERAL\ttimers.in\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\ttimers.changelog\tREAD\n"
                     "TOPIC\tLITERAL\ttimers.changelog\tWRITE\n"
                     "TOPIC\tLITERAL\ttimers.changelog\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\ttimers.dlq\tWRITE\n"
                     "TOPIC\tLITERAL\ttimers.dlq\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tnotify.default\tWRITE\n"
                     "TOPIC\tLITERAL\tnotify.default\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tPREFIXED\tnotify.\tWRITE\n"
                     "TOPIC\tPREFIXED\tnotify.\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\taudit.log\tWRITE\n"
                     "TOPIC\tLITERAL\taudit.log\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\ttimers.dlq\tREAD\n"
                     "TOPIC\tLITERAL\tapi.calls\tREAD\n"
                     "TOPIC\tLITERAL\tapi.calls\tWRITE\n"
                     "TOPIC\tLITERAL\tapi.calls\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tlimits.changelog\tREAD\n"
                     "TOPIC\tLITERAL\tlimits.changelog\tWRITE\n"
                     "TOPIC\tLITERAL\tlimits.changelog\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tlimits.overflow\tREAD\n"
                     "TOPIC\tLITERAL\tlimits.overflow\tWRITE\n"
                     "TOPIC\tLITERAL\tlimits.overflow\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tlimits.rates\tREAD\n"
                     "TOPIC\tLITERAL\tlimits.rates\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tlimits.dlq\tWRITE\n"
                     "TOPIC\tLITERAL\tlimits.dlq\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tapi.calls.limited\tWRITE\n"
                     "TOPIC\tLITERAL\tapi.calls.limited\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tlimits.dlq\tREAD\n"
                     "TOPIC\tLITERAL\torders.in\tREAD\n"
                     "TOPIC\tLITERAL\torders.in\tWRITE\n"
                     "TOPIC\tLITERAL\torders.in\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\tbatches.changelog\tREAD\n"
                     "TOPIC\tLITERAL\tbatches.changelog\tWRITE\n"
                     "TOPIC\tLITERAL\tbatches.changelog\tDESCRIBE_CONFIGS\n"
                     "TOPIC\tLITERAL\ttransfers.out\tWRITE\n"
                     "TOPIC\tLITERAL\ttransfers.out\tDESCRIBE_CONFIGS\n"
                     "GROUP\tLITERAL\torders-sluice\tREAD\n"
                     "GROUP\tLITERAL\tsluice-rebuild\tDESCRIBE\n"
                     "GROUP\tLITERAL\torders-sluice-dlq-replay.timers\tREAD\n"
                     "GROUP\tLITERAL\torders-sluice-dlq-replay.limits\tREAD\n"
                     "TRANSACTIONAL_ID\tPREFIXED\torders-sluice-\tWRITE\n");
        /* No Write on the rates topic (only the API writes it), none on
         * Kafka's wildcard (the globs have prefixes). */
        assert_false(has_topic(acls, "limits.rates", SL_ACL_WRITE));
        assert_false(has_topic(acls, "*", SL_ACL_WRITE));
        /* Why, for the commands' comments. */
        assert_int_equal(sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL,
                                      "timers.in", SL_ACL_WRITE)
                             ->why,
                         SL_ACL_WHY_REROUTE | SL_ACL_WHY_REPLAY);
        /* batches has no DLQ: nothing to replay, no Write for it. */
        assert_int_equal(sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL,
                                      "orders.in", SL_ACL_WRITE)
                             ->why,
                         SL_ACL_WHY_REROUTE);
        assert_string_equal(sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED,
                                         "notify.", SL_ACL_WRITE)
                                ->glob,
                            "notify.*");
        assert_string_equal(acls->app_id, "orders-sluice");
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);
}

static void test_reroute_false(void **state) {
        sl_acls_t *acls;
        (void)state;

        acls = acls_of("[pipeline limits]\n"
                       "type = throttle\n"
                       "input = api.calls\n"
                       "output = api.calls.limited\n"
                       "reroute = false\n"
                       "[pipeline batches]\n"
                       "type = debounce\n"
                       "input = orders.in\n"
                       "output = transfers.out\n");
        /* Read stays, and DescribeConfigs (sluice describes every topic,
         * and so does topics check); Write is the DLQ replay's alone. */
        assert_true(has_topic(acls, "api.calls", SL_ACL_READ));
        assert_int_equal(sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL,
                                      "api.calls", SL_ACL_WRITE)
                             ->why,
                         SL_ACL_WHY_REPLAY);
        assert_true(has_topic(acls, "api.calls", SL_ACL_DESCRIBE_CONFIGS));
        /* The other pipeline still reroutes. */
        assert_true(has_topic(acls, "orders.in", SL_ACL_WRITE));
        assert_true(has_topic(acls, "orders.in", SL_ACL_DESCRIBE_CONFIGS));
        /* app_id's default. */
        assert_true(
            has(acls, SL_ACL_GROUP, SL_ACL_LITERAL, "sluice", SL_ACL_READ));
        assert_true(has(acls, SL_ACL_TRANSACTIONAL_ID, SL_ACL_PREFIXED,
                        "sluice-", SL_ACL_WRITE));
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);
}

static void test_glob_pattern(void **state) {
        static const struct {
                const char *glob;
                sl_acl_pattern_t pattern;
                const char *name;
        } cases[] = {
            {"notify.*", SL_ACL_PREFIXED, "notify."},
            {"notify.**", SL_ACL_PREFIXED, "notify."},
            {"notify.e?", SL_ACL_PREFIXED, "notify.e"},
            {"notify.[ab]x", SL_ACL_PREFIXED, "notify."},
            {"orders*", SL_ACL_PREFIXED, "orders"},
            {"notify.email", SL_ACL_LITERAL, "notify.email"},
            {"**", SL_ACL_LITERAL, "*"},
            {"*", SL_ACL_LITERAL, "*"},
            {"*.events", SL_ACL_LITERAL, "*"},
            {"?x", SL_ACL_LITERAL, "*"},
        };
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sl_acl_pattern_t p = (sl_acl_pattern_t)-1;
                char *name = sl_acls_glob_pattern(cases[i].glob, &p);
                if (p != cases[i].pattern || strcmp(name, cases[i].name))
                        fail_msg("%s: got %s %s", cases[i].glob,
                                 sl_acl_pattern_name(p), name);
                free(name);
        }
}

static void test_target_prefix(void **state) {
        sl_acls_t *acls;
        char *cmds;
        (void)state;

        acls = acls_of("[pipeline timers]\n"
                       "type = delay\n"
                       "input = timers.in\n"
                       "allowed_targets = notify.*, notify.**, audit.log\n");
        /* Both globs are one prefix: one binding each operation. */
        assert_true(
            has(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED, "notify.", SL_ACL_WRITE));
        assert_true(has(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED, "notify.",
                        SL_ACL_DESCRIBE_CONFIGS));
        assert_string_equal(sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED,
                                         "notify.", SL_ACL_WRITE)
                                ->glob,
                            "notify.*, notify.**");
        /* A glob without glob characters is its literal name. */
        assert_true(has_topic(acls, "audit.log", SL_ACL_WRITE));
        assert_false(has(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED, "audit.log",
                         SL_ACL_WRITE));
        /* Never a literal ACL on the prefix, never the wildcard. */
        assert_false(has_topic(acls, "notify.", SL_ACL_WRITE));
        assert_false(has_topic(acls, "*", SL_ACL_WRITE));
        /* Never Read on a target. */
        assert_false(
            has(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED, "notify.", SL_ACL_READ));
        assert_distinct(acls);

        cmds = commands_of(acls, "User:sluice");
        assert_non_null(strstr(cmds, "--resource-pattern-type prefixed "
                                     "--topic notify."));
        expect_comment(cmds, "may be more than the glob matches", 1);
        expect_comment(cmds, "wildcard", 0);
        assert_null(strstr(cmds, "'*'"));
        free(cmds);
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);
}

static void test_default_targets_every_topic(void **state) {
        sl_acls_t *acls;
        char *cmds;
        (void)state;

        /* allowed_targets left at "**". */
        acls = acls_of("[pipeline timers]\n"
                       "type = delay\n"
                       "input = timers.in\n");
        assert_true(has_topic(acls, "*", SL_ACL_WRITE));
        assert_true(has_topic(acls, "*", SL_ACL_DESCRIBE_CONFIGS));
        assert_false(has_topic(acls, "*", SL_ACL_READ));
        assert_false(
            has(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED, "", SL_ACL_WRITE));
        assert_string_equal(
            sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL, "*", SL_ACL_WRITE)
                ->glob,
            "**");
        cmds = commands_of(acls, "User:sluice");
        /* Quoted, so no shell expands it. */
        assert_non_null(strstr(cmds, "--operation Write --topic '*'\n"));
        expect_comment(cmds, "needs Kafka's wildcard topic '*'", 1);
        free(cmds);
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);
}

static void test_shared_topics(void **state) {
        sl_acls_t *acls;
        const sl_acl_t *w;
        (void)state;

        /* batches writes into the delay input; two delay pipelines share
         * a glob and a default target. */
        acls = acls_of("[pipeline timers]\n"
                       "type = delay\n"
                       "input = timers.in\n"
                       "default_target = notify.x\n"
                       "allowed_targets = notify.*\n"
                       "[pipeline batches]\n"
                       "type = debounce\n"
                       "input = orders.in\n"
                       "output = timers.in\n"
                       "[pipeline timers2]\n"
                       "type = delay\n"
                       "input = timers2.in\n"
                       "changelog = timers2.log\n"
                       "reroute = false\n"
                       "dlq = none\n"
                       "default_target = notify.x\n"
                       "allowed_targets = notify.*\n");
        assert_distinct(acls);
        /* One Write on timers.in, for every reason, first as reroute. */
        w = sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL, "timers.in",
                         SL_ACL_WRITE);
        assert_non_null(w);
        assert_int_equal(w->first, SL_ACL_WHY_REROUTE);
        assert_int_equal(w->why, SL_ACL_WHY_REROUTE | SL_ACL_WHY_OUTPUT |
                                     SL_ACL_WHY_REPLAY);
        /* Listed where first found: the first pipeline's place. */
        assert_string_equal(acls->acls[0].name, "timers.in");
        assert_int_equal(acls->acls[0].op, SL_ACL_READ);
        assert_string_equal(acls->acls[1].name, "timers.in");
        assert_int_equal(acls->acls[1].op, SL_ACL_WRITE);
        assert_true(has_topic(acls, "timers2.log", SL_ACL_WRITE));
        assert_true(
            has(acls, SL_ACL_TOPIC, SL_ACL_PREFIXED, "notify.", SL_ACL_WRITE));
        {
                int targets = 0, inputs = 0, dflt = 0;
                for (int i = 0; i < acls->cnt; i++) {
                        targets += !strcmp(acls->acls[i].name, "notify.");
                        inputs += !strcmp(acls->acls[i].name, "timers.in");
                        dflt += !strcmp(acls->acls[i].name, "notify.x");
                }
                assert_int_equal(targets, 2); /* Write, DescribeConfigs */
                assert_int_equal(inputs, 3);  /* and Read */
                assert_int_equal(dflt, 2);
        }
        /* timers2 (no DLQ, nothing to replay) reads its input and does
         * not write it. */
        assert_true(has_topic(acls, "timers2.in", SL_ACL_READ));
        assert_false(has_topic(acls, "timers2.in", SL_ACL_WRITE));
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);
}

static void test_api_writes(void **state) {
        sl_acls_t *acls;
        char *cmds;
        (void)state;

        acls = acls_of("[sluice]\n"
                       "api_listen = 127.0.0.1:0\n"
                       "[pipeline timers]\n"
                       "type = delay\n"
                       "input = timers.in\n"
                       "reroute = false\n"
                       "allowed_targets = notify.*\n"
                       "[pipeline limits]\n"
                       "type = throttle\n"
                       "input = api.calls\n"
                       "output = api.calls.limited\n"
                       "reroute = false\n"
                       "[pipeline batches]\n"
                       "type = debounce\n"
                       "input = orders.in\n"
                       "output = transfers.out\n"
                       "reroute = false\n"
                       "api = false\n");
        /* The API writes timers and cancels to the delay input, rates to
         * the throttle's rates topic; DescribeConfigs is there for every
         * topic anyway (topics check). */
        assert_true(has_topic(acls, "timers.in", SL_ACL_WRITE));
        assert_true(has_topic(acls, "timers.in", SL_ACL_DESCRIBE_CONFIGS));
        assert_true(has_topic(acls, "limits.rates", SL_ACL_WRITE));
        assert_int_equal(write_why(acls, "timers.in"),
                         SL_ACL_WHY_API_INPUT | SL_ACL_WHY_REPLAY);
        /* The API writes no throttle input; a DLQ replay does. */
        assert_int_equal(write_why(acls, "api.calls"), SL_ACL_WHY_REPLAY);
        /* api = false: not served. */
        assert_int_equal(write_why(acls, "orders.in"), SL_ACL_WHY_REPLAY);
        cmds = commands_of(acls, "User:sluice");
        expect_comment(cmds,
                       "The HTTP API (api_listen) writes to the inputs it "
                       "serves (timers, cancels, flushes) and to the rates "
                       "topic (rates).",
                       1);
        expect_comment(cmds, "reroute", 0);
        free(cmds);
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);

        /* Without api_listen the API writes nothing. */
        acls = acls_of("[pipeline timers]\n"
                       "type = delay\n"
                       "input = timers.in\n"
                       "reroute = false\n"
                       "dlq = none\n");
        assert_false(has_topic(acls, "timers.in", SL_ACL_WRITE));
        sl_acls_destroy(acls);
}

/* Two delay pipelines, with a payload topic and without. */
#define PAYLOADS_AND_NOT                                                       \
        "[pipeline timers]\n"                                                  \
        "type = delay\n"                                                       \
        "input = timers.in\n"                                                  \
        "allowed_targets = notify.*\n"                                         \
        "payload_topic = timers.payloads\n"                                    \
        "[pipeline later]\n"                                                   \
        "type = delay\n"                                                       \
        "input = later.in\n"                                                   \
        "allowed_targets = notify.*\n"

/* A delay pipeline's payload topic is sluice's state, written and read
 * back like a changelog, for a reason of its own; a delay pipeline without
 * payload_topic has none. */
static void test_payload_topic(void **state) {
        sl_acls_t *acls;
        const sl_acl_t *e;
        char buf[320], *cmds;
        (void)state;

        acls = acls_of(PAYLOADS_AND_NOT);
        assert_true(has_topic(acls, "timers.payloads", SL_ACL_READ));
        assert_true(has_topic(acls, "timers.payloads", SL_ACL_WRITE));
        assert_true(
            has_topic(acls, "timers.payloads", SL_ACL_DESCRIBE_CONFIGS));
        e = sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL, "timers.payloads",
                         SL_ACL_READ);
        assert_int_equal(e->why, SL_ACL_WHY_PAYLOADS);
        assert_int_equal(e->first, SL_ACL_WHY_PAYLOADS);
        e = sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL, "timers.payloads",
                         SL_ACL_WRITE);
        assert_int_equal(e->why, SL_ACL_WHY_PAYLOADS);
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TOPIC, "timers.payloads", SL_ACL_READ,
                            buf, sizeof(buf)),
            "READ on TOPIC timers.payloads (a delay pipeline's payload topic; "
            "sluice acls lists TOPIC LITERAL timers.payloads READ)");
        /* Nothing for the pipeline without one, under any name. */
        for (int i = 0; i < acls->cnt; i++) {
                assert_false(acls->acls[i].why & SL_ACL_WHY_PAYLOADS &&
                             strcmp(acls->acls[i].name, "timers.payloads"));
                assert_null(strstr(acls->acls[i].name, "later.payloads"));
        }
        cmds = commands_of(acls, "User:sluice");
        expect_comment(cmds,
                       "Changelogs and the payload topic: written, and read "
                       "back (at every rebuild; payloads ahead of their "
                       "timers' due time).",
                       1);
        assert_non_null(strstr(cmds, "--topic timers.payloads"));
        free(cmds);
        assert_distinct(acls);
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);

        /* Beside a throttle's overflow, and two payload topics (the second
         * pipeline's set too). */
        acls = acls_of(PAYLOADS_AND_NOT "payload_topic = later.payloads\n"
                                        "[pipeline limits]\n"
                                        "type = throttle\n"
                                        "input = api.calls\n"
                                        "output = api.calls.limited\n");
        assert_true(has_topic(acls, "later.payloads", SL_ACL_READ));
        assert_true(has_topic(acls, "later.payloads", SL_ACL_WRITE));
        cmds = commands_of(acls, "User:sluice");
        expect_comment(cmds,
                       "Changelogs, the overflow and the payload topics: "
                       "written, and read back (at every rebuild; the "
                       "overflow as its backlog drains; payloads ahead of "
                       "their timers' due time).",
                       1);
        free(cmds);
        assert_commands_grant_table(acls, "User:sluice");
        sl_acls_destroy(acls);
}

/* A DLQ replay (dlqreplay.h) of each pipeline with a DLQ: Read on the
 * DLQ, Write on the input, Read on its group <app_id>-dlq-replay.<name>;
 * its transactional id is under the <app_id>- prefix, and nothing else is
 * added.  A pipeline without a DLQ adds nothing. */
static void test_dlq_replay(void **state) {
        sl_acls_t *acls, *none;
        const sl_acl_t *e;
        char buf[320], *cmds, id[512];
        sl_conf_t *conf = NULL;
        (void)state;

        acls = acls_of("[sluice]\n"
                       "app_id = app\n"
                       "[pipeline timers]\n"
                       "type = delay\n"
                       "input = timers.in\n"
                       "reroute = false\n"
                       "allowed_targets = notify.*\n"
                       "dlq = timers.dead\n"
                       "[pipeline batches]\n"
                       "type = debounce\n"
                       "input = orders.in\n"
                       "output = transfers.out\n"
                       "reroute = false\n"
                       "dlq = none\n");
        assert_distinct(acls);
        e = sl_acls_find(acls, SL_ACL_TOPIC, SL_ACL_LITERAL, "timers.dead",
                         SL_ACL_READ);
        assert_non_null(e);
        assert_int_equal(e->why, SL_ACL_WHY_REPLAY);
        assert_int_equal(write_why(acls, "timers.in"), SL_ACL_WHY_REPLAY);
        assert_int_equal(write_why(acls, "timers.dead"), SL_ACL_WHY_DLQ);
        e = sl_acls_find(acls, SL_ACL_GROUP, SL_ACL_LITERAL,
                         "app-dlq-replay.timers", SL_ACL_READ);
        assert_non_null(e);
        assert_int_equal(e->why, SL_ACL_WHY_REPLAY);
        e = sl_acls_find(acls, SL_ACL_TRANSACTIONAL_ID, SL_ACL_PREFIXED, "app-",
                         SL_ACL_WRITE);
        assert_int_equal(e->why, SL_ACL_WHY_TXN | SL_ACL_WHY_REPLAY);
        /* The id the replay uses is the group listed, under the prefix. */
        write_file(cfg_path, "[sluice]\napp_id = app\n[pipeline timers]\n"
                             "type = delay\ninput = timers.in\n"
                             "dlq = timers.dead\n");
        assert_int_equal(sl_conf_load(cfg_path, 0, &conf, NULL), 0);
        sl_conf_replay_id(conf, &conf->pipelines[0], id, sizeof(id));
        assert_string_equal(id, "app-dlq-replay.timers");
        sl_conf_destroy(conf);
        /* Nothing for batches (no DLQ). */
        assert_int_equal(write_why(acls, "orders.in"), 0);
        for (int i = 0; i < acls->cnt; i++)
                assert_null(strstr(acls->acls[i].name, "replay.batches"));
        /* What the replay needs beyond sluice run: these three (its
         * transactional id is under the prefix sluice has). */
        {
                int n = 0;
                for (int i = 0; i < acls->cnt; i++)
                        n += acls->acls[i].why == SL_ACL_WHY_REPLAY;
                assert_int_equal(n, 3); /* DLQ Read, input Write, group */
        }
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TOPIC, "timers.dead", SL_ACL_READ, buf,
                            sizeof(buf)),
            "READ on TOPIC timers.dead (a DLQ replay; sluice acls lists TOPIC "
            "LITERAL timers.dead READ)");
        assert_string_equal(
            sl_acls_refusal(acls, SL_ACL_TRANSACTIONAL_ID,
                            "app-dlq-replay.timers", SL_ACL_ANY, buf,
                            sizeof(buf)),
            "an operation on TRANSACTIONAL_ID app-dlq-replay.timers (the "
            "transactional ids; sluice acls lists TRANSACTIONAL_ID PREFIXED "
            "app- WRITE)");
        cmds = commands_of(acls, "User:sluice");
        expect_comment(cmds,
                       "DLQ replay (sluice dlq replay, POST "
                       "/v1/pipelines/{p}/dlq/replay): it reads the DLQs",
                       1);
        expect_comment(cmds, "a DLQ replay's is <app_id>-dlq-replay.<pipeline>",
                       1);
        assert_non_null(strstr(cmds, "--group app-dlq-replay.timers"));
        free(cmds);
        assert_commands_grant_table(acls, "User:sluice");

        /* Without any DLQ: no replay binding, no replay comment. */
        none = acls_of("[pipeline batches]\n"
                       "type = debounce\n"
                       "input = orders.in\n"
                       "output = transfers.out\n"
                       "dlq = none\n");
        for (int i = 0; i < none->cnt; i++)
                assert_false(none->acls[i].why & SL_ACL_WHY_REPLAY);
        cmds = commands_of(none, "User:sluice");
        expect_comment(cmds, "replay", 0);
        free(cmds);
        sl_acls_destroy(none);
        sl_acls_destroy(acls);
}

/* An instance_id that starts like a replay's id would share its
 * transactional id: refused. */
static void test_replay_instance_id(void **state) {
        sl_conf_t *conf = NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);
        (void)state;

        write_file(cfg_path, "[sluice]\ninstance_id = dlq-replay.timers\n"
                             "[pipeline timers]\ntype = delay\n"
                             "input = timers.in\n");
        assert_int_not_equal(sl_conf_load(cfg_path, 0, &conf, mem), 0);
        fclose(mem);
        assert_null(conf);
        assert_non_null(strstr(buf, "may not start with \"dlq-replay.\""));
        free(buf);
}

static void test_commands_quoting(void **state) {
        sl_acls_t *acls;
        char *cmds;
        (void)state;

        acls = acls_of("[sluice]\n"
                       "app_id = my app's\n"
                       "[pipeline timers]\n"
                       "type = delay\n"
                       "input = timers.in\n"
                       "allowed_targets = notify.*\n");
        cmds = commands_of(acls, "User:CN=sluice, O=Example");
        assert_non_null(strstr(cmds, "\nP='User:CN=sluice, O=Example'\n"));
        assert_non_null(strstr(cmds, "--allow-principal \"$P\""));
        assert_null(strstr(cmds, "--allow-principal $P"));
        assert_non_null(strstr(cmds, "--group 'my app'\\''s'"));
        assert_non_null(strstr(cmds, "--transactional-id 'my app'\\''s-'\n"));
        free(cmds);
        assert_commands_grant_table(acls, "User:CN=sluice, O=Example");

        cmds = commands_of(acls, "User:sluice");
        assert_non_null(strstr(cmds, "\nP=User:sluice\n"));
        assert_non_null(strstr(cmds, "--allow-principal $P "));
        free(cmds);
        sl_acls_destroy(acls);
}

static void test_principal_ok(void **state) {
        (void)state;
        assert_true(sl_acls_principal_ok("User:sluice"));
        assert_true(sl_acls_principal_ok("User:CN=sluice,O=x"));
        assert_true(sl_acls_principal_ok("User:*"));
        assert_false(sl_acls_principal_ok("sluice"));
        assert_false(sl_acls_principal_ok(":sluice"));
        assert_false(sl_acls_principal_ok("User:"));
        assert_false(sl_acls_principal_ok("Us er:x"));
        assert_false(sl_acls_principal_ok("User:a\nb"));
        assert_false(sl_acls_principal_ok(NULL));
}

/*
 * The command
 */

static int run_cmd(char **out, char **err, int argc, ...) {
        char *argv[16], opath[300], epath[300];
        int saved_out, saved_err, rc;
        va_list ap;

        va_start(ap, argc);
        for (int i = 0; i < argc; i++)
                argv[i] = va_arg(ap, char *);
        va_end(ap);
        argv[argc] = NULL;

        snprintf(opath, sizeof(opath), "%s/out", tmpdir);
        snprintf(epath, sizeof(epath), "%s/err", tmpdir);
        fflush(stdout);
        fflush(stderr);
        saved_out = dup(1);
        saved_err = dup(2);
        assert_non_null(freopen(opath, "w", stdout));
        assert_non_null(freopen(epath, "w", stderr));
        rc = sl_acls_cmd(argc, argv);
        fflush(stdout);
        fflush(stderr);
        dup2(saved_out, 1);
        dup2(saved_err, 2);
        close(saved_out);
        close(saved_err);

        for (int i = 0; i < 2; i++) {
                char **dst = i ? err : out;
                FILE *fp = fopen(i ? epath : opath, "r");
                long n;
                assert_non_null(fp);
                fseek(fp, 0, SEEK_END);
                n = ftell(fp);
                rewind(fp);
                *dst = calloc(1, (size_t)n + 1);
                if (n)
                        assert_int_equal(fread(*dst, 1, (size_t)n, fp), n);
                fclose(fp);
                unlink(i ? epath : opath);
        }
        return rc;
}

static void test_cmd(void **state) {
        char *out, *err, *table;
        sl_acls_t *acls;
        (void)state;

        acls = acls_of(THREE_OPS);
        table = table_of(acls);
        sl_acls_destroy(acls);

        assert_int_equal(
            run_cmd(&out, &err, 5, "acls", "-c", cfg_path, "--format", "table"),
            SL_EXIT_OK);
        assert_string_equal(out, table);
        assert_string_equal(err, "");
        free(out);
        free(err);

        /* commands is the default; --principal names P. */
        assert_int_equal(run_cmd(&out, &err, 5, "acls", "--config", cfg_path,
                                 "--principal", "User:timers"),
                         SL_EXIT_OK);
        assert_non_null(strstr(out, "\nP=User:timers\n"));
        assert_non_null(strstr(out, "kafka-acls.sh $A --add"));
        assert_string_equal(err, "");
        free(out);
        free(err);

        /* Usage errors: 2. */
        assert_int_equal(run_cmd(&out, &err, 1, "acls"), SL_EXIT_USAGE);
        assert_non_null(strstr(err, "-c FILE is required"));
        free(out);
        free(err);
        assert_int_equal(
            run_cmd(&out, &err, 5, "acls", "-c", cfg_path, "-f", "json"),
            SL_EXIT_USAGE);
        assert_non_null(strstr(err, "--format json"));
        free(out);
        free(err);
        assert_int_equal(
            run_cmd(&out, &err, 5, "acls", "-c", cfg_path, "-p", "sluice"),
            SL_EXIT_USAGE);
        assert_string_equal(out, "");
        free(out);
        free(err);
        assert_int_equal(run_cmd(&out, &err, 4, "acls", "-c", cfg_path, "x"),
                         SL_EXIT_USAGE);
        free(out);
        free(err);
        assert_int_equal(run_cmd(&out, &err, 2, "acls", "--help"), SL_EXIT_OK);
        assert_non_null(strstr(out, "usage: sluice acls -c FILE"));
        free(out);
        free(err);

        /* A bad config: its errors, exit 1, nothing on stdout. */
        write_file(cfg_path, "[pipeline p]\ntype = delay\n");
        assert_int_equal(run_cmd(&out, &err, 3, "acls", "-c", cfg_path),
                         SL_EXIT_FAIL);
        assert_string_equal(out, "");
        assert_non_null(strstr(err, "input"));
        assert_non_null(strstr(err, "sluice acls: "));
        free(out);
        free(err);
        free(table);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_three_operators),
            cmocka_unit_test(test_refusal),
            cmocka_unit_test(test_reroute_false),
            cmocka_unit_test(test_glob_pattern),
            cmocka_unit_test(test_target_prefix),
            cmocka_unit_test(test_default_targets_every_topic),
            cmocka_unit_test(test_shared_topics),
            cmocka_unit_test(test_api_writes),
            cmocka_unit_test(test_payload_topic),
            cmocka_unit_test(test_dlq_replay),
            cmocka_unit_test(test_replay_instance_id),
            cmocka_unit_test(test_commands_quoting),
            cmocka_unit_test(test_principal_ok),
            cmocka_unit_test(test_cmd),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
