/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlq_cmd.c — `sluice dlq replay -c FILE PIPELINE`: the command line of a
 * DLQ replay (dlqreplay.h does it): reads the options, prints each record
 * it replays in a dry run and each it cannot replay, then a summary.
 */
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "dlqreplay.h"
#include "log.h"
#include "parse.h"
#include "util.h"

static void usage(FILE *out) {
        fprintf(out,
                "usage: sluice dlq replay -c FILE PIPELINE [--reason R] "
                "[--since TIME]\n"
                "           [--until TIME] [--limit N] [--dry-run] "
                "[--from-beginning]\n"
                "\n"
                "Re-produces PIPELINE's DLQ records to its input: the original "
                "key, value\n"
                "and headers, without sluice's own (sluice-error, "
                "sluice-error-detail,\n"
                "sluice-source-*, sluice-timer-id, sluice-due, sluice-cut).  "
                "Exactly once,\n"
                "even when interrupted and run again: the progress is the "
                "consumer group\n"
                "<app_id>-dlq-replay.<pipeline>, committed in the transactions "
                "that\n"
                "re-produce the records.  Reads from the committed offsets to "
                "the DLQ's\n"
                "end as seen at start, then prints what it did.\n"
                "\n"
                "  --reason R        only records whose sluice-error is R (may "
                "repeat)\n"
                "  --since TIME      only records put in the DLQ at or after "
                "TIME\n"
                "  --until TIME      only records put in the DLQ before TIME\n"
                "  --limit N         replay at most N records, then stop\n"
                "  --dry-run         print what would be replayed; commit "
                "nothing\n"
                "  --from-beginning  start from the DLQ's first record, not "
                "from where\n"
                "                    the last run stopped\n"
                "\n"
                "TIME: epoch milliseconds or RFC 3339 (2026-01-01T00:00:00Z).  "
                "Records the\n"
                "filters leave out are passed over for good: a later run with "
                "other filters\n"
                "goes on after them (--from-beginning to see them again).  Not "
                "replayed,\n"
                "counted: a cut copy (sluice-cut), a fired timer or a lost "
                "payload (no\n"
                "source record: its control headers are gone).\n");
}

/* The TIME of --since/--until. */
static int parse_time(const char *opt, const char *s, int64_t *out) {
        char errstr[256];
        if (sl_parse_timestamp_ms(s, out, errstr, sizeof(errstr))) {
                fprintf(stderr, "sluice dlq replay: %s %s: %s\n", opt, s,
                        errstr);
                return -1;
        }
        return 0;
}

typedef struct cmd_s {
        const sl_pipeline_conf_t *pc;
        const sl_dlqreplay_opts_t *o;
} cmd_t;

static void on_started(void *opaque, const sl_dlqreplay_result_t *res) {
        const cmd_t *cmd = opaque;
        printf("%s %s -> %s (group %s)\n",
               cmd->o->dry_run ? "dry run:" : "replaying", cmd->pc->dlq,
               cmd->pc->input, res->id);
        fflush(stdout);
}

static void on_record(void *opaque, const sl_dlqreplay_rec_t *rec) {
        const cmd_t *cmd = opaque;
        char k[100];
        const char *key = rec->key
                              ? sl_escape(rec->key, rec->key_len, k, sizeof(k))
                              : "(null)";

        if (rec->skip >= SL_DLQREPLAY_SKIP_CUT)
                printf("skip [%" PRId32 "] @%" PRId64 " key '%s': %s\n",
                       rec->partition, rec->offset, key,
                       sl_dlqreplay_skip_text(rec->skip));
        else if (rec->skip < 0 && cmd->o->dry_run)
                printf("would replay [%" PRId32 "] @%" PRId64
                       " key '%s' (%zu bytes, %zu headers) to %s\n",
                       rec->partition, rec->offset, key, rec->value_len,
                       rec->hdrs ? rd_kafka_header_cnt(rec->hdrs) : 0,
                       cmd->pc->input);
}

