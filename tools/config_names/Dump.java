// Prints the config names of Kafka's Java clients, MM2 and Connect, one "<kind> <name>" a line.
// Regenerate src/mirrorspark/config/keys/data/kafka-<version>.txt after upgrading the jars (pom.xml):
//   CP=$(ls build/jars/mm2/*.jar | tr '\n' ':'); javac -d /tmp -cp "$CP" tools/config_names/Dump.java
//   java -cp "$CP:/tmp" Dump | sort -u     (then add the three header comment lines)
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
public class Dump {
  static void p(String tag, Collection<String> names) { for (String n : new TreeSet<>(names)) System.out.println(tag + " " + n); }
  static ConfigDef def(Class<?> c, String n) throws Exception { java.lang.reflect.Field f = c.getDeclaredField(n); f.setAccessible(true); return (ConfigDef) f.get(null); }
  static ConfigDef worker() throws Exception { Class<?> c = org.apache.kafka.connect.runtime.distributed.DistributedConfig.class; Class<?> k = org.apache.kafka.connect.runtime.distributed.Crypto.class; java.lang.reflect.Method m = c.getDeclaredMethod("config", k); m.setAccessible(true); return (ConfigDef) m.invoke(null, k.getField("SYSTEM").get(null)); }
  public static void main(String[] a) throws Exception {
    p("producer", org.apache.kafka.clients.producer.ProducerConfig.configNames());
    p("consumer", org.apache.kafka.clients.consumer.ConsumerConfig.configNames());
    p("admin", org.apache.kafka.clients.admin.AdminClientConfig.configNames());
    p("worker", worker().names());
    p("mm2", def(org.apache.kafka.connect.mirror.MirrorSourceConfig.class, "CONNECTOR_CONFIG_DEF").names());
    p("mm2", def(org.apache.kafka.connect.mirror.MirrorCheckpointConfig.class, "CONNECTOR_CONFIG_DEF").names());
    p("mm2", def(org.apache.kafka.connect.mirror.MirrorHeartbeatConfig.class, "CONNECTOR_CONFIG_DEF").names());
    p("connector", org.apache.kafka.connect.runtime.SourceConnectorConfig.configDef().names());
    java.lang.reflect.Method m = org.apache.kafka.connect.mirror.MirrorMakerConfig.class.getDeclaredMethod("config"); m.setAccessible(true);
    p("driver", ((ConfigDef) m.invoke(null)).names());
  }
}
