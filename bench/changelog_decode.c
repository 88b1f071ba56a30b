/* SPDX-License-Identifier: Apache-2.0 */
/*
 * changelog_decode.c — CPU per changelog record of reading it during a
 * rebuild: protobuf-c's unpack and free (what sluice did) against the
 * in-place readers of src/logpb.c (what it does), on the same bytes.  No
 * broker.
 *
 *   build/bench/changelog_decode [RECORDS [RUNS]]
 *
 * Two records, each read RECORDS times (default 1000000) per run: a
 * DebounceChunk of 3 items (15-byte ids, 100-byte payloads; the
 * debounce_ingest section writes 3.1 items per chunk) and a delay Timer
 * (16-byte key, 100-byte payload, one header).  Each read also touches
 * what a restore takes (sequence numbers, payload lengths).  Prints the
 * CPU ns per record of each run and, last, the medians of RUNS runs
 * (default 3).  Benchmarks link libc's malloc, not the jemalloc of
 * ./sluice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "logpb.h"
#include "sluice.pb-c.h"

static const char *prog = "changelog_decode";

static double cpu_seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_dbl(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static char payload[100];
static volatile int64_t sink;

static size_t chunk_record(uint8_t *buf) {
        Sluice__V1__DebounceItem it[3], *ip[3];
        Sluice__V1__DebounceChunk ch = SLUICE__V1__DEBOUNCE_CHUNK__INIT;
        for (int k = 0; k < 3; k++) {
                sluice__v1__debounce_item__init(&it[k]);
                it[k].id.data = (uint8_t *)"item-0000000001";
                it[k].id.len = 15;
                it[k].payload.data = (uint8_t *)payload;
                it[k].payload.len = sizeof(payload);
                it[k].first_seen_ms = 1700000000000;
                it[k].last_update_ms = 1700000000001;
                it[k].seq = 123456 + k;
                ip[k] = &it[k];
        }
        ch.n_items = 3;
        ch.items = ip;
        return sluice__v1__debounce_chunk__pack(&ch, buf);
}

static size_t timer_record(uint8_t *buf) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        Sluice__V1__Header h = SLUICE__V1__HEADER__INIT, *hp = &h;
        h.name = "trace-id";
        h.value.data = (uint8_t *)"0123456789abcdef";
        h.value.len = 16;
        tm.due_ms = 1700000060000;
        tm.target_topic = "orders.reminders";
        tm.target_key.data = (uint8_t *)"order-0000000042";
        tm.target_key.len = 16;
        tm.has_target_key = 1;
        tm.payload.data = (uint8_t *)payload;
        tm.payload.len = sizeof(payload);
        tm.n_headers = 1;
        tm.headers = &hp;
        tm.seq = 987654;
        tm.created_ms = 1700000000000;
        return sluice__v1__timer__pack(&tm, buf);
}

/* CPU ns per read of rec[0..len) by one of the four readers. */
static double run(int which, const uint8_t *rec, size_t len, int64_t n) {
        double t0 = cpu_seconds();
        for (int64_t i = 0; i < n; i++) {
                switch (which) {
                case 0: {
                        Sluice__V1__DebounceChunk *c =
                            sluice__v1__debounce_chunk__unpack(NULL, len, rec);
                        if (!c)
                                bench_die(prog, "chunk refused");
                        for (size_t j = 0; j < c->n_items; j++)
                                sink += c->items[j]->seq +
                                        (int64_t)c->items[j]->payload.len;
                        sluice__v1__debounce_chunk__free_unpacked(c, NULL);
                        break;
                }
                case 1: {
                        sl_logpb_dbitem_t items[32];
                        long m =
                            sl_logpb_dbchunk_read(rec, len, items, 32, NULL);
                        if (m < 0)
                                bench_die(prog, "chunk refused");
                        for (long j = 0; j < m; j++)
                                sink += items[j].seq +
                                        (int64_t)items[j].payload_len;
                        break;
                }
                case 2: {
                        Sluice__V1__Timer *t =
                            sluice__v1__timer__unpack(NULL, len, rec);
                        if (!t)
                                bench_die(prog, "timer refused");
                        sink += t->seq + (int64_t)t->payload.len;
                        sluice__v1__timer__free_unpacked(t, NULL);
                        break;
                }
                default: {
                        sl_logpb_timer_t t;
                        if (sl_logpb_timer_read(&t, rec, len) < 0)
                                bench_die(prog, "timer refused");
                        sink += t.seq + (int64_t)t.payload_len;
                        sl_logpb_timer_free(&t);
                        break;
                }
                }
        }
        return (cpu_seconds() - t0) * 1e9 / (double)n;
}

int main(int argc, char **argv) {
        static const char *names[4] = {"chunk protobuf-c", "chunk in place",
                                       "timer protobuf-c", "timer in place"};
        int64_t n = 1000000, runs = 3;
        uint8_t chunk[1024], timer[1024];
        size_t chunk_len, timer_len;
        double ns[4][15];

        if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
                fprintf(stderr, "usage: %s [RECORDS [RUNS]]\n", prog);
                return 1;
        }
        if (argc > 1)
                n = bench_parse_int(prog, "RECORDS", argv[1], 1, 100000000);
        if (argc > 2)
                runs = bench_parse_int(prog, "RUNS", argv[2], 1, 15);
        memset(payload, '.', sizeof(payload));
        chunk_len = chunk_record(chunk);
        timer_len = timer_record(timer);
        for (int64_t r = 0; r < runs; r++) {
                for (int w = 0; w < 4; w++)
                        ns[w][r] = run(w, w < 2 ? chunk : timer,
                                       w < 2 ? chunk_len : timer_len, n);
                printf("run %lld: %s %.0f, %s %.0f, %s %.0f, %s %.0f ns\n",
                       (long long)r + 1, names[0], ns[0][r], names[1], ns[1][r],
                       names[2], ns[2][r], names[3], ns[3][r]);
        }
        for (int w = 0; w < 4; w++)
                qsort(ns[w], (size_t)runs, sizeof(double), cmp_dbl);
        printf("changelog_decode records=%lld chunk_bytes=%zu timer_bytes=%zu "
               "chunk_protobuf_c_ns=%.0f chunk_in_place_ns=%.0f "
               "timer_protobuf_c_ns=%.0f timer_in_place_ns=%.0f\n",
               (long long)n, chunk_len, timer_len, ns[0][runs / 2],
               ns[1][runs / 2], ns[2][runs / 2], ns[3][runs / 2]);
        return 0;
}
