"""Prometheus HTTP API reader for the fleet view: a handful of GET queries, answers parsed defensively."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.http import GetOnlyClient, Login
from pgtop_ha.collect.transport import Verify
from pgtop_ha.judge.fleet import Sample, Series
from pgtop_ha.models.text import clean, fit
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.models.urls import host_of, redact

MAX_SERIES = 200_000  # per answer: more is refused rather than built into rows
_MAX_LABEL = 200  # characters kept of a label value
_THREAD_BYTES = 256 * 1024


class PrometheusError(Exception):
    """Prometheus could not be asked or answered badly; the message is one clean line."""


class _Labels:
    """Cleans label names and values once per answer: they repeat (a scope per aggregate, a few names)."""

    def __init__(self) -> None:
        self._seen: dict[Any, str] = {}

    def text(self, value: Any) -> str:
        if not isinstance(value, str):
            return ""
        done = self._seen.get(value)
        if done is None:
            done = self._seen[value] = clean(value)[:_MAX_LABEL]
        return done

    def of(self, metric: dict[Any, Any]) -> dict[str, str]:
        text = self.text
        return {text(k): text(v) for k, v in metric.items()}


def _number(value: Any) -> float | None:
    """A sample value ("1", "NaN", "+Inf") as a finite float, else None."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def warnings_of(body: bytes) -> tuple[str, ...]:
    """What the engine says is partial or doubtful in a successful answer (Prometheus and Thanos
    ``warnings``, VictoriaMetrics ``isPartial``), a few cleaned lines."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return ()
    if not isinstance(doc, dict):
        return ()
    found = doc.get("warnings")
    said = [fit(clean(str(w)), 200) for w in found[:3]] if isinstance(found, list) else []
    if doc.get("isPartial") is True:
        said.append("partial answer (isPartial)")
    return tuple(said)


def _result(body: bytes) -> list[Any]:
    """The answer's ``data.result`` list (empty when absent), refused beyond MAX_SERIES series."""
    result = _data(body).get("result")
    if not isinstance(result, list):
        return []
    if len(result) > MAX_SERIES:
        raise PrometheusError(f"answer has {len(result)} series (over {MAX_SERIES}); narrow the query")
    return result


def parse_vector(body: bytes) -> tuple[Sample, ...]:
    """An instant-query answer (resultType vector) as samples; malformed entries are skipped."""
    result = _result(body)
    samples: list[Sample] = []
    labels = _Labels()
    for item in result:
        if not isinstance(item, dict):
            continue
        metric = item.get("metric")
        value = item.get("value")
        if not isinstance(metric, dict) or not isinstance(value, list) or len(value) != 2:
            continue
        number = _number(value[1])
        if number is None:
            continue
        samples.append(Sample(labels.of(metric), number))
    return tuple(samples)


def parse_matrix(body: bytes) -> tuple[Series, ...]:
    """A range-query answer (resultType matrix) as series of (time, value) points."""
    result = _result(body)
    out: list[Series] = []
    labels = _Labels()
    for item in result:
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            continue
        values = item.get("values")
        if not isinstance(values, list):
            continue
        points: list[tuple[float, float]] = []
        for pair in values:
            if isinstance(pair, list) and len(pair) == 2:
                at, number = _number(pair[0]), _number(pair[1])
                if at is not None and number is not None:
                    points.append((at, number))
        out.append(Series(labels.of(item["metric"]), tuple(points)))
    return tuple(out)


# VictoriaMetrics quotes the whole query before its reason: the reason alone fits one line.
_ECHOED_QUERY = re.compile(r'^error when executing query=".*" on the time range \([^)]*\): ', re.S)


def _data(body: bytes) -> Mapping[str, Any]:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise PrometheusError("answer is not JSON (is the URL Prometheus's?)") from None
    if not isinstance(doc, dict):
        raise PrometheusError("answer is not a Prometheus API document")
    if doc.get("status") != "success":
        error = _ECHOED_QUERY.sub("", clean(str(doc.get("error", "no reason given"))), count=1)
        raise PrometheusError(f"query failed: {fit(error, 200)}")
    data = doc.get("data")
    return data if isinstance(data, dict) else {}


def parse_scrape_interval(body: bytes) -> float | None:
    """global.scrape_interval from /api/v1/status/config (a YAML text), in seconds, if found."""
    try:
        doc = json.loads(body)
        yaml = doc["data"]["yaml"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    if not isinstance(yaml, str):
        return None
    in_global = False
    for line in yaml.splitlines():
        if not line.startswith(" "):
            in_global = line.strip() == "global:"
            continue
        key, _, value = line.strip().partition(":")
        if in_global and key == "scrape_interval":
            return duration_seconds(value.strip())
    return None


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, "y": 31536000.0}


