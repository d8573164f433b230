"""The replication runtime: MM2's connectors and tasks, with the copy tasks on PySpark.

Driver side, cut as MM2 cuts it: the driver (``driver``: MM2 ``MirrorMaker``) holds one
``flow.Flow`` per replication flow, composed of its topic sync (``topic_sync``: the control half
of ``MirrorSourceConnector``), its positions and gap checks (``positions``, the ledger writer
``gap_ledger``), its copy tasks' configurations (``task_configs``: ``taskConfigs``) and the reader
of its progress channel (``progress_channel``). Connect's worker: ``worker`` (task slots, lease
grants), ``supervisor`` (a flow's copy tasks run, restarted and stopped; one generation per
assignment), ``task_channel`` (commands to the tasks), ``lease`` (one active instance per flow).
Control jobs on the driver's ``scheduler``: ``acl_sync``, ``checkpoint_emitter``
(``MirrorCheckpointConnector``/``Task``) and ``group_offset_sync`` (KIP-545), ``heartbeats``,
``live_filters`` (``srm-control``'s lists), ``failover_watch``, ``metrics_publisher``,
``totals_publisher``, ``remote_placement``.

Executor side: ``task`` (MM2 ``MirrorSourceTask``): the copy task's runner with injected clients
and its two committers; it imports nothing of the driver side.

Its place in the layers: ``pyproject.toml``'s import-linter contracts (``docs/design.md``).
"""
