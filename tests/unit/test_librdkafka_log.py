"""librdkafka's log in Python logging: every client gets a summarising logger, never raw stderr lines."""

from __future__ import annotations

import logging
import pickle

import pytest

from mirrorspark.kafka.factory import LIBRDKAFKA_LOGGER, LibrdkafkaLog, client_conf, with_logger

pytestmark = pytest.mark.unit

FAIL = "%s [%s] %s"


def test_the_first_of_each_distinct_line_is_logged_once_then_repeats_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    log = LibrdkafkaLog("A->B|mirrorspark|replication-source-admin")
    with caplog.at_level(logging.DEBUG, logger=LIBRDKAFKA_LOGGER):
        for ms in (0, 3, 12, 101):  # the same failure, another duration each time
            log.log(
                logging.ERROR, FAIL, "FAIL", "rk#producer-1", f"127.0.0.1:1/bootstrap: Connect failed (after {ms}ms)"
            )
        log.log(logging.ERROR, FAIL, "FAIL", "rk#producer-1", "127.0.0.1:1/bootstrap: 1/1 brokers are down")
        log.log(logging.INFO, FAIL, "CGRPOP", "rk#consumer-2", "coordinator load in progress")
    records = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LIBRDKAFKA_LOGGER]
    assert [lvl for lvl, _ in records] == [
        logging.WARNING,
        logging.DEBUG,
        logging.DEBUG,
        logging.DEBUG,
        logging.WARNING,
        logging.INFO,
    ]
    assert records[0][1] == "FAIL [rk#producer-1] 127.0.0.1:1/bootstrap: Connect failed (after 0ms)"
    assert records[3][1].endswith("(4 times)")


def test_warning_level_applications_see_one_line_per_problem(caplog: pytest.LogCaptureFixture) -> None:
    log = LibrdkafkaLog("c")
    with caplog.at_level(logging.WARNING, logger=LIBRDKAFKA_LOGGER):
        for i in range(200):
            log.log(
                logging.ERROR, FAIL, "FAIL", "rk", f"Connect to ipv4#127.0.0.1:1 failed (after {i}ms in state CONNECT)"
            )
    assert len([r for r in caplog.records if r.name == LIBRDKAFKA_LOGGER]) == 1


def test_with_logger_keeps_a_given_logger_and_task_confs_stay_plain() -> None:
    conf = client_conf({"bootstrap.servers": "a:9092"}, "A->B|mirrorspark|replication-consumer")
    assert "logger" not in conf  # task configurations are pickled to executors: no logger in them
    pickle.dumps(conf)
    given = logging.getLogger("mine")
    assert with_logger({"logger": given}, "x")["logger"] is given
    assert isinstance(with_logger({}, "x")["logger"], LibrdkafkaLog)