def duration_seconds(text: str) -> float | None:
    """A Prometheus duration (5s, 1m30s, 6h) in seconds; None when it is not one."""
    total, number = 0.0, ""
    i = 0
    if not text:
        return None
    while i < len(text):
        ch = text[i]
        if ch.isdigit():
            number += ch
            i += 1
            continue
        unit = text[i : i + 2] if text[i : i + 2] == "ms" else ch
        if not number or unit not in _UNITS:
            return None
        total += int(number) * _UNITS[unit]
        number = ""
        i += len(unit)
    return None if number else total


@dataclass(frozen=True)
class FleetAnswers:
    """What one refresh read: the samples of each fleet query, by query name, and the bytes."""

    vectors: Mapping[str, tuple[Sample, ...]]
    bytes_read: int = 0
    warnings: tuple[str, ...] = ()


class PrometheusReader:
    """GET-only reader of one Prometheus: instant and range queries, nothing else."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 5.0,
        verify: Verify = True,
        allowed_hosts: tuple[str, ...] = (),
        client: GetOnlyClient | None = None,
        login: Login | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        refusal = HostPolicy.of(allowed_hosts).refusal(host_of(self.base_url))
        if refusal is not None:
            raise PrometheusError(f"prometheus URL {redact(self.base_url)} refused: {refusal}")
        self._client = client or GetOnlyClient(timeout=timeout, verify=verify, login=login)

    async def _get(self, path: str, params: Mapping[str, str]) -> bytes:
        url = f"{self.base_url}{path}?{urlencode(params)}"
        try:
            response = await self._client.get(url)
        except httpx.HTTPError as exc:
            reason = clean(str(exc))[:200] or type(exc).__name__
            raise PrometheusError(f"prometheus {redact(self.base_url)}: {reason}") from None
        if response.status_code >= 400 and response.status_code not in (400, 422):
            raise PrometheusError(f"prometheus {redact(self.base_url)}: HTTP {response.status_code}")
        return response.content

    async def query(self, promql: str) -> tuple[Sample, ...]:
        """An instant query (/api/v1/query)."""
        return (await self._query(promql))[0]

    async def _query(self, promql: str, at: float | None = None) -> tuple[tuple[Sample, ...], bytes]:
        params = {"query": promql} if at is None else {"query": promql, "time": f"{at:.3f}"}
        body = await self._get("/api/v1/query", params)
        if len(body) < _THREAD_BYTES:
            return parse_vector(body), body
        # A large answer is parsed in a thread: a screen sharing the loop keeps answering keys
        # (the GIL is handed over every few ms).
        return await asyncio.to_thread(parse_vector, body), body

    async def query_range(self, promql: str, start: float, end: float, step: float) -> tuple[Series, ...]:
        """A range query (/api/v1/query_range)."""
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        return parse_matrix(await self._get("/api/v1/query_range", params))

    async def scrape_interval(self) -> float | None:
        """The global scrape interval Prometheus runs with, if it says."""
        try:
            return parse_scrape_interval(await self._get("/api/v1/status/config", {}))
        except PrometheusError:
            return None

    async def fleet(self, queries: FleetQueries) -> FleetAnswers:
        """One refresh in two rounds, whatever the fleet's size: every cluster counted and the
        worst named, then those clusters' rows (their series alone)."""
        first = queries.first()
        # Each round's queries at once: the server evaluates them side by side. Recorded series are
        # read at their evaluation's instant, so a read never mixes two evaluations' writes.
        at = queries.evaluated_at
        rounds = list(await asyncio.gather(*(self._query(q, at) for q in first.values())))
        out = {name: samples for name, (samples, _) in zip(first, rounds, strict=True)}
        named = [s.labels.get(queries.scope_label, "") for s in out["worst"]]
        # topk's answer is bounded by the query; an engine that answers more is cut to it.
        scopes = list(dict.fromkeys(s for s in named if s))[: queries.limit]
        details = await asyncio.gather(*(self._query(q) for q in queries.detail(scopes)))
        out["fleet"] = tuple(sample for samples, _ in details for sample in samples)
        rounds += details
        warned: list[str] = []
        for _, body in rounds:
            warned += [w for w in warnings_of(body) if w not in warned]
        return FleetAnswers(out, sum(len(body) for _, body in rounds), tuple(warned[:3]))

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()
