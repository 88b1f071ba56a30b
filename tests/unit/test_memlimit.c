/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_memlimit.c — the memory budget: the cgroup files' text ("max",
 * numbers, v1's huge "unlimited", malformed), which file is read (v2 before
 * v1, missing files: none), the proportional share with its rounding and
 * unlimited caps, and memory_limit applied to a loaded configuration
 * (explicit, 0, auto from a cgroup file, auto without one).
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

#include "config.h"
#include "memlimit.h"
#include "opdef_debounce.h"
#include "opdef_delay.h"
#include "opdef_throttle.h"

static char tmpdir[] = "/tmp/sluice-test-memlimit-XXXXXX";
static char v2[300], v1[300], missing[300], ini[300];

static int setup(void **state) {
        (void)state;
        if (!mkdtemp(tmpdir))
                return -1;
        snprintf(v2, sizeof(v2), "%s/memory.max", tmpdir);
        snprintf(v1, sizeof(v1), "%s/memory.limit_in_bytes", tmpdir);
        snprintf(missing, sizeof(missing), "%s/nothing-here", tmpdir);
        snprintf(ini, sizeof(ini), "%s/t.ini", tmpdir);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        unlink(v2);
        unlink(v1);
        unlink(ini);
        rmdir(tmpdir);
        return 0;
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_parse(void **state) {
        (void)state;
        assert_int_equal(sl_memlimit_parse("max\n"), 0);
        assert_int_equal(sl_memlimit_parse("max"), 0);
        assert_int_equal(sl_memlimit_parse("2147483648\n"), 2147483648LL);
        assert_int_equal(sl_memlimit_parse(" 536870912 "), 536870912);
        /* cgroup v1's "unlimited" (x86-64, 4 KiB pages) and larger. */
        assert_int_equal(sl_memlimit_parse("9223372036854771712\n"), 0);
        assert_int_equal(sl_memlimit_parse("99999999999999999999999"), 0);
        assert_int_equal(sl_memlimit_parse("1152921504606846975"),
                         SL_MEMLIMIT_HUGE - 1);
        assert_int_equal(sl_memlimit_parse("1152921504606846976"), 0);
        assert_int_equal(sl_memlimit_parse("0"), 0);
        assert_int_equal(sl_memlimit_parse(""), -1);
        assert_int_equal(sl_memlimit_parse("maximum"), -1);
        assert_int_equal(sl_memlimit_parse("-1"), -1);
        assert_int_equal(sl_memlimit_parse("12 MiB"), -1);
}

static void test_cgroup_files(void **state) {
        const char *path;
        (void)state;
        /* Neither file: none. */
        assert_int_equal(sl_memlimit_cgroup(missing, missing, &path), 0);
        assert_null(path);
        /* v1 only. */
        write_file(v1, "1073741824\n");
        assert_int_equal(sl_memlimit_cgroup(missing, v1, &path), 1073741824);
        assert_string_equal(path, v1);
        write_file(v1, "9223372036854771712\n");
        assert_int_equal(sl_memlimit_cgroup(missing, v1, &path), 0);
        assert_string_equal(path, v1);
        /* v2 wins over v1 when it exists, even when it says none. */
        write_file(v1, "1073741824\n");
        write_file(v2, "2147483648\n");
        assert_int_equal(sl_memlimit_cgroup(v2, v1, &path), 2147483648LL);
        assert_string_equal(path, v2);
        write_file(v2, "max\n");
        assert_int_equal(sl_memlimit_cgroup(v2, v1, &path), 0);
        assert_string_equal(path, v2);
        /* Malformed: none. */
        write_file(v2, "lots\n");
        assert_int_equal(sl_memlimit_cgroup(v2, v1, &path), 0);
}

static void test_share(void **state) {
        int64_t caps[3];
        (void)state;
        /* Fits: untouched. */
        caps[0] = 100, caps[1] = 200;
        assert_int_equal(sl_memlimit_share(300, caps, 2), 300);
        assert_int_equal(caps[0], 100);
        assert_int_equal(caps[1], 200);
        /* No budget: untouched whatever the sum. */
        assert_int_equal(sl_memlimit_share(0, caps, 2), 300);
        assert_int_equal(caps[1], 200);
        /* Over: in proportion, rounded down, together within the budget. */
        caps[0] = 100, caps[1] = 200;
        assert_int_equal(sl_memlimit_share(200, caps, 2), 300);
        assert_int_equal(caps[0], 66);
        assert_int_equal(caps[1], 133);
        /* Two default caps (1 GiB) under 64 MiB: 32 MiB each. */
        caps[0] = caps[1] = 1LL << 30;
        assert_int_equal(sl_memlimit_share(64LL << 20, caps, 2), 2LL << 30);
        assert_int_equal(caps[0], 32LL << 20);
        assert_int_equal(caps[1], 32LL << 20);
        /* Unlimited counts as the budget, and is bounded after. */
        caps[0] = 0, caps[1] = 1000, caps[2] = 1000;
        assert_int_equal(sl_memlimit_share(1000, caps, 3), 3000);
        assert_int_equal(caps[0], 333);
        assert_int_equal(caps[1], 333);
        assert_int_equal(caps[2], 333);
        /* A share below one byte stays a cap (1), not unlimited (0). */
        caps[0] = 1, caps[1] = INT64_MAX;
        sl_memlimit_share(1000, caps, 2);
        assert_int_equal(caps[0], 1);
        assert_int_equal(caps[1], 999);
        /* Huge values do not overflow. */
        caps[0] = caps[1] = INT64_MAX / 2;
        sl_memlimit_share(INT64_MAX / 4, caps, 2);
        assert_true(caps[0] > 0 && caps[0] <= INT64_MAX / 8);
}

static sl_conf_t *load(const char *sluice) {
        sl_conf_t *conf = NULL;
        FILE *f = fopen(ini, "w");
        assert_non_null(f);
        fprintf(f,
                "[sluice]\n%s\n[kafka]\nbootstrap.servers = x:1\n"
                "[pipeline d]\ntype = delay\ninput = in.d\n"
                "[pipeline b]\ntype = debounce\ninput = in.b\noutput = out.b\n"
                "max_pending_bytes = 3GiB\n"
                "[pipeline t]\ntype = throttle\ninput = in.t\noutput = out.t\n"
                "default_rate = 1/s\nmax_key_bytes = 0\n",
                sluice);
        fclose(f);
        assert_int_equal(sl_conf_load(ini, 0, &conf, stderr), 0);
        return conf;
}

static void test_apply(void **state) {
        sl_conf_t *conf;
        int n;
        sl_conf_memcap_t *caps;
        (void)state;

        /* The byte caps, in pipeline order. */
        conf = load("");
        caps = sl_conf_memcaps(conf, &n);
        assert_int_equal(n, 3);
        assert_string_equal(caps[0].pc->name, "d");
        assert_string_equal(caps[0].key, "max_pending_bytes");
        assert_string_equal(caps[2].key, "max_key_bytes");
        assert_int_equal(*caps[1].bytes, 3LL << 30);
        free(caps);
        /* auto (the default) without a cgroup file: no budget. */
        assert_int_equal(conf->memory_limit, -1);
        assert_int_equal(sl_memlimit_apply(conf, missing, missing), 0);
        assert_int_equal(sl_delay_conf(&conf->pipelines[0])->max_pending_bytes,
                         1LL << 30);
        sl_conf_destroy(conf);

        /* Explicit: 1 + 3 + 1 (unlimited counts as the budget) = 5 GiB
         * share 1 GiB. */
        conf = load("memory_limit = 1GiB");
        assert_int_equal(sl_memlimit_apply(conf, missing, missing), 1LL << 30);
        assert_int_equal(sl_delay_conf(&conf->pipelines[0])->max_pending_bytes,
                         (1LL << 30) / 5);
        assert_int_equal(
            sl_debounce_conf(&conf->pipelines[1])->max_pending_bytes,
            (3LL << 30) / 5);
        assert_int_equal(sl_throttle_conf(&conf->pipelines[2])->max_key_bytes,
                         (1LL << 30) / 5);
        sl_conf_destroy(conf);

        /* 0: no budget, caps unchanged. */
        write_file(v2, "1073741824\n");
        conf = load("memory_limit = 0");
        assert_int_equal(sl_memlimit_apply(conf, v2, missing), 0);
        assert_int_equal(
            sl_debounce_conf(&conf->pipelines[1])->max_pending_bytes,
            3LL << 30);
        assert_int_equal(sl_throttle_conf(&conf->pipelines[2])->max_key_bytes,
                         0);
        sl_conf_destroy(conf);

        /* auto in an 8 GiB pod: 6 GiB; the unlimited cap counts as 6 GiB,
         * so 1 + 3 + 6 = 10 GiB share 6. */
        write_file(v2, "8589934592\n");
        conf = load("memory_limit = auto");
        assert_int_equal(sl_memlimit_apply(conf, v2, missing), 6LL << 30);
        assert_int_equal(sl_delay_conf(&conf->pipelines[0])->max_pending_bytes,
                         (1LL << 30) * 6 / 10);
        assert_int_equal(sl_throttle_conf(&conf->pipelines[2])->max_key_bytes,
                         (6LL << 30) * 6 / 10);
        sl_conf_destroy(conf);

        /* auto from a 2 GiB pod with one default delay pipeline: 1.5 GiB,
         * 1 GiB fits. */
        write_file(v2, "2147483648\n");
        write_file(ini, "[sluice]\n[kafka]\nbootstrap.servers = x:1\n"
                        "[pipeline d]\ntype = delay\ninput = in.d\n");
        assert_int_equal(sl_conf_load(ini, 0, &conf, stderr), 0);
        assert_int_equal(sl_memlimit_apply(conf, v2, missing), 3LL << 29);
        assert_int_equal(sl_delay_conf(&conf->pipelines[0])->max_pending_bytes,
                         1LL << 30);
        sl_conf_destroy(conf);
}

static void test_conf_auto(void **state) {
        sl_conf_t *conf;
        (void)state;
        conf = load("memory_limit = 64MiB");
        assert_int_equal(conf->memory_limit, 64LL << 20);
        sl_conf_destroy(conf);
        /* "auto" is a word of memory_limit only. */
        write_file(ini, "[sluice]\n[kafka]\nbootstrap.servers = x:1\n"
                        "[pipeline d]\ntype = delay\ninput = in.d\n"
                        "max_pending_bytes = auto\n");
        FILE *err = fopen("/dev/null", "w");
        assert_int_equal(sl_conf_load(ini, 0, &conf, err), 1);
        fclose(err);
        assert_null(conf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_parse),
            cmocka_unit_test(test_cgroup_files),
            cmocka_unit_test(test_share),
            cmocka_unit_test(test_apply),
            cmocka_unit_test(test_conf_auto),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
