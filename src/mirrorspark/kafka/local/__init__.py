"""Local Apache Kafka (KRaft) clusters started from the Maven jars, for tests, the demo and benchmarks.

Clusters as data (``model``), ports, JVM flags and reserved broker properties
(``settings``), broker processes (``brokers``), start/stop of named clusters
(``clusters``), their state and lock files (``state``), the JVM class-data-sharing
cache (``cds``) and a launcher of Apache's own MirrorMaker 2 (``mirror_maker``).
"""
