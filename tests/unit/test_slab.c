/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slab.c — unit tests for the timers' slab allocator: size classes,
 * alignment, blocks that never overlap, free lists, chunk tails, large
 * blocks and the byte accounting.  (The timer heap's use of it, with
 * compaction, is in test_timerheap.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "slab.h"
#include "util.h"

static void test_classes(void **state) {
        (void)state;
        /* 8-byte steps to 1 KiB, then four per doubling to 64 KiB. */
        assert_int_equal(sl_slab_block_size(1), 8);
        assert_int_equal(sl_slab_block_size(8), 8);
        assert_int_equal(sl_slab_block_size(9), 16);
        assert_int_equal(sl_slab_block_size(156), 160);
        assert_int_equal(sl_slab_block_size(1024), 1024);
        assert_int_equal(sl_slab_block_size(1025), 1280);
        assert_int_equal(sl_slab_block_size(2048), 2048);
        assert_int_equal(sl_slab_block_size(2049), 2560);
        assert_int_equal(sl_slab_block_size(65536), 65536);
        assert_int_equal(sl_slab_block_size(65537), 65537); /* large */
        for (size_t s = 1; s <= SL_SLAB_MAX_BLOCK; s++) {
                size_t b = sl_slab_block_size(s);
                assert_true(b >= s && b % 8 == 0);
                assert_true(s <= 1024 ? b - s < 8 : b - s <= s / 4);
                /* Monotonic: a class never shrinks as sizes grow. */
                if (s > 1)
                        assert_true(b >= sl_slab_block_size(s - 1));
        }
}

/* Blocks of every class, written whole: aligned, disjoint (each keeps its
 * own pattern), accounted exactly. */
static void test_alloc_disjoint(void **state) {
        (void)state;
        enum { N = 3000 };
        static unsigned char *p[N];
        static size_t sz[N];
        sl_slab_t *s = sl_slab_new();
        sl_slab_stats_t st;
        size_t live = 0;

        sl_slab_stats(s, &st);
        assert_int_equal(st.mapped, 0); /* nothing before the first block */
        for (size_t i = 0; i < N; i++) {
                sz[i] = 1 + (i * 7919) % 70000;
                p[i] = sl_slab_alloc(s, sz[i]);
                assert_int_equal((uintptr_t)p[i] % 8, 0);
                memset(p[i], (int)(i & 0xff), sz[i]);
                live += sl_slab_block_size(sz[i]);
        }
        sl_slab_stats(s, &st);
        assert_int_equal(st.live, live);
        assert_true(st.large > 0);
        for (size_t i = 0; i < N; i++)
                for (size_t j = 0; j < sz[i]; j++)
                        if (p[i][j] != (unsigned char)(i & 0xff))
                                fail_msg("block %zu byte %zu overwritten", i,
                                         j);
        /* Free every other block; the same sizes come back from the free
         * lists, not from new chunks. */
        for (size_t i = 0; i < N; i += 2)
                sl_slab_free(s, p[i], sz[i]);
        size_t mapped_small = st.mapped;
        for (size_t i = 0; i < N; i += 2)
                if (sz[i] > SL_SLAB_MAX_BLOCK)
                        mapped_small -= sz[i];
        for (size_t i = 0; i < N; i += 2) {
                p[i] = sl_slab_alloc(s, sz[i]);
                memset(p[i], (int)(i & 0xff), sz[i]);
        }
        sl_slab_stats(s, &st);
        assert_int_equal(st.live, live);
        assert_true(st.mapped <= mapped_small + (st.mapped - mapped_small));
        for (size_t i = 0; i < N; i++)
                assert_int_equal(p[i][sz[i] - 1], (unsigned char)(i & 0xff));
        sl_slab_destroy(s); /* with everything still allocated */
        sl_slab_destroy(NULL);
}

/* A block that does not fit the chunk's tail starts a new chunk; the tail
 * is cut into free blocks that later allocations use. */
static void test_tail_reused(void **state) {
        (void)state;
        sl_slab_t *s = sl_slab_new();
        sl_slab_stats_t st;
        size_t big = 60000, n = 0;

        /* Fill the first chunk with 60000-byte blocks (class 65536)... */
        while (1) {
                sl_slab_alloc(s, big);
                n++;
                sl_slab_stats(s, &st);
                if (st.chunks == 2)
                        break;
        }
        /* ...the first chunk's tail (under 64 KiB) went to the free lists:
         * small blocks now come from it, and map nothing. */
        size_t mapped = st.mapped, idle = st.idle;
        for (int i = 0; i < 100; i++)
                sl_slab_alloc(s, 100);
        sl_slab_stats(s, &st);
        assert_int_equal(st.mapped, mapped);
        assert_int_equal(st.idle, idle - 100 * 104);
        assert_int_equal(st.live + st.idle + 8 * st.chunks, st.mapped);
        sl_slab_destroy(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_classes),
            cmocka_unit_test(test_alloc_disjoint),
            cmocka_unit_test(test_tail_reused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
