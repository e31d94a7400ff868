"""A local stand-in for a Langfuse server: records what the Langfuse SDK sends, for assertions.

The SDK (v4+/v5) sends two things, found by reading it (`langfuse/_client/span_processor.py`,
`langfuse/_task_manager/score_consumer.py`):

- spans as OTLP/HTTP protobuf (`ExportTraceServiceRequest`, gzip unless configured otherwise) to
  `POST /api/public/otel/v1/traces`, authenticated with `Basic base64(public_key:secret_key)`;
- scores as a JSON list to `POST /api/public/scores` (answered 202 `{"message": "Accepted"}`).

It also serves the prompts API the SDK's prompt management calls (`langfuse/api/prompts/raw_client.py`):
`GET /api/public/v2/prompts/{name}?label=|version=` (a `TextPrompt`: name, version, prompt, type, config,
labels, tags, commitMessage; 404 when there is none) and `POST /api/public/v2/prompts` (a new version, which
takes the labels it names from older versions, and `latest`). `prompts_down = True` answers every prompt
call 503.

And the datasets, observations and scores APIs `vaulttools eval` calls through the SDK (`get_dataset`,
`create_dataset`, `create_dataset_item`, `run_experiment`, `api.scores.get_many`, `api.observations.get_many`):
`GET /api/public/projects`, `GET|POST /api/public/v2/datasets[/{name}]`, `GET|POST /api/public/dataset-items`,
`GET /api/public/v3/scores` (from the scores received) and `GET /api/public/v2/observations` (from the spans
received), with the JSON shapes of `langfuse/api/*/types/`. Lists come in one page. A dataset run needs no
API of its own: the SDK (v5) has no dataset-run-items client, and `run_experiment` records a run only through
its spans (`langfuse.experiment.*` attributes on `experiment-item-run` and `experiment-item-task`, and on the
spans traced inside them) and the scores it posts; tests read both from what was received.

Anything else is recorded and answered `{}`. Spans are decoded with `opentelemetry-proto` (a dependency of
the SDK's exporter) into plain dicts whose attribute values are Python values (JSON strings stay strings:
`Span.json(key)` decodes one).
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

from tests.loopback_server import LoopbackServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

TRACES_PATH = "/api/public/otel/v1/traces"
SCORES_PATH = "/api/public/scores"
PROMPTS_PATH = "/api/public/v2/prompts"
DATASETS_PATH = "/api/public/v2/datasets"
DATASET_ITEMS_PATH = "/api/public/dataset-items"
PROJECT_ID = "test-project"
_NOW = "2026-01-01T00:00:00.000Z"


def _any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return bytes(value.bytes_value)
    return getattr(value, kind)


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    attributes: dict[str, Any]
    status_code: int
    scope_name: str
    scope_attributes: dict[str, Any]

    def json(self, key: str, default: Any = None) -> Any:
        """The attribute `key` decoded from JSON (Langfuse serialises input/output/metadata as JSON)."""
        raw = self.attributes.get(key)
        if raw is None:
            return default
        if not isinstance(raw, str):
            return raw
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw

    @property
    def observation_type(self) -> str | None:
        return self.attributes.get("langfuse.observation.type")


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes  # the decompressed body as sent
    at: float = field(default_factory=time.monotonic)


class LangfuseCollector(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.received: list[Received] = []
        self.spans: list[Span] = []
        self.scores: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        #: every version of every prompt, by name (the prompts API)
        self.prompts: dict[str, list[dict[str, Any]]] = {}
        self.prompts_down = False
        #: datasets by name, and their items (in insertion order, upserted by id)
        self.datasets: dict[str, dict[str, Any]] = {}
        self.dataset_items: dict[str, dict[str, dict[str, Any]]] = {}

    # -- datasets API -------------------------------------------------------------------------------
    def add_dataset(self, name: str, description: str | None = None, metadata: Any = None) -> dict[str, Any]:
        with self._changed:
            if name not in self.datasets:
                self.datasets[name] = {
                    "id": f"ds-{len(self.datasets) + 1}", "name": name, "description": description,
                    "metadata": metadata, "projectId": PROJECT_ID, "createdAt": _NOW, "updatedAt": _NOW,
                }  # fmt: skip
                self.dataset_items[name] = {}
            return dict(self.datasets[name])

    def add_dataset_item(self, dataset: str, input: Any, expected_output: Any = None, metadata: Any = None,  # noqa: A002
                         id: str | None = None, source_trace_id: str | None = None) -> dict[str, Any]:  # noqa: A002
        ds = self.add_dataset(dataset)
        with self._changed:
            items = self.dataset_items[dataset]
            item_id = id or f"item-{dataset}-{len(items) + 1}"
            items[item_id] = {
                "id": item_id, "status": "ACTIVE", "input": input, "expectedOutput": expected_output,
                "metadata": metadata, "sourceTraceId": source_trace_id, "sourceObservationId": None,
                "datasetId": ds["id"], "datasetName": dataset, "createdAt": _NOW, "updatedAt": _NOW,
                "mediaReferences": [],
            }  # fmt: skip
            self._changed.notify_all()
            return dict(items[item_id])

    def _scores_v3(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        name = query.get("name", [None])[0]
        value = query.get("value", [None])[0]
        out = []
        for i, score in enumerate(list(self.scores)):
            if name is not None and score.get("name") != name:
                continue
            if value is not None and float(score.get("value", "nan")) != float(value):
                continue
            data_type = score.get("dataType") or "NUMERIC"
            trace = score.get("traceId")
            out.append({
                "id": score.get("id") or f"score-{i}", "projectId": PROJECT_ID, "name": score.get("name"),
                "source": "API", "timestamp": _NOW, "environment": "default", "createdAt": _NOW, "updatedAt": _NOW,
                "dataType": data_type, "value": bool(score["value"]) if data_type == "BOOLEAN" else float(score["value"]),
                "subject": {"kind": "trace", "id": trace} if trace else None,
            })  # fmt: skip
        return out

    def _observations_v2(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        name = query.get("name", [None])[0]
        trace = query.get("traceId", [None])[0]
        out = []
        for span in list(self.spans):
            if (name is not None and span.name != name) or (trace is not None and span.trace_id != trace):
                continue
            out.append({
                "id": span.span_id, "traceId": span.trace_id, "startTime": _NOW, "projectId": PROJECT_ID,
                "parentObservationId": span.parent_span_id, "type": (span.observation_type or "span").upper(),
                "name": span.name, "isRootObservation": span.parent_span_id is None,
                "input": span.attributes.get("langfuse.observation.input"),
                "output": span.attributes.get("langfuse.observation.output"),
                "tags": list(span.attributes.get("langfuse.trace.tags") or []),
            })  # fmt: skip
        return out

    # -- prompts API --------------------------------------------------------------------------------
    def add_prompt(self, name: str, text: str, labels: list[str] | None = None, config: Any = None, commit_message: str | None = None) -> dict[str, Any]:
        """A new version of prompt `name`, as `POST /api/public/v2/prompts` makes it."""
        with self._changed:
            versions = self.prompts.setdefault(name, [])
            labels = list(dict.fromkeys([*(labels or []), "latest"]))
            for old in versions:  # a label is on one version at a time
                old["labels"] = [lab for lab in old["labels"] if lab not in labels]
            prompt = {
                "name": name, "version": len(versions) + 1, "prompt": text, "type": "text",
                "config": config if config is not None else {}, "labels": labels, "tags": [],
                "commitMessage": commit_message,
            }  # fmt: skip
            versions.append(prompt)
            self._changed.notify_all()
            return dict(prompt)

    def prompt_fetches(self, name: str) -> list[Received]:
        return [r for r in list(self.received) if r.method == "GET" and r.path.split("?", 1)[0] == f"{PROMPTS_PATH}/{name}"]

    def _find_prompt(self, name: str, query: dict[str, list[str]]) -> dict[str, Any] | None:
        with self._lock:
            versions = list(self.prompts.get(name, []))
        if "version" in query:
            wanted = int(query["version"][0])
            return next((dict(p) for p in versions if p["version"] == wanted), None)
        label = query.get("label", ["production"])[0]
        return next((dict(p) for p in versions if label in p["labels"]), None)


    # -- queries ------------------------------------------------------------------------------------
    def wait_for(self, predicate: Callable[[LangfuseCollector], bool], timeout: float = 10.0) -> bool:
        """Wait until `predicate(self)` holds (checked on every delivery); False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.2))
        return True

    def spans_named(self, name: str) -> list[Span]:
        return [s for s in list(self.spans) if s.name == name]

    def trace(self, trace_id: str) -> list[Span]:
        return [s for s in list(self.spans) if s.trace_id == trace_id]

    def scores_for(self, trace_id: str) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in list(self.scores) if s.get("traceId") == trace_id}

    def all_payload_text(self) -> str:
        """Every received body, decoded as text (protobuf bodies keep their strings readable)."""
        return "\n".join(r.raw.decode("utf-8", "replace") for r in list(self.received))

    # -- recording ----------------------------------------------------------------------------------
    def _record(self, rec: Received, spans: list[Span], scores: list[dict[str, Any]]) -> None:
        with self._changed:
            self.received.append(rec)
            self.spans.extend(spans)
            self.scores.extend(scores)
            self._changed.notify_all()


