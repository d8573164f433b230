"""The replication runtime: MM2's connectors and tasks, with the copy tasks on PySpark.

Three rooms and a driver, cut as Connect cuts them (each imports only the rooms below it):

* ``driver`` (MM2 ``MirrorMaker``): composes the other three, one ``connector.flow.Flow`` per
  enabled replication flow.
* ``worker/`` (Connect's worker and herder; Spark plumbing and leases): ``worker`` (task slots,
  lease grants), ``supervisor`` (a flow's copy tasks run, restarted and stopped; one generation
  per assignment), ``takeover``, ``restart_policy``, ``lease`` and ``lease_window`` (one active
  instance per flow), ``fencing``, ``task_launcher`` (a task as its own Spark job),
  ``grant_server`` (the grants and commands the tasks read) and ``metrics_publisher`` (it reads
  the supervisors).
* ``connector/`` (``MirrorSourceConnector``, ``MirrorCheckpointConnector``,
  ``MirrorHeartbeatConnector``; control logic, no Spark): ``flow`` with its ``topic_sync``,
  ``positions``, ``gap_ledger``, ``task_configs`` (``taskConfigs``) and ``progress_channel``;
  ``live_filters``, ``live_throttle``, ``remote_placement``, ``acl_sync``, ``checkpoint_emitter`` and
  ``group_offset_sync`` (KIP-545), ``heartbeats``, ``failover_watch``, ``totals_publisher``,
  ``schema_figures_publisher``, ``connector_clusters`` and the ``scheduler`` of the control jobs.
* ``task/`` (MM2 ``MirrorSourceTask``; executor side): the copy task's runner with injected
  clients, its two committers, its ``grant_client`` and its ``throttle_gate``; it imports nothing of the
  rooms above.

Its place in the layers: ``pyproject.toml``'s import-linter contracts (``docs/design.md``).
"""
