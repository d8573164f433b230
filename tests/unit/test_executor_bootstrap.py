"""The copy tasks reach the clusters at other addresses than the driver (``mirrorspark.executor.*``)."""

from __future__ import annotations

import pytest

from fakes import two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.replication.connector.flow import Flow

pytestmark = pytest.mark.unit

GRANT_ADDRESS = ("127.0.0.1", 1, "token")


def test_the_copy_tasks_use_the_executor_bootstrap_servers_and_the_driver_the_clusters_own() -> None:
    """A driver that reaches the target through another network (or listener) than its executors."""
    cfg, a, _b, clients = two_clusters(
        "A->B.mirrorspark.executor.target.bootstrap.servers = b-direct:9093\n"
        "mirrorspark.executor.source.bootstrap.servers = a-direct:9093\n"
        "A->B.offset-syncs.topic.location = target\n"
    )
    a.create_topic("orders", 1)
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()  # the driver's own clients: the fakes answer only at a:9092 and b:9092
    [task] = flow.task_specs(1, GRANT_ADDRESS)
    assert task.consumer_conf["bootstrap.servers"] == "a-direct:9093"
    assert task.producer_conf["bootstrap.servers"] == "b-direct:9093"
    assert task.commit_conf["bootstrap.servers"] == "b-direct:9093"
    assert task.syncs_conf is not None and task.syncs_conf["bootstrap.servers"] == "b-direct:9093"


def test_unset_the_copy_tasks_use_the_clusters_bootstrap_servers() -> None:
    cfg, a, _b, clients = two_clusters()
    a.create_topic("orders", 1)
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    [task] = flow.task_specs(1, GRANT_ADDRESS)
    assert task.consumer_conf["bootstrap.servers"] == "a:9092"
    assert (task.producer_conf["bootstrap.servers"], task.commit_conf["bootstrap.servers"]) == ("b:9092", "b:9092")
    assert task.syncs_conf is not None and task.syncs_conf["bootstrap.servers"] == "a:9092"
