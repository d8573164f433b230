"""Local Apache Kafka (KRaft) clusters started from the Maven jars, for tests, the demo and benchmarks.

Clusters as data (``model``), ports, JVM flags and reserved broker properties
(``settings``), broker processes (``brokers``), start/stop of named clusters
(``clusters``), their state and lock files (``state``), the JVM class-data-sharing
cache (``cds``), and launchers of Apache's own Connect runtimes from the jars (``jvm_process``): MirrorMaker 2
in dedicated mode (``mirror_maker``) and a Kafka Connect distributed worker with a REST client (``connect_worker``);
and Schema Registries for the clusters (``registry``: Apicurio Registry's Confluent-compatible API, on Java 21+).
"""
