import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Runs Apache Kafka's own partition assignors for groupscope's differential tests.
 *
 * <p>One JSON object per line on stdin, one per line on stdout. A request:
 * {"assignor": "range" | "roundrobin" | "sticky" | "cooperative-sticky" | "uniform" |
 * "server-range", "partitions": {topic: count}, "racks": {topic: [[rack, ...] | null, ...]}
 * (optional), "topic_ids": {topic: uuid} (optional, server side), "members": [{"id",
 * "topics", "owned": [[topic, partition], ...], "generation", "rack",
 * "group_instance_id"}]}. The members' order is the JoinGroup member list: they go into a
 * HashMap in that order, as the coordinator and the consumer leader do. The answer is
 * {"assignment": {member: [[topic, partition], ...]}} (client side in Kafka's list order,
 * server side topics by id then partitions ascending) or {"error": {"class", "message"}}.
 *
 * <p>Client side: {@code ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)},
 * replicas on nodes with the given racks. The eager sticky assignor reads the owned
 * partitions and generation from its user data (StickyAssignor's V1 layout, V0 without a
 * generation); the cooperative one from the subscription's ownedPartitions and
 * generationId. Server side (KIP-848): {@code GroupSpecImpl} and a topic describer over the
 * request. Topic ids default to UUIDs whose order, and whose HashSet iteration order, is
 * the topic names' order.
 */
