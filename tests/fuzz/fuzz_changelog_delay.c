/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_changelog_delay.c — a corrupt delay changelog must not crash a
 * rebuild.
 *
 * Drives the real delay operator (src/op_delay.c) through the stub runtime
 * (runtime_stub.inc, which describes the input framing): every record of
 * the input goes to restore() (Timer records keyed by timer id,
 * tombstones), then restored() arms the wake-up and a few wake() calls
 * fire what fell due, produce it to its target (checked and discarded by
 * the stub) and tombstone it.  A fired timer never goes to an internal
 * topic (any pipeline's changelog, overflow, rates, payloads or DLQ other
 * than its own DLQ, or Kafka's __*).
 *
 * Variants 3 and 4 set payload_topic (op_delay.c, PAYLOADS IN KAFKA): the
 * changelog records are index records (logpb.h, 0xff first) mixed with
 * Timer records of before, the second source is the payload topic (read
 * from past the highest offset the index names, and again by offset when
 * the operator reads payloads back: sl_task_fetch), and the only record
 * sent to the pipeline's own payload topic outside input() is a
 * tombstone.  Variant 4 cuts the ids' hashes to 2 bits and the look-ahead
 * to 200 ms (the tests' knobs), so that ids collide and payloads are read
 * back and let go.
 */
#include "runtime_stub.inc"

/* Two pipelines, so the delay pipeline has another's internal topics to
 * refuse; the variants differ in catch-up rate, DLQ and targets. */
static const char *const fz_conf_texts[] = {
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n"
    "catchup_rate = 0\ndlq = none\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n"
    "catchup_rate = 3\nallowed_targets = out.*, bad*\n"
    "default_target = out.default\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n"
    "payload_topic = timers.payloads\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n",
    "[sluice]\napp_id = fz\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n"
    "payload_topic = timers.payloads\npayload_cache = 1MiB\n"
    "catchup_rate = 3\ndlq = none\nallowed_targets = out.*, bad*\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n",
};

/* The variant whose pipeline collides ids (fz_conf_texts[4]). */
#define FZ_VARIANT_COLLIDE 4

static void delay_check_produce(sl_task_t *t, const char *topic,
                                const void *value) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        const char *payloads = sl_pipeline_topic(pc, "payloads");
        if (pc->dlq && !strcmp(topic, pc->dlq))
                return;
        /* A fired timer's record leaves the payload topic. */
        if (payloads && !strcmp(topic, payloads) && !value)
                return;
        if (sl_topicname_kafka_internal(topic) ||
            sl_conf_topic_internal(t->rt->conf, topic))
                fz_fail("a timer fired into an internal topic", topic);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void)argc;
        (void)argv;
        fz_harness_init(fz_conf_texts, (int)SL_ARRAY_SIZE(fz_conf_texts));
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The tests' knobs, read by pipeline_init (the header's variant
         * byte picks the configuration: runtime_stub.inc). */
        if (size > 4 &&
            data[4] % SL_ARRAY_SIZE(fz_conf_texts) == FZ_VARIANT_COLLIDE) {
                setenv("SLUICE_TEST_TIMER_HASH_BITS", "2", 1);
                setenv("SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS", "200", 1);
        } else {
                unsetenv("SLUICE_TEST_TIMER_HASH_BITS");
                unsetenv("SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS");
        }
        fz_harness_one(data, size, &sl_op_delay, delay_check_produce);
        return 0;
}
