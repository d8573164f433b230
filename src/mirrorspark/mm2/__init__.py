"""MirrorMaker 2's concepts as pure code: no I/O, no confluent-kafka, no PySpark.

Replication policies (``policy``), topic/group/config-property filters (``filters``),
the binary formats of MM2's internal topics (``records``), Kafka Connect source
offsets (``connect_offsets``), offset-sync emission (``offset_syncs``) and MM2's
``OffsetSyncStore`` (``sync_store``), copied ranges and offset translation
(``translation``), checkpoint rules (``checkpoints``), replication hops and cycles
(``topology``) and the state of live control changes (``control_state``).

Layer rule: may import only :mod:`mirrorspark.errors` (and itself).
"""