public final class AssignorHarness {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private AssignorHarness() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        // Kafka logs (e.g. conflicting claims) must not reach the protocol stream.
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode response = MAPPER.createObjectNode();
            try {
                response.set("assignment", handle(MAPPER.readTree(line)));
            } catch (Exception | StackOverflowError e) {
                ObjectNode error = response.putObject("error");
                error.put("class", e.getClass().getName());
                error.put("message", String.valueOf(e.getMessage()));
            }
            out.println(MAPPER.writeValueAsString(response));
            out.flush();
        }
    }

    private static ObjectNode handle(JsonNode request) {
        String assignor = request.get("assignor").asText();
        Map<String, Integer> counts = new LinkedHashMap<>();
        request.get("partitions").properties().forEach(e -> counts.put(e.getKey(), e.getValue().asInt()));
        JsonNode racks = request.path("racks");
        switch (assignor) {
            case "range":
                return clientSide(new RangeAssignor(), false, counts, racks, request.get("members"));
            case "roundrobin":
                return clientSide(new RoundRobinAssignor(), false, counts, racks, request.get("members"));
            case "sticky":
                return clientSide(new StickyAssignor(), true, counts, racks, request.get("members"));
            case "cooperative-sticky":
                return clientSide(new CooperativeStickyAssignor(), false, counts, racks, request.get("members"));
            case "uniform":
                return serverSide(new UniformAssignor(), counts, racks, request);
            case "server-range":
                return serverSide(new org.apache.kafka.coordinator.group.assignor.RangeAssignor(), counts, racks, request);
            default:
                throw new IllegalArgumentException("unknown assignor " + assignor);
        }
    }

    private static Optional<String> optionalText(JsonNode node, String field) {
        JsonNode value = node.path(field);
        return value.isTextual() ? Optional.of(value.asText()) : Optional.empty();
    }

    private static int generation(JsonNode member) {
        JsonNode value = member.path("generation");
        return value.isIntegralNumber() ? value.asInt() : -1;
    }

    private static List<String> topics(JsonNode member) {
        List<String> topics = new ArrayList<>();
        member.path("topics").forEach(t -> topics.add(t.asText()));
        return topics;
    }

    private static List<TopicPartition> owned(JsonNode member) {
        List<TopicPartition> owned = new ArrayList<>();
        member.path("owned").forEach(tp -> owned.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt())));
        return owned;
    }

    /** Replica racks of one partition; a null rack name is a replica on a node without a rack. */
    private static List<String> replicaRacks(JsonNode racks, String topic, int partition) {
        JsonNode entry = racks.path(topic).path(partition);
        List<String> out = new ArrayList<>();
        entry.forEach(r -> out.add(r.isNull() ? null : r.asText()));
        return out;
    }

    private static ObjectNode clientSide(ConsumerPartitionAssignor assignor, boolean eagerSticky,
                                         Map<String, Integer> counts, JsonNode racks, JsonNode members) {
        Map<String, Node> nodes = new HashMap<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        for (Map.Entry<String, Integer> topic : counts.entrySet()) {
            for (int p = 0; p < topic.getValue(); p++) {
                List<String> replicaRacks = replicaRacks(racks, topic.getKey(), p);
                Node[] replicas = new Node[replicaRacks.size()];
                Map<String, Integer> seen = new HashMap<>();
                for (int r = 0; r < replicas.length; r++) {
                    String rack = replicaRacks.get(r);
                    int copy = seen.merge(String.valueOf(rack), 1, Integer::sum);
                    String key = rack + "/" + copy;
                    replicas[r] = nodes.computeIfAbsent(key, k -> new Node(nodes.size(), "broker-" + nodes.size(), 9092, rack));
                }
                Node leader = replicas.length > 0 ? replicas[0] : null;
                partitions.add(new PartitionInfo(topic.getKey(), p, leader, replicas, replicas));
            }
        }
        Cluster cluster = new Cluster("groupscope", new ArrayList<>(nodes.values()), partitions, Set.of(), Set.of());
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (JsonNode member : members) {
            List<TopicPartition> owned = owned(member);
            int generation = generation(member);
            ByteBuffer userData = eagerSticky ? stickyUserData(owned, generation) : null;
            Subscription subscription = new Subscription(topics(member), userData, owned, generation,
                optionalText(member, "rack"));
            subscription.setGroupInstanceId(optionalText(member, "group_instance_id"));
            subscriptions.put(member.get("id").asText(), subscription);
        }
        ConsumerPartitionAssignor.GroupAssignment result = assignor.assign(cluster, new GroupSubscription(subscriptions));
        ObjectNode out = MAPPER.createObjectNode();
        result.groupAssignment().forEach((memberId, assignment) -> {
            ArrayNode list = out.putArray(memberId);
            for (TopicPartition tp : assignment.partitions()) {
                list.addArray().add(tp.topic()).add(tp.partition());
            }
        });
        return out;
    }

    /**
     * StickyAssignor's user data: the previous assignment (topics in the order given, a topic
     * repeated where the list returns to it) and, when known, the generation (V1; V0 without).
     */
    private static ByteBuffer stickyUserData(List<TopicPartition> owned, int generation) {
        if (owned.isEmpty() && generation < 0) {
            return null;
        }
        List<String> topics = new ArrayList<>();
        List<List<Integer>> runs = new ArrayList<>();
        for (TopicPartition tp : owned) {
            if (topics.isEmpty() || !topics.get(topics.size() - 1).equals(tp.topic())) {
                topics.add(tp.topic());
                runs.add(new ArrayList<>());
            }
            runs.get(runs.size() - 1).add(tp.partition());
        }
        int size = 4 + (generation >= 0 ? 4 : 0);
        for (int i = 0; i < topics.size(); i++) {
            size += 2 + topics.get(i).getBytes(StandardCharsets.UTF_8).length + 4 + 4 * runs.get(i).size();
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        buffer.putInt(topics.size());
        for (int i = 0; i < topics.size(); i++) {
            byte[] name = topics.get(i).getBytes(StandardCharsets.UTF_8);
            buffer.putShort((short) name.length);
            buffer.put(name);
            buffer.putInt(runs.get(i).size());
            runs.get(i).forEach(buffer::putInt);
        }
        if (generation >= 0) {
            buffer.putInt(generation);
        }
        buffer.flip();
        return buffer;
    }

    private static ObjectNode serverSide(ConsumerGroupPartitionAssignor assignor, Map<String, Integer> counts,
                                         JsonNode racks, JsonNode request) {
        JsonNode members = request.get("members");
        TreeSet<String> names = new TreeSet<>(counts.keySet());
        for (JsonNode member : members) {
            names.addAll(topics(member));
            owned(member).forEach(tp -> names.add(tp.topic()));
        }
        Map<String, Uuid> ids = new HashMap<>();
        Map<Uuid, String> byId = new HashMap<>();
        long next = 1;
        for (String name : names) {
            JsonNode given = request.path("topic_ids").path(name);
            Uuid id = given.isTextual() ? Uuid.fromString(given.asText()) : new Uuid(next++, 0L);
            ids.put(name, id);
            byId.put(id, name);
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Map<String, Set<String>> subscribed = new LinkedHashMap<>();
        for (JsonNode member : members) {
            String memberId = member.get("id").asText();
            Set<Uuid> topicIds = new HashSet<>();
            for (String topic : topics(member)) {
                topicIds.add(ids.get(topic));
            }
            subscribed.put(memberId, new HashSet<>(topics(member)));
            Map<Uuid, Set<Integer>> assigned = new HashMap<>();
            for (TopicPartition tp : owned(member)) {
                Uuid id = ids.get(tp.topic());
                assigned.computeIfAbsent(id, k -> new HashSet<>()).add(tp.partition());
                inverted.computeIfAbsent(id, k -> new HashMap<>()).put(tp.partition(), memberId);
            }
            specs.put(memberId, new MemberSubscriptionAndAssignmentImpl(optionalText(member, "rack"),
                optionalText(member, "group_instance_id"), topicIds, new Assignment(assigned)));
        }
        Set<Set<String>> distinct = new HashSet<>(subscribed.values());
        SubscriptionType type = distinct.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                Integer count = counts.get(byId.get(topicId));
                return count == null ? -1 : count;
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                Set<String> out = new HashSet<>();
                for (String rack : replicaRacks(racks, byId.get(topicId), partition)) {
                    if (rack != null) {
                        out.add(rack);
                    }
                }
                return out;
            }
        };
        GroupAssignment result = assignor.assign(new GroupSpecImpl(specs, type, inverted), describer);
        ObjectNode out = MAPPER.createObjectNode();
        for (Map.Entry<String, MemberAssignment> entry : result.members().entrySet()) {
            ArrayNode list = out.putArray(entry.getKey());
            entry.getValue().partitions().entrySet().stream()
                .sorted(Map.Entry.comparingByKey())
                .forEach(e -> new TreeSet<>(e.getValue()).forEach(p -> list.addArray().add(byId.get(e.getKey())).add(p)));
        }
        return out;
    }
}
