"""The dashboard's static files: shipped in the package, served at ``/`` without a token, out of OpenAPI."""

from __future__ import annotations

import re
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mirrorspark.config.parse import parse_config
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Store

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
STATIC = files("mirrorspark.service") / "static"
SHIPPED = ("index.html", "dashboard.css", "dashboard.js", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css")


def client(token: str = "") -> TestClient:
    config = parse_config({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"})
    return TestClient(create_app(Store("B"), config, token=token))


def test_the_files_are_package_data() -> None:
    for name in SHIPPED:
        assert (STATIC / name).is_file(), name
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["mirrorspark"]
    shipped_dirs = {g.rsplit("/", 1)[0] for g in globs if g.endswith("/*")}
    for name in SHIPPED:
        assert ("service/static/" + name).rsplit("/", 1)[0] in shipped_dirs, name
    vendored = (STATIC / "vendor" / "uPlot.iife.min.js").read_text()
    assert vendored.startswith("/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
    assert "MIT License" in (STATIC / "vendor" / "uPlot.LICENSE").read_text()


def test_the_page_and_its_files_are_served_without_a_token() -> None:
    c = client(token="t0k")
    page = c.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    refs = re.findall(r'(?:src|href)="(static/[^"]+)"', page.text)
    assert sorted(refs) == sorted(f"static/{n}" for n in SHIPPED if n != "index.html")
    for ref in refs:
        r = c.get("/" + ref)
        assert r.status_code == 200 and r.content == (STATIC / ref.removeprefix("static/")).read_bytes(), ref
    assert "javascript" in c.get("/static/dashboard.js").headers["content-type"]
    assert c.get("/static/nope.js").status_code == 404
    links = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert not [u for u in links if "//" in u and not u.startswith("data:")], "no file from elsewhere"
    health = c.get("/api/v1/health").json()
    assert health["token_required"] is True and client().get("/api/v1/health").json()["token_required"] is False
    assert c.get("/api/v1/clusters").status_code == 401  # the data stays behind the token


def test_the_dashboard_is_not_in_the_openapi_document() -> None:
    paths = client().get("/openapi.json").json()["paths"]
    assert "/" not in paths and not any(p.startswith("/static") for p in paths)


def test_the_page_reads_only_the_documented_api() -> None:
    script = (STATIC / "dashboard.js").read_text()
    used = set(re.findall(r'api\((?:base \+ )?"([a-z/-]+)', script))
    assert used == {
        "health",
        "clusters",
        "replications",
        "gaps",
        "drills",
        "verifications",
        "topics",
        "groups",
        "metrics/record-count",
        "metrics/replication-lag-records",
        "metrics/replication-latency-ms",
    }, used
    assert "localStorage" not in script  # the token lives in the tab's sessionStorage only
