// SPDX-License-Identifier: Apache-2.0
// ListTxns — prints the transactional ids the broker knows that start with
// a prefix, one line each: "<id> <state> <producer id>".  Run as a Java
// single-file program against the test broker's jars (those of
// SLUICE_TEST_KAFKA_VERSION):
//   tests/integration/kafka/broker.sh java tests/tools/ListTxns.java BOOTSTRAP PREFIX
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TransactionListing;

public class ListTxns {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        TreeMap<String, String> found = new TreeMap<>();
        try (Admin admin = Admin.create(p)) {
            for (TransactionListing t : admin.listTransactions().all().get())
                if (t.transactionalId().startsWith(args[1]))
                    found.put(t.transactionalId(), t.state() + " " + t.producerId());
        }
        found.forEach((id, rest) -> System.out.println(id + " " + rest));
    }
}
