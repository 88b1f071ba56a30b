/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspect.c — `sluice inspect -c FILE PIPELINE [--key K]`: reads a
 * pipeline's changelog (without joining the consumer group, read_committed,
 * up to the end offsets captured at start), folds it the way a rebuild
 * does, and hands it to the printer of the pipeline's operator
 * (inspect.h; inspect_<name>.c, found through ops.def), which prints the
 * pending state.
 */
#include "inspect.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "kafka.h"
#include "log.h"
#include "timerheap.h"
#include "util.h"

#define INSPECT_DEADLINE_MS (120 * 1000)

static void usage(FILE *out) {
        fprintf(out,
                "usage: sluice inspect -c FILE PIPELINE [--key K] [--limit N]\n"
                "\n"
                "Reads PIPELINE's changelog (without joining the group) and "
                "prints its\n"
                "pending state: for delay, the pending timers in due order "
                "with their\n"
                "target and payload (read back from payload_topic where the "
                "changelog\n"
                "indexes them); for debounce, the open groups in flush "
                "order with their\n"
                "item counts and ages.  --key shows one id (delay) or one "
                "group and\n"
                "its items (debounce) only; --limit caps the rows (default "
                "50).\n"
                "For throttle, it also reads the rates topic and the "
                "overflow partitions\n"
                "from their checkpoints, and lists the keys with a backlog, "
                "largest first:\n"
                "rate, tokens as of the key's last changelog record, backlog "
                "length and\n"
                "bytes, age of the oldest buffered message.\n");
}

/* A changelog record may hold any time (an older sluice, a corrupted or
 * hand-written record): formatting and differences must not overflow. */
void sl_inspect_fmt_time(int64_t ms, char *buf, size_t size) {
        if (sl_time_rfc3339(ms, buf, size))
                snprintf(buf, size, "%" PRId64 "ms", ms);
}

double sl_inspect_secs_between(int64_t a, int64_t b) {
        return ((double)b - (double)a) / 1000.0;
}

/* A read_committed consumer that assigns partitions itself (never
 * commits), with conf's [kafka] settings; NULL, said on stderr, when it
 * cannot be made. */
static rd_kafka_t *inspect_consumer_new(sl_conf_t *conf) {
        char errstr[512];
        rd_kafka_t *rk =
            sl_kafka_reader_new(conf, "sluice-inspect", errstr, sizeof(errstr));

        if (!rk)
                fprintf(stderr, "sluice inspect: %s\n", errstr);
        return rk;
}

/* A partition's watermarks, asked again every half second while the
 * answer is one a leader change or a broker away gives (librdkafka's own
 * call does not retry those): during a rolling restart, or just after a
 * node rejoins, the first answer can name a node that no longer leads. */
static rd_kafka_resp_err_t inspect_watermarks(rd_kafka_t *rk, const char *topic,
                                              int p, int64_t *lo, int64_t *hi,
                                              int64_t deadline) {
        for (;;) {
                int64_t left = deadline - sl_now_ms();
                rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
                    rk, topic, p, lo, hi, (int)SL_MIN(left, 10000));
                switch (err) {
                case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
                case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
                case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
                case RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH:
                case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE:
                case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
                case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
                case RD_KAFKA_RESP_ERR__TIMED_OUT:
                case RD_KAFKA_RESP_ERR__TRANSPORT:
                case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
                        if (deadline - sl_now_ms() <= 500)
                                return err;
                        usleep(500 * 1000);
                        break;
                default:
                        return err;
                }
        }
}

