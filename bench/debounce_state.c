/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debounce_state.c — CPU per item of the debounce window state alone
 * (debounce.c), with no Kafka: the part of the debounce_ingest figure that
 * is sluice's own data structure, measured without a broker and the other
 * processes of the machine in it.
 *
 *   build/bench/debounce_state [--json] [--seal N] [ITEMS [GROUPS [RUNS]]]
 *
 * Feeds ITEMS items (default 1000000) of 100 bytes over GROUPS groups
 * (default 2500: one partition of the debounce_ingest section) with keys
 * cycling and max_items = 100, calling what op_debounce.c calls per input
 * record: the flush check of the group, find, group, upsert, the flush
 * check again (each batch encoded as JSON and freed), the wake-up bound.
 * Prints the process CPU time per item of each of RUNS runs (default 3)
 * and their median.  Payloads are 100 dots, which the JSON batch carries
 * as a string; with --json, a 100-byte JSON object, which it embeds as
 * JSON.  Asserts nothing but the batch count.  No broker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "debounce.h"

static const char *prog = "debounce_state";

static double cpu_seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void take_all(sl_debounce_t *d, const char *key, size_t keylen,
                     int64_t now, int64_t *batches) {
        sl_debounce_batch_t *b;
        while (sl_debounce_take(d, key, keylen, now, &b)) {
                size_t len;
                free(sl_debounce_batch_json(b, &len));
                sl_debounce_batch_free(b);
                (*batches)++;
        }
}

/* One run: CPU ns per item. */
static double run(int64_t n, int64_t groups, int json, int64_t seal) {
        sl_debounce_params_t p = {60000, 120000, 100, 1 << 30, "dbin"};
        sl_debounce_t *d = sl_debounce_new(&p);
        char payload[100];
        int64_t now = 1700000000000LL, batches = 0, want = 0;
        double t0;

        memset(payload, '.', sizeof(payload));
        if (json) {
                /* A JSON object padded with spaces to 100 bytes. */
                static const char js[] =
                    "{\"order\":\"A0012345\",\"sku\":\"X-100-BLUE\",\"qty\":"
                    "3,\"price\":12.5,\"gift\":false,\"tags\":[\"a\",\"b\"]}";
                memset(payload, ' ', sizeof(payload));
                memcpy(payload, js, sizeof(js) - 1);
        }
        t0 = cpu_seconds();
        for (int64_t i = 0; i < n; i++) {
                char key[32], id[32];
                size_t kl = (size_t)snprintf(key, sizeof(key), "k%lld",
                                             (long long)(i % groups * 4));
                size_t il =
                    (size_t)snprintf(id, sizeof(id), "%lld", (long long)i);
                sl_debounce_item_t old;
                sl_debounce_group_t g;

                if (!(i & 63))
                        now++; /* the cached clock's pace */
                take_all(d, key, kl, now, &batches);
                sl_debounce_find(d, key, kl, id, il, &old);
                sl_debounce_group(d, key, kl, &g);
                if (sl_debounce_upsert(d, key, kl, id, il, payload,
                                       sizeof(payload), now, i) < 0)
                        bench_die(prog, "upsert %lld failed", (long long)i);
                take_all(d, key, kl, now, &batches);
                (void)sl_debounce_due_bound(d);
                /* A commit every seal records: the seal packs the chunk
                 * records (written nowhere here). */
                if (i % seal == seal - 1)
                        sl_debounce_seal(d);
        }
        t0 = cpu_seconds() - t0;
        for (int64_t k = 0; k < groups; k++) /* max_items batches */
                want += (n / groups + (k < n % groups)) / 100;
        if (batches != want)
                bench_die(prog, "%lld batches, want %lld", (long long)batches,
                          (long long)want);
        sl_debounce_destroy(d);
        return t0 * 1e9 / (double)n;
}

static int cmp_dbl(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        int64_t n = 1000000, groups = 2500, runs = 3, seal = 25000;
        int json = 0;
        double ns[15];

        for (;;) {
                if (argc > 1 && !strcmp(argv[1], "--json")) {
                        json = 1;
                        argv++;
                        argc--;
                } else if (argc > 2 && !strcmp(argv[1], "--seal")) {
                        seal = bench_parse_int(prog, "--seal", argv[2], 1,
                                               100000000);
                        argv += 2;
                        argc -= 2;
                } else {
                        break;
                }
        }
        if (argc > 4 || (argc > 1 && argv[1][0] == '-')) {
                fprintf(stderr,
                        "usage: %s [--json] [--seal N] [ITEMS [GROUPS "
                        "[RUNS]]]\n",
                        prog);
                return 1;
        }
        if (argc > 1)
                n = bench_parse_int(prog, "ITEMS", argv[1], 1, 100000000);
        if (argc > 2)
                groups = bench_parse_int(prog, "GROUPS", argv[2], 1, n);
        if (argc > 3)
                runs = bench_parse_int(prog, "RUNS", argv[3], 1, 15);
        for (int64_t r = 0; r < runs; r++) {
                ns[r] = run(n, groups, json, seal);
                printf("run %lld: %.0f ns CPU per item\n", (long long)r + 1,
                       ns[r]);
        }
        qsort(ns, (size_t)runs, sizeof(*ns), cmp_dbl);
        printf("debounce_state items=%lld groups=%lld payload=%s seal=%lld "
               "ns_per_item=%.0f\n",
               (long long)n, (long long)groups, json ? "json" : "text",
               (long long)seal, ns[runs / 2]);
        return 0;
}