static void summary(const cmd_t *cmd, const sl_dlqreplay_result_t *r) {
        const char *sep = "";
        const char *verb = cmd->o->dry_run ? "would replay" : "replayed";

        for (int p = 0; p < r->part_cnt; p++) {
                const sl_dlqreplay_part_t *dp = &r->parts[p];
                printf("partition %d: offsets %" PRId64 "..%" PRId64
                       " of %" PRId64 ": %s %" PRId64 ", skipped %" PRId64 "\n",
                       p, dp->start, dp->next, dp->end, verb, dp->replayed,
                       dp->skipped);
        }
        printf("%s %" PRId64 " to %s, skipped %" PRId64, verb, r->replayed,
               cmd->pc->input, r->skipped);
        if (r->skipped) {
                printf(" (");
                for (int s = 0; s < SL_DLQREPLAY_SKIP__CNT; s++)
                        if (r->skips[s]) {
                                printf("%s%" PRId64 " %s", sep, r->skips[s],
                                       sl_dlqreplay_skip_text(s));
                                sep = ", ";
                        }
                printf(")");
        }
        printf("%s\n", cmd->o->dry_run ? "; dry run: nothing committed" : "");
}

static int replay_cmd(int argc, char **argv) {
        static const struct option opts[] = {{"config", 1, NULL, 'c'},
                                             {"reason", 1, NULL, 'r'},
                                             {"since", 1, NULL, 's'},
                                             {"until", 1, NULL, 'u'},
                                             {"limit", 1, NULL, 'n'},
                                             {"dry-run", 0, NULL, 'd'},
                                             {"from-beginning", 0, NULL, 'b'},
                                             {"help", 0, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        sl_dlqreplay_opts_t o = {.since = -1, .until = -1, .limit = -1};
        sl_dlqreplay_result_t res;
        const char *path = NULL;
        const sl_pipeline_conf_t *pc;
        sl_conf_t *conf;
        char *end, errstr[512];
        int c, rc;

        optind = 1;
        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        path = optarg;
                        break;
                case 'r':
                        if (o.reason_cnt == SL_DLQREPLAY_MAX_REASONS) {
                                fprintf(stderr,
                                        "sluice dlq replay: at most %d "
                                        "--reason\n",
                                        SL_DLQREPLAY_MAX_REASONS);
                                return SL_EXIT_USAGE;
                        }
                        o.reasons[o.reason_cnt++] = optarg;
                        break;
                case 's':
                        if (parse_time("--since", optarg, &o.since))
                                return SL_EXIT_USAGE;
                        break;
                case 'u':
                        if (parse_time("--until", optarg, &o.until))
                                return SL_EXIT_USAGE;
                        break;
                case 'n':
                        o.limit = strtoll(optarg, &end, 10);
                        if (*end || !*optarg || o.limit < 0) {
                                fprintf(stderr,
                                        "sluice dlq replay: --limit %s: not "
                                        "a count\n",
                                        optarg);
                                return SL_EXIT_USAGE;
                        }
                        break;
                case 'd':
                        o.dry_run = 1;
                        break;
                case 'b':
                        o.from_beginning = 1;
                        break;
                case 'h':
                        usage(stdout);
                        return SL_EXIT_OK;
                default:
                        usage(stderr);
                        return SL_EXIT_USAGE;
                }
        }
        if (!path || optind != argc - 1) {
                usage(stderr);
                return SL_EXIT_USAGE;
        }
        sl_log_set_level(LOG_WARNING);
        if (!(pc = sl_conf_load_pipeline(path, argv[optind],
                                         "sluice dlq replay", &conf, stderr)))
                return SL_EXIT_FAIL;
        if (!pc->dlq) {
                fprintf(stderr, "sluice dlq replay: pipeline %s has no DLQ\n",
                        pc->name);
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        {
                cmd_t cmd = {pc, &o};
                sl_dlqreplay_cbs_t cbs = {on_started, on_record, &cmd};

                rc = sl_dlqreplay_run(conf, pc, &o, &cbs, NULL, &res, errstr,
                                      sizeof(errstr));
                if (rc)
                        fprintf(stderr, "sluice dlq replay: %s\n", errstr);
                if (rc && res.started)
                        fprintf(stderr,
                                "sluice dlq replay: stopped; what was "
                                "committed stays, a new run goes on from "
                                "there\n");
                if (res.started)
                        summary(&cmd, &res);
        }
        sl_dlqreplay_result_clear(&res);
        sl_conf_destroy(conf);
        return rc ? SL_EXIT_FAIL : SL_EXIT_OK;
}

int sl_dlq_cmd(int argc, char **argv) {
        if (argc >= 2 && !strcmp(argv[1], "replay"))
                return replay_cmd(argc - 1, argv + 1);
        if (argc >= 2 &&
            (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
                usage(stdout);
                return SL_EXIT_OK;
        }
        usage(stderr);
        return SL_EXIT_USAGE;
}
