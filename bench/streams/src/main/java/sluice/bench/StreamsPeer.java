// SPDX-License-Identifier: Apache-2.0
/*
 * StreamsPeer.java — sluice's delay and debounce written as a Kafka Streams
 * application, the measured peer of bench/sections/60-streams.sh (SPEC §6:
 * "≥ 3 × Kafka Streams in the same run").
 *
 * It reads the same input as sluice and writes the same output shape, so the
 * bench loads it with build/bench/load and reads it with build/bench/consume
 * exactly as it does sluice.  It is written the way a careful Streams
 * developer would write it, with the settings the issue names:
 *
 *   processing.guarantee  exactly_once_v2 (one transaction per commit,
 *                         read_committed input)
 *   commit.interval.ms    100 (sluice's commit_interval in the bench)
 *   state                 persistent RocksDB key-value stores, changelogged,
 *                         with Streams' default record cache (10 MiB)
 *   timers                a WALL_CLOCK_TIME punctuator every 10 ms per task,
 *                         and poll.ms 10: punctuators run between polls, and
 *                         with Streams' default (100 ms) an idle thread
 *                         would sit in poll() ten punctuations long
 *   threads               num.stream.threads 1 (Streams' default) unless
 *                         --threads says otherwise
 *
 * DELAY (--mode delay)
 *
 *   input    key = timer id, value = payload, headers sluice-target, one of
 *            sluice-delay ("250ms", "2s", "1h30m", "7d") or sluice-at (epoch
 *            ms or RFC 3339), optional sluice-target-key and
 *            sluice-target-partition; a delay counts from the record's
 *            timestamp (from now when that is missing, before 2010 or more
 *            than a minute ahead), as in sluice
 *   store    "timers": key = due ms (8 bytes big-endian) + input offset (8
 *            bytes big-endian) + timer id, so a range scan from 0 to now
 *            finds the due timers in due order, ties in arrival order;
 *            value = target, target key and partition, pass-through headers,
 *            payload
 *   output   to the target: key = target key or timer id, the payload, the
 *            pass-through headers plus sluice-timer-id and sluice-due (the
 *            due time, decimal epoch ms, as sluice writes it); the record
 *            timestamp is the wall clock when it is forwarded ("produced")
 *   not done a null value (cancel) and a timer id seen again (reschedule)
 *            would need a second store (id → due); the bench uses neither,
 *            so the peer skips that cost and counts such records as dropped.
 *            That leaves the peer lighter than sluice, not heavier.
 *
 * DEBOUNCE (--mode debounce)
 *
 *   input    key = group, value = item payload, header sluice-item = item
 *            id ("<partition>-<offset>" without it); a null value removes
 *            the item
 *   stores   "items":     group 0x00 item id → seq (input offset of its
 *                         first sighting), first seen, last update, payload
 *            "groups":    group → items, bytes, opened, last update, the
 *                         deadline now in the index
 *            "deadlines": deadline (8 bytes big-endian) + group → 1 byte: a
 *                         group's entry is written when it opens and moved
 *                         only when the punctuator finds it early (a group
 *                         that keeps getting items is not re-indexed on
 *                         every item)
 *   flush    at max_items (in the input call, like sluice), or when
 *            now − last update ≥ idle or now − opened ≥ max_age (punctuator)
 *   output   one record per batch to --output: key = group, headers
 *            sluice-batch-id and sluice-due (the deadline that flushed it;
 *            the filling update's time for max_items), the value sluice's
 *            json format: {"batch_id","key","reason","opened_at",
 *            "flushed_at","items":[{"id","payload","first_seen",
 *            "last_update"}]}, items in first-sighting order
 *
 * REPORTING
 *
 * One line on stdout per event the bench waits for, nothing else: "state
 * RUNNING" (and other state changes), "in=N" once --expect N input records
 * have been processed, "error ..." on a fatal error (then it exits 1).
 * SIGTERM closes the client (10 s).
 */
package sluice.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.BytesSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

