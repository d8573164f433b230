"""The fakes of ``tests/fakes.py`` and confluent-kafka's clients fit the Protocols the copy task and ClusterAdmin take.

mypy checks this module (``[tool.mypy] files``): each assignment below is a structural check of a fake,
or of a confluent-kafka class, against :mod:`mirrorspark.kafka.protocols`; the tests check at run time
that every method of each Protocol is there.
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
    FakeTaskConsumer,
    FakeTaskProducer,
)
from mirrorspark.kafka.protocols import (
    AdminLike,
    ConsumerLike,
    DeliveredLike,
    GroupConsumerLike,
    MessageLike,
    ProducerLike,
    SourceConsumerLike,
    TransactionalProducerLike,
)

pytestmark = pytest.mark.unit


def fakes_as_protocols(cluster: FakeCluster) -> list[tuple[object, type]]:
    """Each fake as the Protocol it stands in for (mypy checks every assignment)."""
    admin: AdminLike = FakeAdmin(cluster)
    consumer: ConsumerLike = FakeConsumer(cluster)
    group_reader: GroupConsumerLike = FakeConsumer(cluster, group_id="g")
    task_consumer: SourceConsumerLike = FakeTaskConsumer(cluster)
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
        (Consumer, GroupConsumerLike),
        (Producer, TransactionalProducerLike),
        (Message, MessageLike),
        (Message, DeliveredLike),
    ]:
        assert issubclass(cls, protocol), (cls.__name__, protocol.__name__)
