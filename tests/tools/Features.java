// SPDX-License-Identifier: Apache-2.0
// Features — prints the cluster's finalized feature levels, one a line:
// "<name> <max level>" (Admin.describeFeatures), e.g. transaction.version
// and metadata.version.  Run as a Java single-file program against the
// test broker's jars:
//   tests/integration/kafka/broker.sh java tests/tools/Features.java BOOTSTRAP
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class Features {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        try (Admin admin = Admin.create(p)) {
            TreeMap<String, Short> out = new TreeMap<>();
            admin.describeFeatures().featureMetadata().get().finalizedFeatures()
                    .forEach((name, range) -> out.put(name, range.maxVersionLevel()));
            out.forEach((name, level) -> System.out.println(name + " " + level));
        }
    }
}