int sl_inspect_read_topic(sl_conf_t *conf, const char *topic, int parts,
                          const int64_t *from, sl_inspect_read_cb cb,
                          void *opaque) {
        rd_kafka_t *rk = inspect_consumer_new(conf);
        rd_kafka_topic_partition_list_t *l;
        int64_t *end;
        int done = 0;
        int64_t deadline = sl_now_ms() + INSPECT_DEADLINE_MS;

        if (!rk)
                return -1;
        end = sl_calloc((size_t)parts, sizeof(*end));
        l = rd_kafka_topic_partition_list_new(parts);
        for (int p = 0; p < parts; p++) {
                int64_t lo = 0, hi = 0, start;
                rd_kafka_resp_err_t err =
                    inspect_watermarks(rk, topic, p, &lo, &hi, deadline);
                if (err) {
                        fprintf(stderr, "sluice inspect: %s [%d]: %s\n", topic,
                                p, rd_kafka_err2str(err));
                        goto fail;
                }
                start = from ? SL_MAX(from[p], lo) : lo;
                end[p] = hi;
                if (hi <= start) {
                        end[p] = -1; /* nothing to read */
                        done++;
                        continue;
                }
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    from ? start : RD_KAFKA_OFFSET_BEGINNING;
        }
        rd_kafka_assign(rk, l);
        while (done < parts) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
                if (sl_now_ms() > deadline) {
                        fprintf(stderr,
                                "sluice inspect: %s not read to its end "
                                "within %d s (an open transaction?)\n",
                                topic, INSPECT_DEADLINE_MS / 1000);
                        if (m)
                                rd_kafka_message_destroy(m);
                        goto fail;
                }
                if (!m)
                        continue;
                if (m->partition >= 0 && m->partition < parts &&
                    end[m->partition] >= 0) {
                        int p = m->partition;
                        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                                if (m->offset >= end[p]) {
                                        end[p] = -1;
                                        done++;
                                }
                        } else if (!m->err) {
                                cb(p, m, opaque);
                                if (m->offset + 1 >= end[p]) {
                                        end[p] = -1;
                                        done++;
                                }
                        } else {
                                fprintf(stderr, "sluice inspect: %s\n",
                                        rd_kafka_message_errstr(m));
                        }
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_topic_partition_list_destroy(l);
        free(end);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return 0;
fail:
        rd_kafka_topic_partition_list_destroy(l);
        free(end);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return -1;
}

/* sl_inspect_read_offsets() reads on across a gap of up to this many
 * records rather than seeking past it (op_delay.c's KX_FETCH_GAP;
 * bench/NOTES.md "Reading one record back by offset"). */
#define INSPECT_READ_GAP 64

/* Points rk's one assigned partition at topic [p] offset off. */
static int inspect_assign_at(rd_kafka_t *rk, const char *topic, int p,
                             int64_t off) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_resp_err_t err;
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = off;
        err = rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err) {
                fprintf(stderr, "sluice inspect: %s [%d]: %s\n", topic, p,
                        rd_kafka_err2str(err));
                return -1;
        }
        return 0;
}

/* The wanted offsets at[0..n) of one partition, in order. */
static int read_partition_at(rd_kafka_t *rk, const char *topic,
                             const sl_inspect_at_t *at, size_t n,
                             sl_inspect_read_cb cb, void *opaque,
                             int64_t deadline) {
        int p = at[0].partition;
        int64_t lo = 0, hi = 0;
        size_t i = 0;
        rd_kafka_resp_err_t err =
            inspect_watermarks(rk, topic, p, &lo, &hi, deadline);

        if (err) {
                fprintf(stderr, "sluice inspect: %s [%d]: %s\n", topic, p,
                        rd_kafka_err2str(err));
                return -1;
        }
        while (i < n) {
                int64_t pos;
                if (at[i].offset < lo || at[i].offset >= hi) {
                        i++; /* gone, or never there */
                        continue;
                }
                if (inspect_assign_at(rk, topic, p, at[i].offset) == -1)
                        return -1;
                pos = at[i].offset;
                while (i < n) {
                        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
                        if (sl_now_ms() > deadline) {
                                fprintf(stderr,
                                        "sluice inspect: %s [%d] not read "
                                        "within %d s (an open transaction?)\n",
                                        topic, p, INSPECT_DEADLINE_MS / 1000);
                                if (m)
                                        rd_kafka_message_destroy(m);
                                return -1;
                        }
                        if (!m)
                                continue;
                        if (m->partition != p) {
                                rd_kafka_message_destroy(m);
                                continue;
                        }
                        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                                /* The committed end: what did not come
                                 * before it is gone. */
                                i = n;
                        } else if (m->err) {
                                fprintf(stderr, "sluice inspect: %s\n",
                                        rd_kafka_message_errstr(m));
                        } else {
                                int found = 0;
                                while (i < n && at[i].offset < m->offset)
                                        i++; /* passed over: gone */
                                while (i < n && at[i].offset == m->offset) {
                                        found = 1;
                                        i++;
                                }
                                if (found)
                                        cb(p, m, opaque);
                                pos = m->offset + 1;
                        }
                        rd_kafka_message_destroy(m);
                        if (pos >= hi ||
                            (i < n && at[i].offset - pos > INSPECT_READ_GAP))
                                break; /* the rest: past the end, or a seek */
                }
        }
        return 0;
}

