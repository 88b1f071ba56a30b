// SPDX-License-Identifier: Apache-2.0
// ProduceAt — produces one record with an explicit timestamp, which kcat
// cannot set: a producer with a wrong clock, or one that sends seconds as
// milliseconds.  Run as a Java single-file program against the test
// broker's jars (those of SLUICE_TEST_KAFKA_VERSION):
//   tests/integration/kafka/broker.sh java tests/tools/ProduceAt.java \
//       BOOTSTRAP TOPIC PARTITION TIMESTAMP_MS KEY VALUE [NAME=VALUE ...]
// Prints "offset N" once the broker acknowledged it.
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public class ProduceAt {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        ProducerRecord<String, String> r = new ProducerRecord<>(args[1],
            Integer.parseInt(args[2]), Long.parseLong(args[3]), args[4], args[5]);
        for (int i = 6; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            r.headers().add(args[i].substring(0, eq),
                args[i].substring(eq + 1).getBytes(StandardCharsets.UTF_8));
        }
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            RecordMetadata md = prod.send(r).get();
            System.out.println("offset " + md.offset());
        }
    }
}
