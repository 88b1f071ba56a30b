/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_changelog_debounce.c — a corrupt debounce changelog must not crash
 * a rebuild.
 *
 * Drives the real debounce operator (src/op_debounce.c) through the stub
 * runtime (runtime_stub.inc, which describes the input framing): every
 * record of the input goes to restore() (DebounceItem records keyed by
 * group 0x00 item id, tombstones), then restored() arms the earliest group
 * deadline and a few wake() calls flush the groups that fell due: batches
 * encoded as JSON or protobuf, split when the stub's producer refuses them
 * as too large, items tombstoned.
 */
#include "runtime_stub.inc"

static const char *const fz_conf_texts[] = {
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline groups]\ntype = debounce\ninput = groups.in\n"
    "output = groups.out\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline groups]\ntype = debounce\ninput = groups.in\n"
    "output = groups.out\nidle = 5ms\nmax_age = 1s\nmax_items = 3\n"
    "max_bytes = 64\noutput_format = protobuf\ncatchup_rate = 0\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline groups]\ntype = debounce\ninput = groups.in\n"
    "output = groups.out\nidle = 1h\nmax_age = 1d\nmax_items = 2\n"
    "catchup_rate = 2\ndlq = none\n",
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void)argc;
        (void)argv;
        fz_harness_init(fz_conf_texts, (int)SL_ARRAY_SIZE(fz_conf_texts));
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fz_harness_one(data, size, &sl_op_debounce, NULL);
        return 0;
}
