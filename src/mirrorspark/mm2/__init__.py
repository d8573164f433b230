"""MirrorMaker 2's concepts as pure code: no I/O, no confluent-kafka, no PySpark.

Replication policies (``policy``), internal topic names (``internal_topics``), topic/group/
config-property filters (``filters``), the binary formats of MM2's internal topics
(``records``), Kafka Connect source offsets (``connect_offsets``) and their KIP-875 edits
(``alter_offsets``), offset-sync emission (``offset_syncs``) and MM2's ``OffsetSyncStore``
(``sync_store``), copied ranges and offset translation (``translation``), checkpoint rules
(``checkpoint_rules``), topic config sync (``config_sync``), replication hops and cycles
(``topology``), MM2's metric names and the measurement maths (``metrics``).

mirrorspark's own formats and rules are :mod:`mirrorspark.core`. May import only
:mod:`mirrorspark.errors` (and itself).
"""
