import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Kafka's Java Admin client for what confluent-kafka's AdminClient lacks.
 *
 * <ul>
 *   <li>{@code describe BOOTSTRAP GROUP...}: one JSON line per group from
 *       {@code Admin.describeConsumerGroups}, with what librdkafka does not expose: the
 *       group epoch, the target assignment epoch and each member's epoch (KIP-848).
 *   <li>{@code delete-offsets BOOTSTRAP GROUP TOPIC PARTITION...}: {@code
 *       Admin.deleteConsumerGroupOffsets} (OffsetDelete, KIP-496), which librdkafka has
 *       but confluent-kafka's Python binding does not; prints {@code ok}.
 * </ul>
 *
 * Exits 1 with the exception on stderr when Kafka answers with an error.
 */
public final class GroupAdmin {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_S = 60;

    private GroupAdmin() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: GroupAdmin describe|delete-offsets BOOTSTRAP GROUP ...");
            System.exit(2);
        }
        Map<String, Object> config = Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1],
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
        try (Admin admin = Admin.create(config)) {
            switch (args[0]) {
                case "describe" -> describe(admin, List.of(args).subList(2, args.length));
                case "delete-offsets" -> deleteOffsets(admin, args);
                default -> {
                    System.err.println("unknown command: " + args[0]);
                    System.exit(2);
                }
            }
        }
    }

    private static void describe(Admin admin, List<String> groups) throws Exception {
        Map<String, ConsumerGroupDescription> described =
                admin.describeConsumerGroups(groups).all().get(TIMEOUT_S, TimeUnit.SECONDS);
        for (String group : groups) {
            ConsumerGroupDescription d = described.get(group);
            ObjectNode out = JSON.createObjectNode();
            out.put("group", group);
            out.put("type", d.type().toString());
            out.put("state", d.groupState().toString());
            out.put("assignor", d.partitionAssignor());
            putOptional(out, "group_epoch", d.groupEpoch());
            putOptional(out, "target_assignment_epoch", d.targetAssignmentEpoch());
            ArrayNode members = out.putArray("members");
            for (MemberDescription m : d.members()) {
                ObjectNode member = members.addObject();
                member.put("member_id", m.consumerId());
                member.put("client_id", m.clientId());
                putOptional(member, "member_epoch", m.memberEpoch());
                member.set("assignment", partitions(m.assignment()));
                member.set("target_assignment",
                        m.targetAssignment().map(GroupAdmin::partitions).orElse(null));
            }
            System.out.println(JSON.writeValueAsString(out));
        }
    }

    private static void putOptional(ObjectNode node, String name, Optional<Integer> value) {
        if (value.isPresent()) {
            node.put(name, value.get());
        } else {
            node.putNull(name);
        }
    }

    /** [[topic, partition], ...], sorted. */
    private static ArrayNode partitions(MemberAssignment assignment) {
        List<TopicPartition> sorted = new ArrayList<>(assignment.topicPartitions());
        sorted.sort(Comparator.comparing(TopicPartition::topic)
                .thenComparingInt(TopicPartition::partition));
        ArrayNode out = JSON.createArrayNode();
        for (TopicPartition tp : sorted) {
            out.addArray().add(tp.topic()).add(tp.partition());
        }
        return out;
    }

    private static void deleteOffsets(Admin admin, String[] args) throws Exception {
        String group = args[2];
        String topic = args[3];
        Set<TopicPartition> partitions = new HashSet<>();
        for (int i = 4; i < args.length; i++) {
            partitions.add(new TopicPartition(topic, Integer.parseInt(args[i])));
        }
        admin.deleteConsumerGroupOffsets(group, partitions).all().get(TIMEOUT_S, TimeUnit.SECONDS);
        System.out.println("ok");
    }
}
