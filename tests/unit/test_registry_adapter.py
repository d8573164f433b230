"""RegistryClient's error mapping, defaults and pickling, without a registry.

confluent-kafka's client is replaced by stubs raising its errors; two tests use the loopback: a closed port (a
refused connection) and a tiny HTTP server answering 503 or 400 (retries).
"""

from __future__ import annotations

import pickle
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError as ConfluentError

from mirrorspark.config.schema_registry import SchemaRegistrySettings
from mirrorspark.core.schemas.registry import SchemaReference, SchemaText
from mirrorspark.errors import SchemaRegistryError, SchemaSubjectConflictError
from mirrorspark.registry import CLIENT_DEFAULTS, RegistryClient

pytestmark = pytest.mark.unit

URL = "http://registry.example:8081/apis/ccompat/v7"
SECRET = "pa55-w0rd-xyz"
TOKEN = "tok-3e9f-secret"


def settings(*urls: str, **properties: str) -> SchemaRegistrySettings:
    return SchemaRegistrySettings(urls=urls or (URL,), properties=properties)


def raising(error: Exception) -> Callable[..., Any]:
    def call(*_: Any, **__: Any) -> Any:
        raise error

    return call


def stubbed(**methods: Callable[..., Any]) -> RegistryClient:
    return RegistryClient(settings(), alias="east", client=SimpleNamespace(**methods))  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unknown_id_is_none_and_has_no_versions() -> None:
    missing = ConfluentError(404, 40403, "Schema 7 not found.")
    client = stubbed(get_schema=raising(missing), get_schema_versions=raising(missing))
    assert client.schema(7) is None
    assert client.versions_of(7) == []


def test_an_unknown_subject_has_no_versions_and_holds_nothing() -> None:
    missing = ConfluentError(404, 40401, "Subject 'x' not found.")
    client = stubbed(get_versions=raising(missing), lookup_schema=raising(missing))
    assert client.versions("x") == []
    assert client.lookup("x", SchemaText('"string"')) is None
    no_schema = stubbed(lookup_schema=raising(ConfluentError(404, 40403, "does not match")))
    assert no_schema.lookup("x", SchemaText('"string"')) is None


def test_a_list_of_versions_cut_at_apicurios_page_is_completed_up_to_the_latest() -> None:
    client = stubbed(
        get_versions=lambda subject: list(range(1, 501)),
        get_version=lambda subject, version: SimpleNamespace(version=503 if version == "latest" else version),
    )
    assert client.versions("s") == list(range(1, 504))
    assert stubbed(get_versions=lambda subject: [1, 3]).versions("s") == [1, 3]  # a short list is complete


def test_a_404_without_a_registry_error_code_is_an_error_naming_the_url_key() -> None:
    client = stubbed(get_schema=raising(ConfluentError(404, -1, "Unknown Schema Registry Error: b'<html>'")))
    with pytest.raises(SchemaRegistryError) as e:
        client.schema(7)
    assert "'east.schema.registry.url'" in str(e.value)
    assert "/apis/ccompat/v7" in str(e.value)
    assert not e.value.retriable


def test_a_missing_version_is_an_error_naming_subject_and_version() -> None:
    client = stubbed(get_version=raising(ConfluentError(404, 40402, "Version 9 not found.")))
    with pytest.raises(SchemaRegistryError, match=r"version 9 of subject 'orders-value'.*40402") as e:
        client.version("orders-value", 9)
    assert URL in str(e.value)


def test_a_409_on_register_is_a_subject_conflict_naming_subject_and_registry() -> None:
    client = stubbed(register_schema=raising(ConfluentError(409, 409, "Incompatible artifact: orders-value")))
    with pytest.raises(SchemaSubjectConflictError) as e:
        client.register("orders-value", SchemaText('"string"'))
    assert "'orders-value'" in str(e.value)
    assert URL in str(e.value)
    assert e.value.fatal


def test_a_5xx_is_retriable_and_a_4xx_is_not() -> None:
    failing = stubbed(get_subjects=raising(ConfluentError(503, 50003, "overloaded")))
    with pytest.raises(SchemaRegistryError, match="HTTP 503") as e:
        failing.subjects()
    assert e.value.retriable and not e.value.fatal
    invalid = stubbed(register_schema=raising(ConfluentError(422, 42201, "Invalid schema")))
    with pytest.raises(SchemaRegistryError, match="42201") as e:
        invalid.register("s", SchemaText("{"))
    assert type(e.value) is SchemaRegistryError
    assert not e.value.retriable


def test_a_refused_credential_names_the_keys_to_check() -> None:
    client = stubbed(get_subjects=raising(ConfluentError(401, 40101, "Unauthorized")))
    with pytest.raises(SchemaRegistryError, match=r"'east\.schema\.registry\.basic\.auth\.user\.info'"):
        client.subjects()


def test_a_closed_port_fails_fast_retriable_and_masks_the_urls_credentials() -> None:
    url = f"http://alice:{SECRET}@127.0.0.1:{free_port()}/apis/ccompat/v7"
    client = RegistryClient.from_settings(settings(url), alias="east")
    started = time.monotonic()
    with pytest.raises(SchemaRegistryError) as e:
        client.subjects()
    assert time.monotonic() - started < 5
    message = str(e.value)
    assert SECRET not in message and "alice" not in message
    assert "http://******@127.0.0.1" in message
    assert "is the registry running" in message and "'east.schema.registry.url'" in message
    assert e.value.retriable
    assert SECRET not in client.name and SECRET not in repr(client)
    client.close()


