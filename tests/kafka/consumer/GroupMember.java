import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a classic consumer group, driven by Kafka's own Java consumer.
 *
 * <p>Arguments are {@code --name value} pairs: {@code --bootstrap}, {@code --group},
 * {@code --topics} (comma-separated), {@code --assignor} ({@code range}, {@code roundrobin},
 * {@code sticky}, {@code cooperative-sticky}), {@code --log} (the JSON Lines file), and
 * optionally {@code --client-id}, {@code --instance-id} (group.instance.id: static membership, KIP-345),
 * {@code --rack} (client.rack), {@code --session-timeout-ms}, {@code --max-poll-interval-ms},
 * {@code --heartbeat-interval-ms}, {@code --stall-after-s} and {@code --stall-for-s} (that
 * long after its first assignment, stop polling for that long, once, to exceed
 * max.poll.interval.ms), {@code --leave-on-close}
 * ({@code true}: a static member leaves the group on close too, KIP-1092).
 *
 * <p>It polls, commits synchronously after every poll that returned records, and writes one
 * JSON line per event, flushed at once: {@code started}, {@code assigned}, {@code revoked},
 * {@code lost} (the rebalance callbacks, with the partitions they list, the whole assignment
 * after them, and the generation id and member id from {@code consumer.groupMetadata()}),
 * {@code committed}, {@code commit_failed}, {@code stalled}, {@code resumed} and {@code
 * closed}. SIGTERM wakes the consumer up and closes it (so a dynamic member leaves the group);
 * SIGKILL leaves the group to the session timeout.
 */
public final class GroupMember {
  private static final Map<String, String> ASSIGNORS =
      Map.of(
          "range", RangeAssignor.class.getName(),
          "roundrobin", RoundRobinAssignor.class.getName(),
          "sticky", StickyAssignor.class.getName(),
          "cooperative-sticky", CooperativeStickyAssignor.class.getName());

  private final KafkaConsumer<byte[], byte[]> consumer;
  private final Writer log;
  private volatile boolean stopping;
  private long firstAssigned = -1; // System.nanoTime() of the first assignment callback

  private GroupMember(KafkaConsumer<byte[], byte[]> consumer, Writer log) {
    this.consumer = consumer;
    this.log = log;
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = parse(argv);
    String assignor = ASSIGNORS.get(required(args, "assignor"));
    if (assignor == null) {
      throw new IllegalArgumentException("unknown assignor " + args.get("assignor"));
    }
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, required(args, "bootstrap"));
    config.put(ConsumerConfig.GROUP_ID_CONFIG, required(args, "group"));
    config.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
    optional(args, config, "instance-id", ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    optional(args, config, "rack", ConsumerConfig.CLIENT_RACK_CONFIG);
    optional(args, config, "session-timeout-ms", ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
    optional(args, config, "max-poll-interval-ms", ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG);
    optional(args, config, "heartbeat-interval-ms", ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
    optional(args, config, "client-id", ConsumerConfig.CLIENT_ID_CONFIG);
    List<String> topics = Arrays.asList(required(args, "topics").split(","));
    double stallAfter = Double.parseDouble(args.getOrDefault("stall-after-s", "-1"));
    double stallFor = Double.parseDouble(args.getOrDefault("stall-for-s", "0"));
    boolean leaveOnClose = Boolean.parseBoolean(args.getOrDefault("leave-on-close", "false"));

    Writer log =
        new OutputStreamWriter(
            new FileOutputStream(required(args, "log"), true), StandardCharsets.UTF_8);
    GroupMember member = new GroupMember(new KafkaConsumer<>(config), log);
    Thread main = Thread.currentThread();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  member.stopping = true;
                  member.consumer.wakeup();
                  try {
                    main.join(30_000);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }));
    member.run(topics, stallAfter, stallFor, leaveOnClose);
  }

  private void run(List<String> topics, double stallAfter, double stallFor, boolean leaveOnClose)
      throws IOException, InterruptedException {
    boolean stalled = false;
    write("started", null, null);
    consumer.subscribe(topics, new Listener());
    try {
      while (!stopping) {
        if (!stalled
            && stallAfter >= 0
            && firstAssigned >= 0
            && System.nanoTime() - firstAssigned > seconds(stallAfter)) {
          stalled = true;
          write("stalled", null, null);
          long until = System.nanoTime() + seconds(stallFor);
          while (!stopping && System.nanoTime() < until) {
            Thread.sleep(50);
          }
          write("resumed", null, null);
          continue;
        }
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
        if (records.isEmpty()) {
          continue;
        }
        try {
          consumer.commitSync();
          write("committed", records.partitions(), null);
        } catch (CommitFailedException | RebalanceInProgressException e) {
          write("commit_failed", records.partitions(), e.getClass().getSimpleName());
        }
      }
    } catch (WakeupException e) {
      // SIGTERM: the shutdown hook woke the consumer up; close it below.
    } finally {
      CloseOptions.GroupMembershipOperation leave =
          leaveOnClose
              ? CloseOptions.GroupMembershipOperation.LEAVE_GROUP
              : CloseOptions.GroupMembershipOperation.DEFAULT;
      consumer.close(CloseOptions.groupMembershipOperation(leave));
      write("closed", null, null);
      log.close();
    }
  }

  private static long seconds(double s) {
    return (long) (s * 1e9);
  }

  /** Each callback runs on the polling thread, so groupMetadata() is the generation it is for. */
  private final class Listener implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      if (firstAssigned < 0) {
        firstAssigned = System.nanoTime();
      }
      write("assigned", partitions, null);
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      write("revoked", partitions, null);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      write("lost", partitions, null);
    }
  }

  private void write(String event, Collection<TopicPartition> partitions, String detail) {
    StringBuilder line = new StringBuilder("{\"event\":").append(quote(event));
    line.append(",\"time_ms\":").append(System.currentTimeMillis());
    if (partitions != null) {
      ConsumerGroupMetadata metadata = consumer.groupMetadata();
      line.append(",\"generation\":").append(metadata.generationId());
      line.append(",\"member_id\":").append(quote(metadata.memberId()));
      line.append(",\"partitions\":").append(json(partitions));
      line.append(",\"assignment\":").append(json(consumer.assignment()));
    }
    if (detail != null) {
      line.append(",\"detail\":").append(quote(detail));
    }
    line.append("}\n");
    try {
      log.write(line.toString());
      log.flush();
    } catch (IOException e) {
      throw new IllegalStateException("cannot write the event log", e);
    }
  }

  private static String json(Collection<TopicPartition> partitions) {
    List<TopicPartition> sorted = new ArrayList<>(partitions);
    sorted.sort(
        Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
    StringBuilder out = new StringBuilder("[");
    for (TopicPartition tp : sorted) {
      if (out.length() > 1) {
        out.append(',');
      }
      out.append('[').append(quote(tp.topic())).append(',').append(tp.partition()).append(']');
    }
    return out.append(']').toString();
  }

  private static String quote(String text) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  private static Map<String, String> parse(String[] argv) {
    if (argv.length % 2 != 0) {
      throw new IllegalArgumentException("arguments come in --name value pairs");
    }
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --name, got " + argv[i]);
      }
      args.put(argv[i].substring(2), argv[i + 1]);
    }
    return args;
  }

  private static String required(Map<String, String> args, String name) {
    String value = args.get(name);
    if (value == null) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return value;
  }

  private static void optional(
      Map<String, String> args, Properties config, String name, String key) {
    String value = args.get(name);
    if (value != null) {
      config.put(key, value);
    }
  }
}