int sl_inspect_read_offsets(sl_conf_t *conf, const char *topic,
                            const sl_inspect_at_t *at, size_t n,
                            sl_inspect_read_cb cb, void *opaque) {
        int64_t deadline = sl_now_ms() + INSPECT_DEADLINE_MS;
        rd_kafka_t *rk;
        int rc = 0;

        if (!n)
                return 0;
        if (!(rk = inspect_consumer_new(conf)))
                return -1;
        for (size_t i = 0, j; i < n && rc == 0; i = j) {
                for (j = i + 1; j < n && at[j].partition == at[i].partition;
                     j++)
                        ;
                rc = read_partition_at(rk, topic, at + i, j - i, cb, opaque,
                                       deadline);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return rc;
}

typedef struct fold_ctx_s {
        sl_timerheap_t **maps;
        int64_t *records;
} fold_ctx_t;

/* Folds a changelog record the way a rebuild does. */
static void fold_changelog(int p, const rd_kafka_message_t *m, void *opaque) {
        fold_ctx_t *c = opaque;
        if (!m->key)
                return;
        (*c->records)++;
        if (m->payload)
                sl_timerheap_upsert(c->maps[p], m->key, m->key_len, 0,
                                    m->offset, m->payload, m->len);
        else
                sl_timerheap_remove(c->maps[p], m->key, m->key_len);
}

/* Reads every partition of topic into maps[p] (key → last value). */
static int read_changelog(sl_conf_t *conf, const char *topic, int parts,
                          sl_timerheap_t **maps, int64_t *records) {
        fold_ctx_t c = {maps, records};
        return sl_inspect_read_topic(conf, topic, parts, NULL, fold_changelog,
                                     &c);
}

/* The printer of pipeline type, or NULL. */
static int (*printer(sl_op_type_t type))(const sl_inspect_t *in) {
        static const struct {
                sl_op_type_t type;
                int (*print)(const sl_inspect_t *in);
        } printers[] = {
#define SL_OPERATOR(name, NAME) {SL_OP_##NAME, sl_inspect_##name},
#include "ops.def"
#undef SL_OPERATOR
        };
        for (size_t i = 0; i < SL_ARRAY_SIZE(printers); i++)
                if (printers[i].type == type)
                        return printers[i].print;
        return NULL;
}

int sl_inspect_cmd(int argc, char **argv) {
        static const struct option opts[] = {{"config", 1, NULL, 'c'},
                                             {"key", 1, NULL, 'k'},
                                             {"limit", 1, NULL, 'n'},
                                             {"help", 0, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        const char *path = NULL, *key = NULL;
        long limit = 50;
        const sl_pipeline_conf_t *pc;
        sl_conf_t *conf;
        sl_timerheap_t **maps;
        int (*print)(const sl_inspect_t *in);
        int c, parts, rc;
        int64_t records = 0;

        optind = 1;
        while ((c = getopt_long(argc, argv, "c:k:n:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        path = optarg;
                        break;
                case 'k':
                        key = optarg;
                        break;
                case 'n':
                        limit = strtol(optarg, NULL, 10);
                        break;
                case 'h':
                        usage(stdout);
                        return SL_EXIT_OK;
                default:
                        usage(stderr);
                        return SL_EXIT_USAGE;
                }
        }
        if (!path || optind != argc - 1 || limit < 0) {
                usage(stderr);
                return SL_EXIT_USAGE;
        }
        sl_log_set_level(LOG_WARNING);
        if (!(pc = sl_conf_load_pipeline(path, argv[optind], "sluice inspect",
                                         &conf, stderr)))
                return SL_EXIT_FAIL;
        if (!(print = printer(pc->type))) {
                fprintf(stderr,
                        "sluice inspect: pipeline %s: inspect of type %s is "
                        "not available in this build\n",
                        pc->name, sl_op_type_name(pc->type));
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        {
                char errstr[512];
                rd_kafka_t *rk = sl_kafka_client_new(
                    conf, RD_KAFKA_PRODUCER, NULL, errstr, sizeof(errstr));
                if (!rk) {
                        fprintf(stderr, "sluice inspect: %s\n", errstr);
                        sl_conf_destroy(conf);
                        return SL_EXIT_FAIL;
                }
                parts = sl_kafka_partition_count(rk, pc->changelog, 10000);
                rd_kafka_destroy(rk);
        }
        if (parts <= 0) {
                fprintf(stderr, "sluice inspect: changelog %s %s\n",
                        pc->changelog,
                        parts == 0 ? "does not exist" : "cannot be described");
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        maps = sl_calloc((size_t)parts, sizeof(*maps));
        for (int p = 0; p < parts; p++)
                maps[p] = sl_timerheap_new();
        if (read_changelog(conf, pc->changelog, parts, maps, &records) == -1)
                rc = SL_EXIT_FAIL;
        else
                rc = print(&(sl_inspect_t){conf, pc, maps, parts, key, limit});
        for (int p = 0; p < parts; p++)
                sl_timerheap_destroy(maps[p]);
        free(maps);
        sl_conf_destroy(conf);
        return rc;
}
