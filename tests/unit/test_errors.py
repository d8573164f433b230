"""The one exception tree (style.md point 7): one root, unique codes, exit statuses."""

from __future__ import annotations

import inspect
import pickle
import re

import pytest

from mirrorspark import errors
from mirrorspark.errors import ClusterError, ClusterUnreachableError, ConfigError, MirrorsparkError

pytestmark = pytest.mark.unit

EXPORTED: list[type[BaseException]] = [
    obj for name in errors.__all__ if inspect.isclass(obj := getattr(errors, name)) and issubclass(obj, BaseException)
]
UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")


def _ids(classes: list[type[BaseException]]) -> list[str]:
    return [c.__name__ for c in classes]


def _make(cls: type[BaseException], message: str = "what went wrong; how to fix it") -> BaseException:
    return cls(message)


def test_all_is_sorted_and_complete() -> None:
    assert list(errors.__all__) == sorted(errors.__all__)
    defined = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    }
    assert defined == {c.__name__ for c in EXPORTED}
    assert set(errors.__all__) - defined == {"ErrorInfo", "error_from_info"}


@pytest.mark.parametrize("cls", EXPORTED, ids=_ids(EXPORTED))
def test_every_exported_class_derives_from_the_root(cls: type[BaseException]) -> None:
    assert inspect.isclass(cls)
    assert issubclass(cls, MirrorsparkError)
    assert issubclass(cls, Exception)


@pytest.mark.parametrize("cls", EXPORTED, ids=_ids(EXPORTED))
def test_every_class_has_its_own_upper_snake_code(cls: type[MirrorsparkError]) -> None:
    assert "code" in vars(cls), f"{cls.__name__} inherits its parent's code"
    assert isinstance(cls.code, str)
    assert UPPER_SNAKE.match(cls.code), cls.code


def test_codes_are_unique() -> None:
    codes = [cls.code for cls in EXPORTED]  # type: ignore[attr-defined]
    assert len(codes) == len(set(codes)), sorted(codes)


@pytest.mark.parametrize("cls", EXPORTED, ids=_ids(EXPORTED))
def test_exit_codes_are_non_zero_ints(cls: type[MirrorsparkError]) -> None:
    assert type(cls.exit_code) is int
    assert 0 < cls.exit_code < 126  # shell-safe: 126+ mean "not executable", "not found", signals


def test_config_errors_are_value_errors() -> None:
    assert issubclass(ConfigError, ValueError)
    for cls in EXPORTED:
        if issubclass(cls, ConfigError):
            with pytest.raises(ValueError, match="bad"):
                raise cls("bad value")


def test_only_config_errors_are_value_errors() -> None:
    for cls in EXPORTED:
        assert issubclass(cls, ValueError) == issubclass(cls, ConfigError), cls.__name__


@pytest.mark.parametrize("cls", EXPORTED, ids=_ids(EXPORTED))
def test_message_is_the_str(cls: type[MirrorsparkError]) -> None:
    err = _make(cls, "topic t has 3 partitions; raise it to 6")
    assert str(err) == "topic t has 3 partitions; raise it to 6"
    assert err.message == "topic t has 3 partitions; raise it to 6"  # type: ignore[attr-defined]


def test_cluster_errors_carry_kafka_code_and_retriable() -> None:
    plain = ClusterError("describe topics on A failed")
    assert (plain.kafka_code, plain.retriable) == (None, False)
    err = ClusterUnreachableError("no broker of B answered", kafka_code="NETWORK_EXCEPTION", retriable=True)
    assert (err.kafka_code, err.retriable) == ("NETWORK_EXCEPTION", True)
    assert err.code == "CLUSTER_UNREACHABLE"
    assert err.exit_code == ClusterError.exit_code


@pytest.mark.parametrize("cls", EXPORTED, ids=_ids(EXPORTED))
def test_errors_survive_pickling(cls: type[MirrorsparkError]) -> None:
    # Spark ships a task's exception back to the driver pickled.
    err = cls("m", kafka_code="UNKNOWN_TOPIC_OR_PART", retriable=True)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert (str(back), back.code, back.exit_code) == ("m", cls.code, cls.exit_code)
    assert (back.kafka_code, back.retriable) == ("UNKNOWN_TOPIC_OR_PART", True)


# ---------------------------------------------------------------------------------------------
# The tree drawn in the module docstring matches the classes
# ---------------------------------------------------------------------------------------------

_TREE_LINE = re.compile(
    r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w+Error)\b.*?\b(?P<code>[A-Z][A-Z0-9_]+)\b"
    r"(?:\s+exit (?P<exit>\d+))?\s*$"
)


def _docstring_tree() -> list[tuple[int, str, str, int | None]]:
    rows = []
    for line in (errors.__doc__ or "").splitlines():
        m = _TREE_LINE.match(line)
        if m:
            depth = (len(m["indent"]) - 4) // 4
            rows.append((depth, m["name"], m["code"], int(m["exit"]) if m["exit"] else None))
    return rows


def test_docstring_tree_matches_the_classes() -> None:
    rows = _docstring_tree()
    assert sorted(name for _, name, _, _ in rows) == sorted(c.__name__ for c in EXPORTED)
    parents: dict[int, str] = {}
    for depth, name, code, exit_code in rows:
        cls = getattr(errors, name)
        assert cls.code == code, name
        if exit_code is not None:
            assert cls.exit_code == exit_code, name
        if depth == 0:
            assert cls is MirrorsparkError
        else:
            assert getattr(errors, parents[depth - 1]) in cls.__bases__, name
        parents[depth] = name


@pytest.mark.parametrize("cls", EXPORTED, ids=_ids(EXPORTED))
def test_every_error_crosses_spark_as_data(cls: type[MirrorsparkError]) -> None:
    """A copy task's error reaches the driver as an ErrorInfo and is rebuilt as its own class: no text parsed."""
    err = cls("what failed; the fix", kafka_code="TOPIC_AUTHORIZATION_FAILED", retriable=False)
    err.partition = "t-3"
    info = err.info(flow="A->B", task=2)
    assert isinstance(info, errors.ErrorInfo)
    assert (info.code, info.kafka_code, info.flow, info.task, info.partition) == (
        cls.code,
        "TOPIC_AUTHORIZATION_FAILED",
        "A->B",
        2,
        "t-3",
    )
    assert info.fatal  # an authorization failure: no retry can fix it
    back = errors.error_from_info(pickle.loads(pickle.dumps(info)))
    assert type(back) is cls
    assert (back.message, back.kafka_code, back.partition) == (err.message, err.kafka_code, "t-3")
    assert not back.retriable


def test_an_unknown_code_becomes_the_root() -> None:
    back = errors.error_from_info(errors.ErrorInfo("NOT_A_CODE", "m"))
    assert type(back) is MirrorsparkError and back.message == "m" and not back.fatal
