"""The fakes of ``tests/fakes.py`` and confluent-kafka's clients fit the Protocols the copy task and ClusterAdmin take.

mypy checks this module (``[tool.mypy] files``): each assignment below is a structural check of a fake,
or of a confluent-kafka class, against :mod:`mirrorspark.kafka.protocols`; the tests check at run time
that every method of each Protocol is there. The same for the Schema Registry: :class:`FakeRegistry` and
:class:`~mirrorspark.registry.RegistryClient` against :class:`SchemaRegistryLike`.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Message, Producer
from confluent_kafka.admin import AdminClient

from fakes import (
    FakeAdmin,
    FakeCluster,
    FakeConsumer,
    FakeDelivered,
    FakeErrorMessage,
    FakeMessage,
    FakeProducer,
    FakeRecord,
    FakeRegistry,
    FakeTaskConsumer,
    FakeTaskProducer,
)
from mirrorspark.config.schema_registry import SchemaRegistrySettings
from mirrorspark.core.schemas.registry import SchemaRegistryLike
from mirrorspark.kafka.protocols import (
    AdminLike,
    ConsumerLike,
    DeliveredLike,
    GroupConsumerLike,
    MessageLike,
    ProducerLike,
    RangeConsumerLike,
    SourceConsumerLike,
    TransactionalProducerLike,
)
from mirrorspark.registry import RegistryClient

pytestmark = pytest.mark.unit


def fakes_as_protocols(cluster: FakeCluster) -> list[tuple[object, type]]:
    """Each fake as the Protocol it stands in for (mypy checks every assignment)."""
    admin: AdminLike = FakeAdmin(cluster)
    consumer: ConsumerLike = FakeConsumer(cluster)
    group_reader: GroupConsumerLike = FakeConsumer(cluster, group_id="g")
    task_consumer: SourceConsumerLike = FakeTaskConsumer(cluster)
    range_consumer: RangeConsumerLike = FakeConsumer(cluster)
    producer: ProducerLike = FakeProducer(cluster)
    data: TransactionalProducerLike = FakeTaskProducer(cluster, transactional_id="t-0")
    message: MessageLike = FakeMessage("t", 0, 0, FakeRecord(b"k", b"v"))
    error: MessageLike = FakeErrorMessage("t", 0, 1)
    delivered: DeliveredLike = FakeDelivered("t", 0, 0, 0)
    return [
        (admin, AdminLike),
        (consumer, ConsumerLike),
        (group_reader, GroupConsumerLike),
        (task_consumer, SourceConsumerLike),
        (range_consumer, RangeConsumerLike),
        (producer, ProducerLike),
        (data, TransactionalProducerLike),
        (message, MessageLike),
        (error, MessageLike),
        (delivered, DeliveredLike),
    ]


def real_clients_as_protocols(
    admin: AdminClient, consumer: Consumer, producer: Producer, message: Message
) -> tuple[AdminLike, SourceConsumerLike, GroupConsumerLike, TransactionalProducerLike, MessageLike, DeliveredLike]:
    """confluent-kafka's clients as the Protocols (mypy checks them against its stubs, ``cimpl.pyi``)."""
    return admin, consumer, consumer, producer, message, message


def test_every_fake_offers_every_method_of_its_protocol() -> None:
    for fake, protocol in fakes_as_protocols(FakeCluster("A")):
        assert isinstance(fake, protocol), (type(fake).__name__, protocol.__name__)


def test_confluent_kafka_clients_offer_every_method_of_their_protocols() -> None:
    for cls, protocol in [
        (AdminClient, AdminLike),
        (Consumer, SourceConsumerLike),
        (Consumer, RangeConsumerLike),
        (Consumer, GroupConsumerLike),
        (Producer, TransactionalProducerLike),
        (Message, MessageLike),
        (Message, DeliveredLike),
    ]:
        assert issubclass(cls, protocol), (cls.__name__, protocol.__name__)


def registries_as_protocol() -> list[SchemaRegistryLike]:
    """The fake registry and the real adapter as the Protocol schema replication takes (mypy checks them)."""
    fake: SchemaRegistryLike = FakeRegistry()
    real: SchemaRegistryLike = RegistryClient(SchemaRegistrySettings(urls=("http://127.0.0.1:1",), properties={}))
    return [fake, real]


def test_the_fake_registry_and_the_adapter_offer_every_member_of_the_protocol() -> None:
    members = {n for n in vars(SchemaRegistryLike) if not n.startswith("_")}
    assert members >= {"name", "schema", "register", "compatibility"}
    for registry in registries_as_protocol():
        assert members <= set(dir(registry)), (type(registry).__name__, members - set(dir(registry)))
