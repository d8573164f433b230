// MM2's own client library (Kafka's connect-mirror-client) reading a cluster, for tests.
//
// Usage (class path: this class plus build/jars/mm2/*):
//   MirrorClientTool translate <bootstrap> <remoteClusterAlias> <groupId> [policyClass] [separator]
//       RemoteClusterUtils.translateOffsets(props, remoteClusterAlias, groupId, 30 s)
//       -> {"<topic>-<partition>": <offset>, ...}
//   MirrorClientTool info <bootstrap> [alias,alias,...] [policyClass] [separator]
//       MirrorClient heartbeatTopics / checkpointTopics / upstreamClusters / remoteTopics,
//       and replicationHops(alias) for every alias given
//       -> {"heartbeatTopics": [...], "checkpointTopics": [...], "upstreamClusters": [...],
//           "remoteTopics": [...], "replicationHops": {"<alias>": n, ...}}
//
// An empty policyClass or separator argument means "not given" (MM2's default).
// stdout carries exactly one JSON document (lists sorted, non-ASCII escaped); anything the
// libraries print, logging included, goes to stderr. Exit codes: 0 ok, 1 failure (stack trace
// on stderr), 2 usage error.

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.MirrorClient;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public final class MirrorClientTool {

    private static final Duration TRANSLATE_TIMEOUT = Duration.ofSeconds(30);
    private static final String USAGE = String.join(
        "\n",
        "usage: MirrorClientTool translate <bootstrap> <remoteClusterAlias> <groupId> [policyClass] [separator]",
        "       MirrorClientTool info <bootstrap> [alias,alias,...] [policyClass] [separator]");

    private MirrorClientTool() {
    }

    public static void main(String[] args) {
        // Keep stdout for the JSON alone: whatever else writes to System.out (a console log
        // appender created later included) lands on stderr.
        PrintStream json = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        String out;
        try {
            out = run(args);
        } catch (IllegalArgumentException e) {
            System.err.println("MirrorClientTool: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        } catch (Throwable t) {
            System.err.println("MirrorClientTool: failed: " + t);
            t.printStackTrace(System.err);
            System.exit(1);
            return;
        }
        json.println(out);
        json.flush();
        // Non-daemon client threads must not keep the JVM alive.
        System.exit(json.checkError() ? 1 : 0);
    }

    private static String run(String[] args) throws Exception {
        if (args.length < 2) {
            throw new IllegalArgumentException("expected a command and a bootstrap");
        }
        String command = args[0];
        switch (command) {
            case "translate": {
                if (args.length < 4 || args.length > 6) {
                    throw new IllegalArgumentException("translate takes 3 to 5 arguments, got " + (args.length - 1));
                }
                Map<String, Object> props = props(args[1], arg(args, 4), arg(args, 5));
                return translate(props, args[2], args[3]);
            }
            case "info": {
                if (args.length > 5) {
                    throw new IllegalArgumentException("info takes 1 to 4 arguments, got " + (args.length - 1));
                }
                Map<String, Object> props = props(args[1], arg(args, 3), arg(args, 4));
                List<String> aliases = new ArrayList<>();
                String list = arg(args, 2);
                if (list != null) {
                    for (String alias : list.split(",")) {
                        if (!alias.isEmpty()) {
                            aliases.add(alias);
                        }
                    }
                }
                return info(props, aliases);
            }
            default:
                throw new IllegalArgumentException("unknown command " + quote(command));
        }
    }

    /** The argument at index i, or null if absent or empty. */
    private static String arg(String[] args, int i) {
        return i < args.length && !args[i].isEmpty() ? args[i] : null;
    }

    private static Map<String, Object> props(String bootstrap, String policyClass, String separator) {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", bootstrap);
        if (policyClass != null) {
            props.put("replication.policy.class", policyClass);
        }
        if (separator != null) {
            props.put("replication.policy.separator", separator);
        }
        return props;
    }

    private static String translate(Map<String, Object> props, String remoteClusterAlias, String groupId)
            throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(props, remoteClusterAlias, groupId, TRANSLATE_TIMEOUT);
        // Sorted by topic, then partition number (not by the rendered string).
        Map<String, TreeMap<Integer, Long>> sorted = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            sorted.computeIfAbsent(e.getKey().topic(), t -> new TreeMap<>())
                .put(e.getKey().partition(), e.getValue().offset());
        }
        StringBuilder sb = new StringBuilder("{");
        String sep = "";
        for (Map.Entry<String, TreeMap<Integer, Long>> topic : sorted.entrySet()) {
            for (Map.Entry<Integer, Long> p : topic.getValue().entrySet()) {
                sb.append(sep).append(quote(new TopicPartition(topic.getKey(), p.getKey()).toString()))
                    .append(": ").append(p.getValue());
                sep = ", ";
            }
        }
        return sb.append('}').toString();
    }

    private static String info(Map<String, Object> props, List<String> aliases) throws Exception {
        try (MirrorClient client = new MirrorClient(props)) {
            StringBuilder sb = new StringBuilder("{");
            sb.append("\"heartbeatTopics\": ").append(list(client.heartbeatTopics()));
            sb.append(", \"checkpointTopics\": ").append(list(client.checkpointTopics()));
            sb.append(", \"upstreamClusters\": ").append(list(client.upstreamClusters()));
            sb.append(", \"remoteTopics\": ").append(list(client.remoteTopics()));
            sb.append(", \"replicationHops\": {");
            String sep = "";
            for (String alias : aliases) {
                sb.append(sep).append(quote(alias)).append(": ").append(client.replicationHops(alias));
                sep = ", ";
            }
            return sb.append("}}").toString();
        }
    }

    private static String list(Collection<String> items) {
        List<String> sorted = new ArrayList<>(items);
        sorted.sort(null);
        StringBuilder sb = new StringBuilder("[");
        String sep = "";
        for (String item : sorted) {
            sb.append(sep).append(quote(item));
            sep = ", ";
        }
        return sb.append(']').toString();
    }

    /** A JSON string literal; everything outside printable ASCII is written as \\uXXXX. */
    static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"':
                    sb.append("\\\"");
                    break;
                case '\\':
                    sb.append("\\\\");
                    break;
                case '\b':
                    sb.append("\\b");
                    break;
                case '\f':
                    sb.append("\\f");
                    break;
                case '\n':
                    sb.append("\\n");
                    break;
                case '\r':
                    sb.append("\\r");
                    break;
                case '\t':
                    sb.append("\\t");
                    break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        // UTF-16 code units: a supplementary character becomes its surrogate pair,
                        // which is how JSON spells it too.
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }
}
