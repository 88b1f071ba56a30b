/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — `sluice <command>`: dispatch to the command modules (cli.h).
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "buildinfo.h" /* SL_COMMIT: written by the Makefile */
#include "cli.h"
#include "util.h"

/* jemalloc's options, read when it starts (an unprefixed jemalloc, as
 * Debian's, looks for this symbol; glibc's malloc ignores it; MALLOC_CONF
 * in the environment still overrides it).  A background thread gives
 * freed pages back to the kernel within about a second even while the
 * loop is idle: without it, what a burst of input or a rebuild freed stayed
 * in RSS until the next allocations (bench/NOTES.md, "RSS after a load"). */
const char *malloc_conf = "background_thread:true,dirty_decay_ms:1000";

static void usage(FILE *out) {
        fprintf(
            out,
            "usage: sluice <command> [options]\n"
            "\n"
            "Reshapes Kafka traffic in time: throttle, delay, debounce.\n"
            "\n"
            "commands:\n"
            "  run -c FILE                 run the configured pipelines\n"
            "  topics apply -c FILE        create missing pipeline topics\n"
            "  topics check -c FILE        verify pipeline topics\n"
            "  topics create -c FILE ...   create one topic (tests, demos)\n"
            "  topics describe -c FILE     print topics, partitions, "
            "configs\n"
            "  config check -c FILE        validate a config file\n"
            "  config dump -c FILE         print the effective "
            "configuration\n"
            "  config reference            print the configuration "
            "reference\n"
            "  inspect -c FILE PIPELINE [--key K] [--limit N]\n"
            "                              print a pipeline's pending "
            "state\n"
            "  acls -c FILE                print the Kafka ACLs sluice "
            "needs\n"
            "  dlq replay -c FILE PIPELINE [--reason R] [--since TIME]\n"
            "      [--until TIME] [--limit N] [--dry-run] [--from-beginning]\n"
            "                              send DLQ records back to the "
            "input\n"
            "  version                     print versions and the commit\n"
            "\n"
            "`sluice <command> --help` describes each command.\n");
}

/* `sluice version`: one "name version" a line.  The commit is the one this
 * binary was built from (the Makefile's buildinfo.h: git's HEAD, or a
 * tarball's COMMIT file, or "unknown").  librdkafka is the library loaded
 * now; when it is not the release the headers of the build named, that
 * one follows, since a fix or a bug may be in either. */
static int version_cmd(void) {
        char mem[96];
        int built = RD_KAFKA_VERSION;

        printf("sluice %s\n", SL_VERSION);
        printf("commit %s\n", SL_COMMIT);
        printf("librdkafka %s", rd_kafka_version_str());
        if (rd_kafka_version() != built) {
                printf(" (built against %d.%d.%d", (built >> 24) & 0xff,
                       (built >> 16) & 0xff, (built >> 8) & 0xff);
                if ((built & 0xff) != 0xff)
                        printf("-pre%d", built & 0xff);
                printf(")");
        }
        printf("\nlibuv %s\n%s\n", uv_version_string(),
               sl_mem_allocator(mem, sizeof(mem)));
        return SL_EXIT_OK;
}

int main(int argc, char **argv) {
        static const struct {
                const char *name;
                int (*fn)(int argc, char **argv);
        } cmds[] = {
            {"run", sl_app_cmd},         /* app.c */
            {"topics", sl_topics_cmd},   /* topics.c */
            {"config", sl_conf_cmd},     /* config.c */
            {"inspect", sl_inspect_cmd}, /* inspect.c */
            {"acls", sl_acls_cmd},       /* acls_cmd.c */
            {"dlq", sl_dlq_cmd},         /* dlq_cmd.c */
        };

        if (argc < 2) {
                usage(stderr);
                return SL_EXIT_USAGE;
        }
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
            !strcmp(argv[1], "help")) {
                usage(stdout);
                return SL_EXIT_OK;
        }
        if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version"))
                return version_cmd();
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
                if (!strcmp(argv[1], cmds[i].name))
                        return cmds[i].fn(argc - 1, argv + 1);
        fprintf(stderr, "sluice: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return SL_EXIT_USAGE;
}
