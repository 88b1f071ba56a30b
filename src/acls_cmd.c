/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acls_cmd.c — `sluice acls`: loads a configuration and prints the Kafka
 * ACL bindings its principal needs (acls.h derives them), as kafka-acls.sh
 * command lines or as a table.  Talks to no broker.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "acls.h"
#include "cli.h"
#include "config.h"
#include "util.h"

#define DEFAULT_PRINCIPAL "User:sluice"

static const char usage_text[] =
    "usage: sluice acls -c FILE [--principal PRINCIPAL] "
    "[--format commands|table]\n"
    "\n"
    "Prints the Kafka ACL bindings sluice's principal needs for FILE (and\n"
    "the SLUICE_* environment overrides): Read on the inputs and rates\n"
    "topics, Write where sluice writes (with reroute, the inputs too),\n"
    "Read and Write on changelogs and overflow topics, DescribeConfigs on\n"
    "what the transactions write, the delay targets of allowed_targets\n"
    "(a prefixed pattern, or every topic for **), the consumer group, the\n"
    "rebuild reader's group and the transactional id prefix; for a DLQ\n"
    "replay (sluice dlq replay, the API's), Read on the DLQs, Write on the\n"
    "inputs and the replay's group.  Talks to no broker.\n"
    "\n"
    "  -c, --config FILE        the sluice config file\n"
    "  -p, --principal P        the principal to grant "
    "(default " DEFAULT_PRINCIPAL ")\n"
    "  -f, --format FORMAT      commands: kafka-acls.sh lines (default);\n"
    "                           table: one binding a line, tab-separated\n"
    "                           RESOURCE_TYPE PATTERN_TYPE NAME OPERATION\n"
    "  -h, --help               this help\n";

/* The last bootstrap.servers of [kafka] (the environment's wins), or
 * NULL. */
static const char *bootstrap_of(const sl_conf_t *conf) {
        const char *v = NULL;

        for (int i = 0; i < conf->kafka_cnt; i++)
                if (!strcmp(conf->kafka[i].key, "bootstrap.servers"))
                        v = conf->kafka[i].value;
        return v && *v ? v : NULL;
}

int sl_acls_cmd(int argc, char **argv) {
        static const struct option longopts[] = {
            {"config", required_argument, NULL, 'c'},
            {"principal", required_argument, NULL, 'p'},
            {"format", required_argument, NULL, 'f'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        const char *path = NULL, *principal = DEFAULT_PRINCIPAL;
        int table = 0, c;
        sl_conf_t *conf;
        sl_acls_t *acls;

        optind = 0; /* glibc: full reinitialisation (we may not be first) */
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:p:f:h", longopts, NULL)) !=
               -1) {
                switch (c) {
                case 'c':
                        path = optarg;
                        break;
                case 'p':
                        principal = optarg;
                        break;
                case 'f':
                        if (!strcmp(optarg, "table")) {
                                table = 1;
                        } else if (!strcmp(optarg, "commands")) {
                                table = 0;
                        } else {
                                fprintf(stderr,
                                        "sluice acls: --format %s: not one of "
                                        "commands, table\n",
                                        optarg);
                                fputs(usage_text, stderr);
                                return SL_EXIT_USAGE;
                        }
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return SL_EXIT_OK;
                case ':':
                        fprintf(stderr,
                                "sluice acls: option %s needs a value\n",
                                argv[optind - 1]);
                        fputs(usage_text, stderr);
                        return SL_EXIT_USAGE;
                default:
                        fprintf(stderr, "sluice acls: unknown option %s\n",
                                argv[optind - 1]);
                        fputs(usage_text, stderr);
                        return SL_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sluice acls: unexpected argument '%s'\n",
                        argv[optind]);
                fputs(usage_text, stderr);
                return SL_EXIT_USAGE;
        }
        if (!path) {
                fprintf(stderr, "sluice acls: -c FILE is required\n");
                fputs(usage_text, stderr);
                return SL_EXIT_USAGE;
        }
        if (!sl_acls_principal_ok(principal)) {
                char esc[256];
                fprintf(
                    stderr,
                    "sluice acls: --principal %s: expected TYPE:NAME, "
                    "such as User:sluice\n",
                    sl_escape(principal, strlen(principal), esc, sizeof(esc)));
                return SL_EXIT_USAGE;
        }
        if (sl_conf_load(path, 1, &conf, stderr) != 0) {
                fprintf(stderr, "sluice acls: %s: invalid config\n", path);
                return SL_EXIT_FAIL;
        }
        acls = sl_acls_new(conf);
        if (table)
                sl_acls_write_table(acls, stdout);
        else
                sl_acls_write_commands(acls, principal, bootstrap_of(conf),
                                       stdout);
        sl_acls_destroy(acls);
        sl_conf_destroy(conf);
        return fflush(stdout) == 0 && !ferror(stdout) ? SL_EXIT_OK
                                                      : SL_EXIT_FAIL;
}
