"""MirrorMaker 2's concepts as pure code: no I/O, no confluent-kafka, no PySpark.

Replication policies (``policy``), internal topic names, filters, the binary formats of MM2's internal topics
(``records``), Connect source offsets and their KIP-875 edits, offset-sync emission and MM2's ``OffsetSyncStore``,
copied ranges and translation, checkpoint rules, topic config sync, replication hops and cycles (``topology``),
metrics. mirrorspark's own rules are :mod:`mirrorspark.core`. May import only :mod:`mirrorspark.errors`.
"""
