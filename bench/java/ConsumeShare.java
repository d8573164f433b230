// The consume-only pass of the benchmark's ceiling for one client: Kafka's Java consumer reads its
// share of a topic's partitions (assign(), no group: ConsumerPerformance can only subscribe to whole
// topics), from the beginning, until it has read the expected number of records.
//
// Usage: java -cp <kafka jars>/* ConsumeShare <bootstrap> <topic> <partition,partition,...> <records> <timeout ms>
//
// Consumer settings as ConsumerPerformance sets them (1 MiB max.partition.fetch.bytes, 2 MiB receive
// buffer, check.crcs=false, poll every 100 ms). Prints one line:
//   records=<n> bytes=<key+value bytes> start.ms=<epoch ms before the first poll> end.ms=<epoch ms of the last record's poll>
// Exit status 0 when every record was read, 2 when <timeout ms> passed without a record first.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ConsumeShare {
    private ConsumeShare() {}

    public static void main(String[] args) {
        if (args.length != 5) {
            System.err.println("usage: ConsumeShare <bootstrap> <topic> <partitions> <records> <timeout ms>");
            System.exit(64);
        }
        String topic = args[1];
        long want = Long.parseLong(args[3]);
        long timeoutMs = Long.parseLong(args[4]);
        List<TopicPartition> partitions = new ArrayList<>();
        for (String p : args[2].split(",")) {
            partitions.add(new TopicPartition(topic, Integer.parseInt(p.trim())));
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("client.id", "bench-ceiling-consume");
        props.put("max.partition.fetch.bytes", "1048576");
        props.put("receive.buffer.bytes", "2097152");
        props.put("check.crcs", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        long records = 0;
        long bytes = 0;
        long start;
        long end;
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            start = System.currentTimeMillis();
            end = start;
            long last = start;
            while (records < want) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
                long now = System.currentTimeMillis();
                if (batch.isEmpty()) {
                    if (now - last > timeoutMs) {
                        break;
                    }
                    continue;
                }
                last = now;
                end = now;
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    records++;
                    if (r.key() != null) {
                        bytes += r.key().length;
                    }
                    if (r.value() != null) {
                        bytes += r.value().length;
                    }
                }
            }
        }
        System.out.println("records=" + records + " bytes=" + bytes + " start.ms=" + start + " end.ms=" + end);
        System.exit(records >= want ? 0 : 2);
    }
}
