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
 * topic (any pipeline's changelog, overflow, rates or DLQ other than its
 * own DLQ, or Kafka's __*).
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
};

static void delay_check_produce(sl_task_t *t, const char *topic) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        if (pc->dlq && !strcmp(topic, pc->dlq))
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
        fz_harness_one(data, size, &sl_op_delay, delay_check_produce);
        return 0;
}
