// SPDX-License-Identifier: Apache-2.0
// Acls — adds or deletes Kafka ACL bindings read from stdin, one a line in
// the format of `sluice acls --format table` (RESOURCE_TYPE PATTERN_TYPE
// NAME OPERATION, tab-separated), allowed for PRINCIPAL from any host; or
// lists the bindings PRINCIPAL has; or serves: each stdin line is "add" or
// "delete", a tab, then one binding, answered by one line "ok" or "error:
// ..." on stdout (one JVM for a test that changes bindings one at a time).  Run as a Java single-file program
// against the test broker's jars, with a client the authorizer lets alter
// ACLs (the cluster harness's plaintext listener is a super user):
//   tests/integration/kafka/broker.sh java tests/tools/Acls.java BOOTSTRAP add|delete|list|serve PRINCIPAL
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

public class Acls {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        String verb = args[1], principal = args[2];
        try (Admin admin = Admin.create(p)) {
            if (verb.equals("list")) {
                AclBindingFilter f = new AclBindingFilter(ResourcePatternFilter.ANY,
                        new AccessControlEntryFilter(principal, null, AclOperation.ANY, AclPermissionType.ANY));
                for (AclBinding b : admin.describeAcls(f).values().get())
                    System.out.println(b.pattern().resourceType() + "\t" + b.pattern().patternType() + "\t"
                            + b.pattern().name() + "\t" + b.entry().operation());
                return;
            }
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            if (verb.equals("serve")) {
                for (String line; (line = in.readLine()) != null;) {
                    int tab = line.indexOf('\t');
                    if (tab < 0)
                        continue;
                    try {
                        apply(admin, line.substring(0, tab), List.of(binding(principal, line.substring(tab + 1))));
                        System.out.println("ok");
                    } catch (Exception e) {
                        System.out.println("error: " + e);
                    }
                    System.out.flush();
                }
                return;
            }
            List<AclBinding> bindings = new ArrayList<>();
            for (String line; (line = in.readLine()) != null;) {
                if (!line.isBlank())
                    bindings.add(binding(principal, line));
            }
            apply(admin, verb, bindings);
            System.out.println(verb + ": " + bindings.size() + " binding(s)");
        }
    }

    static AclBinding binding(String principal, String line) {
        String[] f = line.split("\t");
        return new AclBinding(
                new ResourcePattern(ResourceType.fromString(f[0]), f[2], PatternType.fromString(f[1])),
                new AccessControlEntry(principal, "*", AclOperation.fromString(f[3]), AclPermissionType.ALLOW));
    }

    static void apply(Admin admin, String verb, List<AclBinding> bindings) throws Exception {
        if (verb.equals("add")) {
            admin.createAcls(bindings).all().get();
        } else {
            List<AclBindingFilter> filters = new ArrayList<>();
            for (AclBinding b : bindings)
                filters.add(b.toFilter());
            admin.deleteAcls(filters).all().get();
        }
    }
}
