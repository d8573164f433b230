"""The replication runtime: MM2's connectors and tasks, with the data path on PySpark.

The driver (``driver``: MM2 ``MirrorMaker``), one flow's driver-side runtime (``flow``:
``MirrorSourceConnector``), the plain value types of a batch (``tasks``), the executor side
of the data path (``copy``) and its Spark side (``datapath``), heartbeats (``heartbeats``),
checkpoints and group offset sync (``checkpoints``: ``MirrorCheckpointTask``, KIP-545), live
allow and deny lists (``control``), topic ACL sync (``acls``), lifetime progress
(``progress``), the scheduler of periodic control work (``scheduler``) and the flows' state
read from the clusters (``status``).

Layer rule: may import :mod:`mirrorspark.client` and every layer below it; only
:mod:`mirrorspark.cli` imports it (the migration tools are built on the client layer).
"""