public final class StreamsPeer {
    /* The punctuator's period and how much one punctuation may fire before
     * it lets the thread poll and commit again (sluice's debounce yields
     * after 20,000 items the same way). */
    static final Duration PUNCTUATE_EVERY = Duration.ofMillis(10);
    static final int FIRE_MAX = 20_000;
    static final long SKEW_MS = 60_000;
    static final long YEAR_2010_MS = 1_262_304_000_000L;

    static final AtomicLong IN = new AtomicLong();
    static final AtomicLong DROPPED = new AtomicLong();
    static final AtomicBoolean EXPECT_SEEN = new AtomicBoolean();
    static long expect = -1;

    /* Reporting lines are the bench's only interface: one println each. */
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void counted() {
        long n = IN.incrementAndGet();
        if (n == expect && EXPECT_SEEN.compareAndSet(false, true))
            say("in=" + n);
    }

    // ---- small codecs ------------------------------------------------------

    static byte[] be64(long v) {
        return ByteBuffer.allocate(8).putLong(v).array();
    }

    static String header(Headers h, String name) {
        Header x = h.lastHeader(name);
        return x == null || x.value() == null ? null : new String(x.value(), StandardCharsets.UTF_8);
    }

    /* "250ms", "90s", "1h30m", "7d" (a number may have a fraction); -1 when
     * it is not a duration. */
    static long parseDuration(String s) {
        if (s == null || s.isEmpty())
            return -1;
        double total = 0;
        int i = 0, n = s.length();
        while (i < n) {
            int j = i;
            while (j < n && (Character.isDigit(s.charAt(j)) || s.charAt(j) == '.'))
                j++;
            int k = j;
            while (k < n && Character.isLetter(s.charAt(k)))
                k++;
            if (j == i || k == j)
                return -1;
            double v;
            try {
                v = Double.parseDouble(s.substring(i, j));
            } catch (NumberFormatException e) {
                return -1;
            }
            switch (s.substring(j, k)) {
            case "ms": total += v; break;
            case "s": total += v * 1e3; break;
            case "m": total += v * 60e3; break;
            case "h": total += v * 3600e3; break;
            case "d": total += v * 86400e3; break;
            default: return -1;
            }
            i = k;
        }
        return (long) total;
    }

    /* Epoch ms, or an RFC 3339 time; -1 when it is neither. */
    static long parseAt(String s) {
        if (s == null || s.isEmpty())
            return -1;
        try {
            return s.chars().allMatch(Character::isDigit) ? Long.parseLong(s)
                                                          : OffsetDateTime.parse(s).toInstant().toEpochMilli();
        } catch (RuntimeException e) {
            return -1;
        }
    }

    // ---- delay -------------------------------------------------------------

    static final List<String> DELAY_CONTROL = List.of("sluice-target", "sluice-delay", "sluice-at",
                                                      "sluice-target-key", "sluice-target-partition");

    /* A fired timer on its way to the sink: the sink's topic extractor and
     * partitioner read target and partition; only the payload is written. */
    record Fired(String target, int partition, byte[] payload) {}

    /* Timer value: target, partition, target key (-1: none), pass-through
     * headers, payload. */
    static byte[] encodeTimer(String target, int partition, byte[] targetKey, Headers pass, byte[] payload) {
        byte[] t = target.getBytes(StandardCharsets.UTF_8);
        int size = 2 + t.length + 4 + 4 + (targetKey == null ? 0 : targetKey.length) + 2;
        int hn = 0;
        for (Header h : pass) {
            size += 2 + h.key().length() * 3 + 4 + (h.value() == null ? 0 : h.value().length);
            hn++;
        }
        size += 4 + (payload == null ? 0 : payload.length);
        ByteBuffer b = ByteBuffer.allocate(size);
        b.putShort((short) t.length).put(t).putInt(partition);
        b.putInt(targetKey == null ? -1 : targetKey.length);
        if (targetKey != null)
            b.put(targetKey);
        b.putShort((short) hn);
        for (Header h : pass) {
            byte[] k = h.key().getBytes(StandardCharsets.UTF_8);
            b.putShort((short) k.length).put(k);
            b.putInt(h.value() == null ? -1 : h.value().length);
            if (h.value() != null)
                b.put(h.value());
        }
        b.putInt(payload == null ? -1 : payload.length);
        if (payload != null)
            b.put(payload);
        return Arrays.copyOf(b.array(), b.position());
    }