def test_no_secret_of_the_settings_reaches_a_message() -> None:
    secrets = settings(**{"basic.auth.user.info": f"bob:{SECRET}", "bearer.auth.token": TOKEN})
    echo = f"rejected bob:{SECRET} and {SECRET} and Bearer {TOKEN} from http://u:{SECRET}@h:1"
    for error in (ConfluentError(500, 50001, echo), ConnectionError(echo), ValueError(echo)):
        client = RegistryClient(secrets, client=SimpleNamespace(get_subjects=raising(error)))  # type: ignore[arg-type]
        with pytest.raises(SchemaRegistryError) as e:
            client.subjects()
        assert SECRET not in str(e.value) and TOKEN not in str(e.value), str(e.value)
        assert "******" in str(e.value)


def test_compatibility_is_none_unless_the_subject_has_a_level_of_its_own() -> None:
    def level(answer: str, in_force: str) -> RegistryClient:
        rest = SimpleNamespace(get=lambda path, query: {"compatibilityLevel": in_force})
        return stubbed(get_compatibility=lambda subject: answer, _rest_client=rest)

    unset = ConfluentError(404, 40408, "Subject 's' does not have subject-level compatibility configured")
    assert stubbed(get_compatibility=raising(unset)).compatibility("s") is None  # Confluent
    assert stubbed(get_compatibility=raising(ConfluentError(404, 40401, "no subject"))).compatibility("s") is None
    assert level("FULL", "FULL").compatibility("s") == "FULL"
    assert level("NONE", "BACKWARD").compatibility("s") is None  # Apicurio: unset, the global level differs
    assert level("NONE", "NONE").compatibility("s") == "NONE"  # explicit, or unset under a global NONE


def test_schemas_and_references_convert_both_ways() -> None:
    ref = SchemaReference("ex.Address", "ex.Address", 1)
    sent: list[Schema] = []

    def register(subject: str, schema: Schema) -> int:
        sent.append(schema)
        return 42

    answer = Schema('{"type":"record"}', None, [_confluent_ref(ref)])
    registered = RegisteredSchema(schema_id=42, guid=None, schema=answer, subject="p", version=3)
    client = stubbed(register_schema=register, get_schema=lambda i: answer, get_version=lambda s, v: registered)
    assert client.register("p", SchemaText('{"type":"record"}', "AVRO", (ref,))) == 42
    assert (sent[0].schema_type, [r.name for r in sent[0].references or ()]) == ("AVRO", ["ex.Address"])
    assert client.schema(42) == SchemaText('{"type":"record"}', "AVRO", (ref,))  # no type in the answer: Avro
    assert client.version("p", 3) == (42, SchemaText('{"type":"record"}', "AVRO", (ref,)))


def _confluent_ref(ref: SchemaReference) -> Any:
    from confluent_kafka.schema_registry import SchemaReference as ConfluentReference

    return ConfluentReference(ref.name, ref.subject, ref.version)


def test_defaults_fill_only_what_the_settings_leave_unset() -> None:
    client = RegistryClient.from_settings(settings(**{"max.retries": "1", "timeout": "3"}))
    rest = client._sr()._rest_client
    assert (rest.max_retries, rest.timeout) == (1, 3)
    assert (rest.retries_wait_ms, rest.retries_max_wait_ms) == (
        CLIENT_DEFAULTS["retries.wait.ms"],
        CLIENT_DEFAULTS["retries.max.wait.ms"],
    )
    client.close()
    client.close()  # idempotent


def test_it_is_cheap_to_build_and_pickles_as_its_settings() -> None:
    client = RegistryClient.from_settings(settings(f"http://u:{SECRET}@h:1"), alias="east")
    assert client._client is None  # nothing built before the first call
    copy = pickle.loads(pickle.dumps(client))
    assert isinstance(copy, RegistryClient)
    assert (copy.name, copy._url_key, copy._client) == (client.name, client._url_key, None)
    assert copy.name == "http://******@h:1"


class _Answer(BaseHTTPRequestHandler):
    status = 503
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        body = b'{"error_code": 50003, "message": "busy"}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[tuple[str, type[_Answer]]]:
    handler = type("Handler", (_Answer,), {"hits": 0})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_a_5xx_is_retried_a_few_short_times_and_a_4xx_not(answering: tuple[str, type[_Answer]]) -> None:
    url, handler = answering
    client = RegistryClient.from_settings(settings(url))
    started = time.monotonic()
    with pytest.raises(SchemaRegistryError, match="HTTP 503"):
        client.subjects()
    assert handler.hits == 1 + CLIENT_DEFAULTS["max.retries"]
    assert time.monotonic() - started < 3
    handler.status, handler.hits = 400, 0
    with pytest.raises(SchemaRegistryError, match="HTTP 400"):
        client.subjects()
    assert handler.hits == 1
    client.close()
