"""A PATH's format detected by content, and its connector configs read.

Detection rules (:func:`read_connect`):

* a file named ``*.properties`` is an mm2.properties file, whatever it holds (the behaviour before connector
  configs were accepted, unchanged);
* a folder: every ``*.yaml``, ``*.yml`` and ``*.json`` file in it (not in subfolders), in name order, each read
  as below, and every ``*.properties`` file holding a Kafka Connect worker's config
  (:func:`~mirrorspark.config.connect.worker.read_worker_properties`; another one is skipped with a warning);
  other files are ignored; a folder without a YAML or JSON file is an error;
* any other file: its documents (YAML, ``---`` separated, or JSON) are connector configs when each is one
  of the shapes of :mod:`~mirrorspark.config.connect.shapes` (or a Kubernetes document of another ``kind``,
  skipped); otherwise a ``*.yaml``/``*.yml``/``*.json`` file is an error naming the accepted shapes and any other
  file is an mm2.properties file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from mirrorspark.config.connect.documents import line_of, load_documents, read_text
from mirrorspark.config.connect.shapes import (
    ACCEPTED_SHAPES,
    ConnectInput,
    is_expand_info,
    is_rest_body,
    kafka_connector,
    make_connector,
    rest_body,
)
from mirrorspark.config.connect.strimzi_mm2 import expand_mirror_maker2
from mirrorspark.config.connect.worker import kafka_connect_worker, read_worker_properties
from mirrorspark.errors import ConfigError

DOCUMENT_SUFFIXES: Final = (".yaml", ".yml", ".json")


def read_connect(path: Path) -> ConnectInput | None:
    """Read the connector configs of a file or folder, or say it is an mm2.properties file.

    Raises ConfigError when nothing readable holds a connector config, a document has no accepted shape, or a
    connector lacks a name or class or has a non-scalar value.
    """
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)
        if not files:
            raise ConfigError(f"folder '{path}' holds no .yaml, .yml or .json file; it must hold {ACCEPTED_SHAPES}")
        found = ConnectInput()
        for file in files:
            if not _read_file(file, found, required=True):
                raise AssertionError("unreachable: a required file is read or refused")
        for file in sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".properties"):
            worker = read_worker_properties(file)
            if worker is None:
                found.warnings.append(
                    f"{file} is no Kafka Connect worker config (no bootstrap.servers and offset.storage.topic); skipped"
                )
            else:
                found.workers.append(worker)
        return found
    if path.suffix.lower() == ".properties":
        return None
    found = ConnectInput()
    return found if _read_file(path, found, required=path.suffix.lower() in DOCUMENT_SUFFIXES) else None


def _read_file(file: Path, found: ConnectInput, *, required: bool) -> bool:
    """Add the file's connectors to ``found``; ``False`` if it holds none of the shapes and is not ``required``."""
    name = str(file)
    docs = load_documents(read_text(file), name)
    shaped = docs is not None and bool(docs) and all(_recognised(d) for d in docs)
    if not shaped:
        if not required:
            return False
        raise ConfigError(_unrecognised(name, docs))
    before = len(found.connectors)
    for number, doc in enumerate(docs or (), start=1):
        _add_document(doc, name, number, found)
    if len(found.connectors) == before:
        found.warnings.append(f"{name} holds no MM2 connector")
    return True


def _unrecognised(name: str, docs: list[Any] | None) -> str:
    if not docs:
        return f"{name} is not valid YAML or JSON, or is empty; it must hold {ACCEPTED_SHAPES}"
    number = next(i for i, d in enumerate(docs, start=1) if not _recognised(d))
    what = f"document {number} of {name}" if len(docs) > 1 else name
    return f"{what} is of no accepted shape; it must hold {ACCEPTED_SHAPES}"


def _recognised(doc: Any) -> bool:
    if isinstance(doc, list):
        return bool(doc) and all(is_rest_body(d) for d in doc)
    if not isinstance(doc, dict):
        return False
    if isinstance(doc.get("kind"), str):
        items = doc.get("items")
        return doc["kind"] != "List" or (isinstance(items, list) and all(_recognised(i) for i in items))
    return is_rest_body(doc) or "connector.class" in doc or is_expand_info(doc)


def _add_document(doc: Any, where: str, number: int, found: ConnectInput) -> None:
    warn: Callable[[str], None] = found.warnings.append
    if isinstance(doc, list):
        for body in doc:
            _add(found, rest_body(body, where, warn))
        return
    kind = doc.get("kind")
    if kind == "KafkaConnector":
        _add(found, kafka_connector(doc, where, warn))
    elif kind == "KafkaMirrorMaker2":
        expand_mirror_maker2(doc, where, found, warn)
    elif kind == "KafkaConnect":
        found.workers.append(kafka_connect_worker(doc, f"{where}: document {number}"))
    elif kind == "List":
        for item in doc["items"]:
            _add_document(item, where, number, found)
    elif isinstance(kind, str):
        warn(f"{where}: document {number}, of kind '{kind}', is not a connector; skipped")
    elif is_rest_body(doc):
        _add(found, rest_body(doc, where, warn))
    elif "connector.class" in doc:
        line = line_of(doc, "name")
        _add(found, make_connector(doc.get("name"), doc["connector.class"], doc, where, "Connect REST", warn, line))
    else:
        for entry in doc.values():
            _add(found, rest_body(entry["info"], where, warn))


def _add(found: ConnectInput, connector: Any) -> None:
    if connector is not None:
        found.connectors.append(connector)


__all__ = ["DOCUMENT_SUFFIXES", "read_connect"]
