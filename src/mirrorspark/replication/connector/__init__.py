"""The connectors: a flow's control logic, with no Spark in it.

MM2's ``MirrorSourceConnector`` (``flow`` and its parts), ``MirrorCheckpointConnector``
(``checkpoint_emitter``, ``group_offset_sync``) and ``MirrorHeartbeatConnector`` (``heartbeats``); ``plan``
says what they would write now, from their own computations (``mirrorspark plan``).
Layer rule: no ``pyspark``, ``py4j`` or :mod:`mirrorspark.spark_session`, and nothing of
:mod:`mirrorspark.replication.worker`, which runs the copy tasks.
"""