def decode_spans(body: bytes) -> list[Span]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[Span] = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            scope_attrs = {kv.key: _any_value(kv.value) for kv in scope.attributes}
            for s in scope_spans.spans:
                spans.append(
                    Span(
                        name=s.name,
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex() or None,
                        attributes={kv.key: _any_value(kv.value) for kv in s.attributes},
                        status_code=int(s.status.code),
                        scope_name=scope.name,
                        scope_attributes=scope_attrs,
                    )
                )
    return spans


class _Handler(BaseHTTPRequestHandler):
    owner: LangfuseCollector
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in separate writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
        return raw

    def _json(self, status: int, payload: Any) -> None:
        self._reply(status, json.dumps(payload).encode(), "application/json")

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        rec = Received("POST", self.path, dict(self.headers), body)
        path = self.path.split("?", 1)[0]
        if path in (DATASETS_PATH, DATASET_ITEMS_PATH):
            self.owner._record(rec, [], [])
            try:
                req = json.loads(body)
                if path == DATASETS_PATH:
                    made = self.owner.add_dataset(req["name"], req.get("description"), req.get("metadata"))
                else:
                    made = self.owner.add_dataset_item(
                        req["datasetName"], req.get("input"), req.get("expectedOutput"), req.get("metadata"),
                        req.get("id"), req.get("sourceTraceId"),
                    )  # fmt: skip
            except (json.JSONDecodeError, KeyError, TypeError):
                self._json(400, {"message": "bad request"})
                return
            self._json(200, made)
            return
        if path == PROMPTS_PATH:
            self.owner._record(rec, [], [])
            if self.owner.prompts_down:
                self._json(503, {"message": "unavailable"})
                return
            try:
                req = json.loads(body)
                created = self.owner.add_prompt(req["name"], req["prompt"], req.get("labels"), req.get("config"), req.get("commitMessage"))
            except (json.JSONDecodeError, KeyError, TypeError):
                self._json(400, {"message": "bad prompt"})
                return
            self._json(200, created)
            return
        if path == TRACES_PATH:
            try:
                spans = decode_spans(body)
            except Exception:  # noqa: BLE001 - a bad body is a test failure to report, not a crash
                self.owner._record(rec, [], [])
                self._reply(400, b"", "application/x-protobuf")
                return
            self.owner._record(rec, spans, [])
            self._reply(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")
            return
        if path == SCORES_PATH:
            try:
                items = json.loads(body)
            except json.JSONDecodeError:
                items = []
            scores = [s for s in (items if isinstance(items, list) else [items]) if isinstance(s, dict)]
            self.owner._record(rec, [], scores)
            self._reply(202, b'{"message": "Accepted"}', "application/json")
            return
        self.owner._record(rec, [], [])
        self._reply(200, b"{}", "application/json")

    def do_GET(self) -> None:  # noqa: N802
        self.owner._record(Received("GET", self.path, dict(self.headers), b""), [], [])
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        owner = self.owner
        if parts.path == "/api/public/projects":
            self._json(200, {"data": [{"id": PROJECT_ID, "name": "test", "organization": {"id": "org", "name": "org"}, "metadata": {}}]})
            return
        if parts.path.startswith(DATASETS_PATH + "/"):
            found = owner.datasets.get(unquote(parts.path[len(DATASETS_PATH) + 1 :]))
            self._json(200, found) if found else self._json(404, {"message": "Dataset not found"})
            return
        if parts.path == DATASET_ITEMS_PATH:
            items = list(owner.dataset_items.get(query.get("datasetName", [""])[0], {}).values())
            self._json(200, {"data": items, "meta": {"page": 1, "limit": max(len(items), 1), "totalItems": len(items), "totalPages": 1}})
            return
        if parts.path == "/api/public/v3/scores":
            scores = owner._scores_v3(query)
            self._json(200, {"data": scores, "meta": {"limit": max(len(scores), 1), "cursor": None}})
            return
        if parts.path == "/api/public/v2/observations":
            self._json(200, {"data": owner._observations_v2(query), "meta": {"cursor": None}})
            return
        if parts.path.startswith(PROMPTS_PATH + "/"):
            if self.owner.prompts_down:
                self._json(503, {"message": "unavailable"})
                return
            found = self.owner._find_prompt(unquote(parts.path[len(PROMPTS_PATH) + 1 :]), query)
            if found is None:
                self._json(404, {"message": "Prompt not found", "error": "LangfuseNotFoundError"})
                return
            self._json(200, found)
            return
        self._reply(200, b"{}", "application/json")


LangfuseCollector.handler = _Handler