    static final class DelayProcessor implements Processor<byte[], byte[], byte[], Fired> {
        private ProcessorContext<byte[], Fired> ctx;
        private KeyValueStore<Bytes, byte[]> timers;

        @Override
        public void init(ProcessorContext<byte[], Fired> context) {
            ctx = context;
            timers = context.getStateStore("timers");
            context.schedule(PUNCTUATE_EVERY, PunctuationType.WALL_CLOCK_TIME, this::fire);
        }

        @Override
        public void process(Record<byte[], byte[]> r) {
            counted();
            Headers h = r.headers();
            String target = header(h, "sluice-target");
            String delay = header(h, "sluice-delay"), at = header(h, "sluice-at");
            if (r.key() == null || r.key().length == 0 || r.value() == null || target == null
                || (delay == null) == (at == null)) {
                DROPPED.incrementAndGet(); // sluice: DLQ (or cancel, for a null value)
                return;
            }
            long now = System.currentTimeMillis(), due;
            if (delay != null) {
                long d = parseDuration(delay);
                long base = r.timestamp();
                if (base < YEAR_2010_MS || base > now + SKEW_MS)
                    base = now;
                due = d < 0 ? -1 : base + d;
            } else {
                due = parseAt(at);
            }
            if (due < 0) {
                DROPPED.incrementAndGet();
                return;
            }
            String tp = header(h, "sluice-target-partition");
            int partition = tp == null ? -1 : Integer.parseInt(tp);
            Header tk = h.lastHeader("sluice-target-key");
            RecordHeaders pass = new RecordHeaders();
            for (Header x : h)
                if (!DELAY_CONTROL.contains(x.key()))
                    pass.add(x);
            long offset = ctx.recordMetadata().map(RecordMetadata::offset).orElse(0L);
            ByteBuffer k = ByteBuffer.allocate(16 + r.key().length);
            k.putLong(due).putLong(offset).put(r.key());
            timers.put(Bytes.wrap(k.array()),
                       encodeTimer(target, partition, tk == null ? null : tk.value(), pass, r.value()));
        }

        /* Every due timer, in due order, up to FIRE_MAX per punctuation: the
         * due keys are collected first and the iterator closed before they
         * are deleted. */
        private void fire(long now) {
            List<KeyValue<Bytes, byte[]>> due = new ArrayList<>();
            try (KeyValueIterator<Bytes, byte[]> it = timers.range(Bytes.wrap(be64(0)), Bytes.wrap(be64(now + 1)))) {
                while (it.hasNext() && due.size() < FIRE_MAX)
                    due.add(it.next());
            }
            for (KeyValue<Bytes, byte[]> kv : due) {
                ByteBuffer k = ByteBuffer.wrap(kv.key.get());
                long dueMs = k.getLong();
                k.getLong();
                byte[] id = Arrays.copyOfRange(kv.key.get(), 16, kv.key.get().length);
                ByteBuffer v = ByteBuffer.wrap(kv.value);
                byte[] t = new byte[v.getShort()];
                v.get(t);
                int partition = v.getInt();
                int tkl = v.getInt();
                byte[] key = id;
                if (tkl >= 0) {
                    key = new byte[tkl];
                    v.get(key);
                }
                RecordHeaders hs = new RecordHeaders();
                for (int i = v.getShort(); i > 0; i--) {
                    byte[] hk = new byte[v.getShort()];
                    v.get(hk);
                    int hl = v.getInt();
                    byte[] hv = null;
                    if (hl >= 0) {
                        hv = new byte[hl];
                        v.get(hv);
                    }
                    hs.add(new String(hk, StandardCharsets.UTF_8), hv);
                }
                int pl = v.getInt();
                byte[] payload = null;
                if (pl >= 0) {
                    payload = new byte[pl];
                    v.get(payload);
                }
                hs.add("sluice-timer-id", id);
                hs.add("sluice-due", Long.toString(dueMs).getBytes(StandardCharsets.US_ASCII));
                ctx.forward(new Record<>(key, new Fired(new String(t, StandardCharsets.UTF_8), partition, payload),
                                         System.currentTimeMillis(), hs));
                timers.delete(kv.key);
            }
        }
    }

