// SPDX-License-Identifier: Apache-2.0
// QuorumLeader — prints the node id of the KRaft controller quorum's
// leader (Admin.describeMetadataQuorum).  Run as a Java single-file program
// against the test broker's jars (those of SLUICE_TEST_KAFKA_VERSION):
//   tests/integration/kafka/broker.sh java tests/tools/QuorumLeader.java BOOTSTRAP
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class QuorumLeader {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        try (Admin admin = Admin.create(p)) {
            System.out.println(admin.describeMetadataQuorum().quorumInfo().get().leaderId());
        }
    }
}
