/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_changelog_throttle.c — a corrupt throttle changelog, overflow
 * partition or rates table must not crash a rebuild.
 *
 * Drives the real throttle operator (src/op_throttle.c) through the stub
 * runtime (runtime_stub.inc, which describes the input framing): records
 * of source 0 go to restore() ("c/" ThrottleCheckpoint, "k/"+key
 * ThrottleKey, tombstones), of source 1 to restore_source() (the overflow
 * partition: key = throttle key, value = OverflowRecord) from the offset
 * rebuild_source() names, of source 2 to table() (the rates topic).  Then
 * restored() and a few wake() calls drain the backlog at the keys' rates:
 * sends, expiries to the DLQ, re-reads of the overflow (the stub serves
 * sl_task_fetch() from the source-1 records to fetched()), and precommit()
 * writes checkpoints and key records and sweeps idle keys.
 */
#include "runtime_stub.inc"

static const char *const fz_conf_texts[] = {
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n"
    "default_rate = 10/s\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n"
    "default_rate = 2/s burst=1\npayload_cache = 0\ndlq = none\nttl = 1s\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n"
    "default_rate = 1000/m\npayload_cache = 300\n",
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void)argc;
        (void)argv;
        fz_harness_init(fz_conf_texts, (int)SL_ARRAY_SIZE(fz_conf_texts));
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fz_harness_one(data, size, &sl_op_throttle, NULL);
        return 0;
}