    static Topology delayTopology(String input) {
        Topology t = new Topology();
        t.addSource("in", new ByteArrayDeserializer(), new ByteArrayDeserializer(), input);
        t.addProcessor("delay", DelayProcessor::new, "in");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("timers"), Serdes.Bytes(),
                                                    Serdes.ByteArray()),
                        "delay");
        Serializer<Fired> payloadOnly = (topic, f) -> f.payload();
        StreamPartitioner<byte[], Fired> partitioner = (topic, key, f, n) -> f.partition() < 0 ? null
                                                                                                : f.partition();
        t.addSink("out", (key, f, rc) -> f.target(), new ByteArraySerializer(), payloadOnly, partitioner, "delay");
        return t;
    }

    // ---- debounce ----------------------------------------------------------

    record Params(long idleMs, long maxAgeMs, int maxItems, long maxBytes) {}

    /* "groups" value. */
    static final class Group {
        int items;
        long bytes, opened, lastUpdate, indexed;

        static Group decode(byte[] b) {
            if (b == null)
                return null;
            ByteBuffer v = ByteBuffer.wrap(b);
            Group g = new Group();
            g.items = v.getInt();
            g.bytes = v.getLong();
            g.opened = v.getLong();
            g.lastUpdate = v.getLong();
            g.indexed = v.getLong();
            return g;
        }

        byte[] encode() {
            return ByteBuffer.allocate(36).putInt(items).putLong(bytes).putLong(opened).putLong(lastUpdate)
                .putLong(indexed).array();
        }

        long deadline(Params p) {
            return Math.min(lastUpdate + p.idleMs(), opened + p.maxAgeMs());
        }
    }

    /* "items" value: seq, first seen, last update, payload (absent: -1). */
    record Item(String id, long seq, long firstSeen, long lastUpdate, byte[] payload) {
        static Item decode(String id, byte[] b) {
            ByteBuffer v = ByteBuffer.wrap(b);
            long seq = v.getLong(), first = v.getLong(), last = v.getLong();
            byte[] p = new byte[v.remaining()];
            v.get(p);
            return new Item(id, seq, first, last, p);
        }

        byte[] encode() {
            return ByteBuffer.allocate(24 + payload.length).putLong(seq).putLong(firstSeen).putLong(lastUpdate)
                .put(payload).array();
        }
    }

    static final ObjectMapper JSON = new ObjectMapper();

    static void jsonString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
            case '"': sb.append("\\\""); break;
            case '\\': sb.append("\\\\"); break;
            case '\n': sb.append("\\n"); break;
            case '\r': sb.append("\\r"); break;
            case '\t': sb.append("\\t"); break;
            default:
                if (c < 0x20)
                    sb.append(String.format("\\u%04x", (int) c));
                else
                    sb.append(c);
            }
        }
        sb.append('"');
    }

    /* As sluice: a payload that is JSON is embedded as JSON, UTF-8 text as a
     * string, anything else as base64. */
    static void jsonPayload(StringBuilder sb, byte[] p) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                       .onMalformedInput(CodingErrorAction.REPORT)
                       .decode(ByteBuffer.wrap(p))
                       .toString();
        } catch (CharacterCodingException e) {
            sb.append("\"payload\":\"").append(Base64.getEncoder().encodeToString(p))
                .append("\",\"payload_encoding\":\"base64\"");
            return;
        }
        String s = text.strip();
        if (!s.isEmpty() && "{[\"-0123456789tfn".indexOf(s.charAt(0)) >= 0) {
            try {
                JSON.readTree(s);
                sb.append("\"payload\":").append(s);
                return;
            } catch (Exception notJson) {
                // a string, below
            }
        }
        sb.append("\"payload\":");
        jsonString(sb, text);
    }

    /* A 128-bit FNV-1a-style hash of the group and its items' ids and seqs:
     * the same items flushed together get the same id. */
    static String batchId(byte[] group, List<Item> items) {
        long a = 0xcbf29ce484222325L, b = 0x9e3779b97f4a7c15L;
        for (byte x : group) {
            a = (a ^ (x & 0xff)) * 0x100000001b3L;
            b = (b ^ (x & 0xff)) * 0xff51afd7ed558ccdL;
        }
        for (Item it : items) {
            for (byte x : it.id().getBytes(StandardCharsets.UTF_8)) {
                a = (a ^ (x & 0xff)) * 0x100000001b3L;
                b = (b ^ (x & 0xff)) * 0xff51afd7ed558ccdL;
            }
            a = (a ^ it.seq()) * 0x100000001b3L;
            b = (b ^ it.seq()) * 0xff51afd7ed558ccdL;
        }
        return String.format("%016x%016x", a, b);
    }

    static final class DebounceProcessor implements Processor<byte[], byte[], byte[], byte[]> {
        private final Params p;
        private ProcessorContext<byte[], byte[]> ctx;
        private KeyValueStore<Bytes, byte[]> items, groups, deadlines;

        DebounceProcessor(Params p) {
            this.p = p;
        }

        @Override
        public void init(ProcessorContext<byte[], byte[]> context) {
            ctx = context;
            items = context.getStateStore("items");
            groups = context.getStateStore("groups");
            deadlines = context.getStateStore("deadlines");
            context.schedule(PUNCTUATE_EVERY, PunctuationType.WALL_CLOCK_TIME, this::punctuate);
        }

        private static Bytes itemKey(byte[] group, byte[] id) {
            byte[] k = Arrays.copyOf(group, group.length + 1 + id.length);
            System.arraycopy(id, 0, k, group.length + 1, id.length);
            return Bytes.wrap(k);
        }

        private static Bytes deadlineKey(long deadline, byte[] group) {
            return Bytes.wrap(ByteBuffer.allocate(8 + group.length).putLong(deadline).put(group).array());
        }

        @Override
        public void process(Record<byte[], byte[]> r) {
            counted();
            byte[] g = r.key();
            if (g == null || g.length == 0 || indexOfZero(g) >= 0) {
                DROPPED.incrementAndGet(); // sluice: DLQ missing-key / bad-key
                return;
            }
            RecordMetadata md = ctx.recordMetadata().orElseThrow();
            Header ih = r.headers().lastHeader("sluice-item");
            byte[] id = ih != null && ih.value() != null
                            ? ih.value()
                            : (md.partition() + "-" + md.offset()).getBytes(StandardCharsets.UTF_8);
            long now = System.currentTimeMillis();
            Bytes gk = Bytes.wrap(g), ik = itemKey(g, id);
            Group grp = Group.decode(groups.get(gk));
            if (grp != null && grp.deadline(p) <= now) {
                flush(g, grp, reasonAt(grp, now), grp.deadline(p), now);
                grp = null;
            }
            byte[] old = items.get(ik);
            if (r.value() == null) { // remove the item
                if (old != null && grp != null) {
                    items.delete(ik);
                    grp.items--;
                    grp.bytes -= old.length - 24;
                    if (grp.items == 0) {
                        groups.delete(gk);
                        deadlines.delete(deadlineKey(grp.indexed, g));
                    } else {
                        groups.put(gk, grp.encode());
                    }
                }
                return;
            }
            boolean opened = grp == null;
            if (opened) {
                grp = new Group();
                grp.opened = now;
            }
            Item it;
            if (old != null) {
                Item o = Item.decode(null, old);
                it = new Item(null, o.seq(), o.firstSeen(), now, r.value());
                grp.bytes += r.value().length - o.payload().length;
            } else {
                it = new Item(null, md.offset(), now, now, r.value());
                grp.items++;
                grp.bytes += r.value().length;
            }
            items.put(ik, it.encode());
            grp.lastUpdate = now;
            if (grp.items >= p.maxItems() || grp.bytes >= p.maxBytes()) {
                flush(g, grp, grp.items >= p.maxItems() ? "max_items" : "max_bytes", now, now);
                return;
            }
            if (opened) {
                grp.indexed = grp.deadline(p);
                deadlines.put(deadlineKey(grp.indexed, g), new byte[] {1});
            }
            groups.put(gk, grp.encode());
        }

        private String reasonAt(Group grp, long now) {
            return grp.opened + p.maxAgeMs() <= grp.lastUpdate + p.idleMs() ? "max_age" : "idle";
        }

        private static int indexOfZero(byte[] b) {
            for (int i = 0; i < b.length; i++)
                if (b[i] == 0)
                    return i;
            return -1;
        }

        /* The group's items as one batch (they are at most max_items: a
         * group flushes as it fills), then the group is gone. */
        private void flush(byte[] g, Group grp, String reason, long due, long now) {
            Bytes prefix = itemKey(g, new byte[0]);
            List<Item> batch = new ArrayList<>(grp.items);
            List<Bytes> keys = new ArrayList<>(grp.items);
            try (KeyValueIterator<Bytes, byte[]> it = items.prefixScan(prefix, new BytesSerializer())) {
                while (it.hasNext()) {
                    KeyValue<Bytes, byte[]> kv = it.next();
                    byte[] k = kv.key.get();
                    keys.add(kv.key);
                    batch.add(Item.decode(new String(k, g.length + 1, k.length - g.length - 1,
                                                     StandardCharsets.UTF_8), kv.value));
                }
            }
            batch.sort(Comparator.comparingLong(Item::seq));
            String bid = batchId(g, batch);
            StringBuilder sb = new StringBuilder(256 + 160 * batch.size());
            sb.append("{\"batch_id\":\"").append(bid).append("\",\"key\":");
            jsonString(sb, new String(g, StandardCharsets.UTF_8));
            sb.append(",\"reason\":\"").append(reason).append("\",\"opened_at\":").append(grp.opened)
                .append(",\"flushed_at\":").append(now).append(",\"items\":[");
            for (int i = 0; i < batch.size(); i++) {
                Item it = batch.get(i);
                sb.append(i > 0 ? ",{\"id\":" : "{\"id\":");
                jsonString(sb, it.id());
                sb.append(',');
                jsonPayload(sb, it.payload());
                sb.append(",\"first_seen\":").append(it.firstSeen()).append(",\"last_update\":")
                    .append(it.lastUpdate()).append('}');
            }
            sb.append("]}");
            RecordHeaders hs = new RecordHeaders();
            hs.add("sluice-batch-id", bid.getBytes(StandardCharsets.US_ASCII));
            hs.add("sluice-due", Long.toString(due).getBytes(StandardCharsets.US_ASCII));
            ctx.forward(new Record<>(g, sb.toString().getBytes(StandardCharsets.UTF_8), now, hs));
            for (Bytes k : keys)
                items.delete(k);
            groups.delete(Bytes.wrap(g));
            if (grp.indexed != 0)
                deadlines.delete(deadlineKey(grp.indexed, g));
        }

        /* Index entries due by now, up to FIRE_MAX: a group whose real
         * deadline moved on (more items came) is indexed again at it. */
        private void punctuate(long now) {
            List<Bytes> due = new ArrayList<>();
            try (KeyValueIterator<Bytes, byte[]> it = deadlines.range(Bytes.wrap(be64(0)),
                                                                      Bytes.wrap(be64(now + 1)))) {
                while (it.hasNext() && due.size() < FIRE_MAX)
                    due.add(it.next().key);
            }
            for (Bytes dk : due) {
                byte[] k = dk.get();
                long at = ByteBuffer.wrap(k).getLong();
                byte[] g = Arrays.copyOfRange(k, 8, k.length);
                Bytes gk = Bytes.wrap(g);
                Group grp = Group.decode(groups.get(gk));
                deadlines.delete(dk);
                if (grp == null || grp.indexed != at)
                    continue; // stale
                long real = grp.deadline(p);
                if (real <= now) {
                    grp.indexed = 0;
                    flush(g, grp, reasonAt(grp, now), real, now);
                } else {
                    grp.indexed = real;
                    deadlines.put(deadlineKey(real, g), new byte[] {1});
                    groups.put(gk, grp.encode());
                }
            }
        }
    }

    static Topology debounceTopology(String input, String output, Params p) {
        Topology t = new Topology();
        t.addSource("in", new ByteArrayDeserializer(), new ByteArrayDeserializer(), input);
        t.addProcessor("debounce", () -> new DebounceProcessor(p), "in");
        for (String s : List.of("items", "groups", "deadlines"))
            t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(s), Serdes.Bytes(),
                                                        Serdes.ByteArray()),
                            "debounce");
        t.addSink("out", output, new ByteArraySerializer(), new ByteArraySerializer(), "debounce");
        return t;
    }

    // ---- main --------------------------------------------------------------

    static void usage() {
        System.err.println(String.join("\n",
            "usage: StreamsPeer --mode delay|debounce -b BOOTSTRAP -i INPUT [-o OUTPUT] --app-id ID",
            "                   --state-dir DIR [--threads N] [--expect N] [-X key=value ...]",
            "                   [--idle MS] [--max-age MS] [--max-items N] [--max-bytes B]",
            "  delay: timers to the topic in each record's sluice-target header",
            "  debounce: batches to OUTPUT (default idle 60000, max-age 120000, max-items 100)",
            "  stdout: 'state S' on each state change, 'in=N' once N input records are processed"));
    }

    public static void main(String[] args) throws Exception {
        String mode = null, bootstrap = null, input = null, output = null, appId = null, stateDir = null;
        int threads = 1, maxItems = 100;
        long idle = 60_000, maxAge = 120_000, maxBytes = Long.MAX_VALUE;
        Properties extra = new Properties();
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[i + 1] : null;
                switch (a) {
                case "--mode": mode = v; i++; break;
                case "-b": bootstrap = v; i++; break;
                case "-i": input = v; i++; break;
                case "-o": output = v; i++; break;
                case "--app-id": appId = v; i++; break;
                case "--state-dir": stateDir = v; i++; break;
                case "--threads": threads = Integer.parseInt(v); i++; break;
                case "--expect": expect = Long.parseLong(v); i++; break;
                case "--idle": idle = Long.parseLong(v); i++; break;
                case "--max-age": maxAge = Long.parseLong(v); i++; break;
                case "--max-items": maxItems = Integer.parseInt(v); i++; break;
                case "--max-bytes": maxBytes = Long.parseLong(v); i++; break;
                case "-X":
                    extra.setProperty(v.substring(0, v.indexOf('=')), v.substring(v.indexOf('=') + 1));
                    i++;
                    break;
                default: throw new IllegalArgumentException("unknown argument " + a);
                }
            }
        } catch (RuntimeException e) {
            System.err.println("StreamsPeer: " + e.getMessage());
            usage();
            System.exit(2);
        }
        if (mode == null || bootstrap == null || input == null || appId == null || stateDir == null
            || (mode.equals("debounce") && output == null)) {
            usage();
            System.exit(2);
        }
        Topology topo;
        if (mode.equals("delay"))
            topo = delayTopology(input);
        else if (mode.equals("debounce"))
            topo = debounceTopology(input, output, new Params(idle, maxAge, maxItems, maxBytes));
        else {
            usage();
            System.exit(2);
            return;
        }

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.POLL_MS_CONFIG, 10);
        props.putAll(extra);

        KafkaStreams streams = new KafkaStreams(topo, props);
        CountDownLatch done = new CountDownLatch(1);
        AtomicBoolean failed = new AtomicBoolean();
        streams.setStateListener((now, before) -> {
            say("state " + now);
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR)
                done.countDown();
        });
        streams.setUncaughtExceptionHandler(e -> {
            failed.set(true);
            say("error " + e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(10));
            done.countDown();
        }));
        streams.start();
        done.await();
        streams.close(Duration.ofSeconds(10));
        System.exit(failed.get() ? 1 : 0);
    }
}
