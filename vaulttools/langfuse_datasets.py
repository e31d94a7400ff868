"""`vaulttools eval` with Langfuse datasets (docs/service.md, "Evaluation datasets in Langfuse").

- `--langfuse-dataset NAME`: the dataset's items are questions; the bot's own retrieval
  (grasbot/answer/pipeline.py, as `vaulttools eval FILE.yaml` runs it) answers each, the same table is
  printed, and the run is recorded in Langfuse as a dataset run (the SDK's `run_experiment`), each item
  scored `hit@5` (where it expects notes) and `grounded` (1 when the retrieval's grounded verdict is the
  one expected).
- `--langfuse-dataset NAME --answers`: the same, and each item is also answered by the service itself
  (vaulttools/answering.py: generation through the configured LLM, then the answer verifier); the service's
  `ask` trace of the answer, with its generation, runs inside the item's trace, and the item is scored
  `faithfulness` (the service's value, absent when the answer states no fact), `grounded` (the verified
  decision, 0/1) and `hit@5` (items that expect notes). An item whose answer failed (the LLM down or
  erring) keeps its `hit@5`, has the error as its output, and no answer score.
- `--export-dataset NAME FILE.yaml`: the items of a local question set become dataset items (the dataset
  is created when it does not exist).
- `--export-dataset NAME --from-traces --score user_feedback=1` (or `--tag grounded`): the questions of the
  traces that carry that score (or tag) become dataset items, linked to their trace.

An item's `input` is `{"q": "..."}` (or a plain string), its `expected_output` `{"expect": [ids],
"grounded": bool}` and its `metadata` may hold `kind` and `id`, as in a local question set
(vaulttools/evaluation.py).

The Langfuse SDK is imported only here, and only when one of these options is used: a lint-only install
needs no Langfuse (a clear message says what to install otherwise). The SDK reads LANGFUSE_PUBLIC_KEY,
LANGFUSE_SECRET_KEY and LANGFUSE_BASE_URL (or LANGFUSE_HOST) from the environment, as the service does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from vaulttools.commands._common import CliError

if TYPE_CHECKING:
    from vaulttools.answering import AnswerReport, AnswerResult
    from vaulttools.evaluation import Question, Report

#: The rank an item must reach for `hit@5` (vaulttools/evaluation.py's DEPTH).
HIT_SCORE = "hit@5"
#: Traces looked at per page when exporting from traces, and at most this many pages.
PAGE = 100
MAX_PAGES = 50


def client() -> Any:
    """A Langfuse client from the environment; CliError when the SDK is missing or Langfuse is not configured."""
    try:
        from langfuse import Langfuse
    except ImportError:
        raise CliError("the Langfuse options need the Langfuse SDK: pip install 'grasbot[serve]' (or pip install langfuse)") from None
    missing = [
        name
        for name, value in (
            ("LANGFUSE_PUBLIC_KEY", os.environ.get("LANGFUSE_PUBLIC_KEY")),
            ("LANGFUSE_SECRET_KEY", os.environ.get("LANGFUSE_SECRET_KEY")),
            ("LANGFUSE_BASE_URL", os.environ.get("LANGFUSE_BASE_URL") or os.environ.get("LANGFUSE_HOST")),
        )
        if not (value or "").strip()
    ]
    if missing:
        raise CliError(f"Langfuse is not configured: set {', '.join(missing)}")
    return Langfuse(base_url=(os.environ.get("LANGFUSE_BASE_URL") or os.environ.get("LANGFUSE_HOST") or "").strip())


def _failure(what: str, error: Exception) -> CliError:
    status = getattr(error, "status_code", None)
    if status == 404:
        return CliError(f"{what}: Langfuse has no such dataset")
    return CliError(f"{what}: Langfuse answered {f'HTTP {status}' if status else type(error).__name__}")


# -- items <-> questions ------------------------------------------------------------------------------
def question_of(item: Any, position: int) -> Question:
    """A dataset item as a question of a local set; CliError naming the item when it cannot be one."""
    from vaulttools.evaluation import Question

    label = f"dataset item {getattr(item, 'id', position)}"
    raw = item.input
    q = raw.get("q", raw.get("question")) if isinstance(raw, dict) else raw
    if not isinstance(q, str) or not q.strip():
        raise CliError(f"{label}: `input` must be a question: a string or {{\"q\": \"...\"}}")
    expected = item.expected_output
    if isinstance(expected, dict):
        expect, grounded = expected.get("expect", []), expected.get("grounded")
    else:
        expect, grounded = expected, None
    if expect is None:
        expect = []
    if isinstance(expect, str):
        expect = [expect]
    if not isinstance(expect, list) or not all(isinstance(e, str) for e in expect):
        raise CliError(f"{label}: `expected_output.expect` must be a list of note ids")
    if grounded is None:
        grounded = bool(expect)
    if not isinstance(grounded, bool):
        raise CliError(f"{label}: `expected_output.grounded` must be true or false")
    meta = item.metadata if isinstance(item.metadata, dict) else {}
    kind = meta.get("kind") if isinstance(meta.get("kind"), str) else None
    # the local set's id when the item came from one (what a local eval shows), else the item's
    qid = meta.get("id") if isinstance(meta.get("id"), (str, int)) and not isinstance(meta.get("id"), bool) else item.id
    return Question(str(qid), q.strip(), tuple(expect), grounded, kind)


def item_of(question: Question) -> dict[str, Any]:
    """A local question as the fields of a dataset item (`create_dataset_item`)."""
    metadata: dict[str, Any] = {"id": question.id}
    if question.kind:
        metadata["kind"] = question.kind
    return {
        "input": {"q": question.q},
        "expected_output": {"expect": list(question.expect), "grounded": question.grounded},
        "metadata": metadata,
    }


# -- a dataset run ------------------------------------------------------------------------------------
def dataset_questions(langfuse: Any, name: str) -> tuple[Any, list[Question]]:
    """The dataset `name` and its items as questions (in the dataset's order)."""
    try:
        dataset = langfuse.get_dataset(name)
    except Exception as error:  # noqa: BLE001 - the SDK's errors: one line
        raise _failure(f"--langfuse-dataset {name}", error) from None
    questions = [question_of(item, i) for i, item in enumerate(dataset.items, 1)]
    if not questions:
        raise CliError(f"--langfuse-dataset {name}: the dataset has no item")
    return dataset, questions


def _expected(expected_output: Any) -> tuple[list[str], bool]:
    """(expected note ids, expected grounded verdict) of an item's `expected_output`."""
    expected = expected_output if isinstance(expected_output, dict) else {"expect": expected_output or []}
    expect = expected.get("expect") or []
    expect = [expect] if isinstance(expect, str) else list(expect)
    return expect, expected.get("grounded", bool(expect))


def _hit(output: dict[str, Any], expect: list[str]) -> Any:
    """The `hit@5` score of an item that expects notes: is one of them in the retrieval's first five."""
    from langfuse import Evaluation

    hit = any(note in expect for note in output["results"][:5])
    return Evaluation(name=HIT_SCORE, value=float(hit), data_type="NUMERIC", comment=f"rank {output['rank']}")


def record_run(dataset: Any, report: Report, run_name: str, metadata: dict[str, Any]) -> Any:
    """Record `report` (already computed by the real pipeline) as a run of `dataset`: one trace per item with
    the retrieved ids as its output, scored `hit@5` (items that expect notes) and `grounded`."""
    from langfuse import Evaluation

    # the report's items are in the dataset's order (dataset_questions)
    by_item = {item.id: result for item, result in zip(dataset.items, report.items, strict=True)}

    def task(*, item: Any, **_: Any) -> dict[str, Any]:
        result = by_item[item.id]
        return {"results": result.results[:5], "grounded": result.grounded, "rank": result.rank}

    def scores(*, input: Any, output: dict[str, Any], expected_output: Any = None, metadata: Any = None, **_: Any) -> list[Evaluation]:  # noqa: A002
        del input, metadata
        expect, want_grounded = _expected(expected_output)
        out = [Evaluation(name="grounded", value=float(output["grounded"] == want_grounded), data_type="NUMERIC")]
        if expect:
            out.append(_hit(output, expect))
        return out

    return dataset.run_experiment(
        name="vaulttools eval", run_name=run_name, task=task, evaluators=[scores], metadata=metadata, max_concurrency=4
    )


def record_answer_run(
    dataset: Any, report: Report, answer: Callable[[Question], AnswerResult], run_name: str, metadata: dict[str, Any]
) -> tuple[Any, AnswerReport]:
    """Run `dataset` as a dataset run whose task is the service's answer (`answer`, a
    `vaulttools.answering.ServiceAnswerer`'s): the answer's `ask` trace runs inside the item's trace, so the
    run's item is linked to the trace of its generation. Each item is scored `faithfulness`, `grounded` (the
    verified decision) and `hit@5` (from `report`, the retrieval of the same questions). Items are answered
    one at a time, in the dataset's order (a local LLM answers one question at a time anyway)."""
    from langfuse import Evaluation

    from vaulttools.answering import AnswerReport, AnswerResult

    by_item = {item.id: result for item, result in zip(dataset.items, report.items, strict=True)}
    answers: dict[str, AnswerResult] = {}

    def task(*, item: Any, **_: Any) -> dict[str, Any]:
        retrieved = by_item[item.id]
        result = answer(retrieved.question)
        answers[item.id] = result
        out = {"results": retrieved.results[:5], "rank": retrieved.rank, **result.as_json()}
        del out["trace_id"]  # it is this item's trace
        return out

    def scores(*, input: Any, output: dict[str, Any], expected_output: Any = None, metadata: Any = None, **_: Any) -> list[Evaluation]:  # noqa: A002
        del input, metadata
        expect, _ = _expected(expected_output)
        out = [_hit(output, expect)] if expect else []
        if output["status"] == "failed":
            return out  # no answer to score: the output says why
        if output["faithfulness"] is not None:
            out.append(Evaluation(name="faithfulness", value=float(output["faithfulness"]), data_type="NUMERIC",
                                  comment=f"status {output['status']}"))  # fmt: skip
        out.append(Evaluation(name="grounded", value=float(bool(output["grounded"])), data_type="BOOLEAN"))
        return out

    result = dataset.run_experiment(
        name="vaulttools eval --answers", run_name=run_name, task=task, evaluators=[scores], metadata=metadata, max_concurrency=1
    )
    missing = "the dataset run did not run this item (see the Langfuse SDK's log)"
    return result, AnswerReport([
        answers.get(item.id) or AnswerResult(retrieved.question, "failed", error=missing)
        for item, retrieved in zip(dataset.items, report.items, strict=True)
    ])  # fmt: skip


# -- exports ------------------------------------------------------------------------------------------
def ensure_dataset(langfuse: Any, name: str) -> None:
    """Create the dataset `name` unless it exists."""
    try:
        langfuse.get_dataset(name)
        return
    except Exception as error:  # noqa: BLE001
        if getattr(error, "status_code", None) != 404:
            raise _failure(f"--export-dataset {name}", error) from None
    try:
        langfuse.create_dataset(name=name, description="GrasBot questions (vaulttools eval --export-dataset)")
    except Exception as error:  # noqa: BLE001
        raise _failure(f"--export-dataset {name}", error) from None


def export_questions(langfuse: Any, name: str, questions: Sequence[Question], source_traces: Sequence[str | None] = ()) -> int:
    """Add `questions` to the dataset `name` (created if needed); `source_traces` link items to their traces.
    Each item's id is derived from the dataset and the question's id, so exporting again updates, never doubles."""
    import hashlib

    ensure_dataset(langfuse, name)
    traces = list(source_traces) or [None] * len(questions)
    for question, trace in zip(questions, traces, strict=True):
        item_id = hashlib.blake2b(f"{name}\0{question.id}".encode(), digest_size=12).hexdigest()
        try:
            langfuse.create_dataset_item(dataset_name=name, id=item_id, source_trace_id=trace, **item_of(question))
        except Exception as error:  # noqa: BLE001
            raise _failure(f"--export-dataset {name}: item {question.id}", error) from None
    langfuse.flush()
    return len(questions)


def questions_from_traces(langfuse: Any, score: str | None, tag: str | None) -> tuple[list[Question], list[str]]:
    """The questions of the `ask` traces that carry `score` (`name=value`) or `tag`, oldest first, and their
    trace ids. A question asked in several traces is taken once; the answers of `vaulttools eval --answers`
    (tagged `vaulttools-eval`) are no visitor's questions and are left out."""
    from vaulttools.answering import EVAL_TAG
    from vaulttools.evaluation import Question

    wanted: list[str] = []
    if score is not None:
        name, sep, value = score.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise CliError(f"--score {score!r}: expected NAME=VALUE, e.g. user_feedback=1")
        cursor = None
        for _ in range(MAX_PAGES):
            try:
                page = langfuse.api.scores.get_many(name=name.strip(), value=value.strip(), fields="subject", limit=PAGE, cursor=cursor)
            except Exception as error:  # noqa: BLE001
                raise _failure("--from-traces", error) from None
            for found in page.data:
                subject = getattr(found, "subject", None)
                trace = getattr(subject, "trace_id", None) or (getattr(subject, "id", None) if getattr(subject, "kind", "") == "trace" else None)
                if trace and trace not in wanted:
                    wanted.append(trace)
            cursor = getattr(page.meta, "cursor", None) if getattr(page, "meta", None) else None
            if not cursor:
                break
    questions: list[Question] = []
    traces: list[str] = []
    seen: set[str] = set()
    for trace_id, query, tags in _ask_traces(langfuse, wanted if score is not None else None):
        if (tag is not None and tag not in tags) or EVAL_TAG in tags:
            continue
        key = " ".join(query.split()).casefold()
        if key in seen:
            continue
        seen.add(key)
        questions.append(Question(f"trace-{trace_id}", query, (), True, "from-traces"))
        traces.append(trace_id)
    return questions, traces


def _ask_traces(langfuse: Any, trace_ids: list[str] | None) -> list[tuple[str, str, list[str]]]:
    """(trace id, question, tags) of the `ask` root observations: of `trace_ids`, or of every trace."""
    out: list[tuple[str, str, list[str]]] = []
    targets: list[str | None] = list(trace_ids) if trace_ids is not None else [None]
    for trace_id in targets:
        cursor = None
        for _ in range(MAX_PAGES):
            try:
                page = langfuse.api.observations.get_many(
                    name="ask", trace_id=trace_id, fields="core,basic,io,trace_context", limit=PAGE, cursor=cursor
                )
            except Exception as error:  # noqa: BLE001
                raise _failure("--from-traces", error) from None
            for obs in page.data:
                raw = getattr(obs, "input", None)
                if isinstance(raw, str):  # the v2 observations API gives input and output as raw JSON text
                    try:
                        raw = json.loads(raw)
                    except json.JSONDecodeError:
                        raw = None
                query = raw.get("query") if isinstance(raw, dict) else None
                tid = getattr(obs, "trace_id", None)
                if isinstance(query, str) and query.strip() and tid:
                    out.append((tid, query.strip(), list(getattr(obs, "tags", None) or [])))
            cursor = getattr(getattr(page, "meta", None), "cursor", None)
            if not cursor:
                break
    return out


# -- the command --------------------------------------------------------------------------------------
def run_langfuse(args: Any, show_report: Callable[..., int]) -> int:
    """`vaulttools eval --langfuse-dataset NAME` or `--export-dataset NAME ...` (see the module's docstring);
    `show_report` prints a retrieval report as a local eval does (vaulttools/commands/eval.py's)."""
    import sys
    from datetime import datetime, timezone

    from vaulttools.commands._common import load_pipeline, vault_path
    from vaulttools.evaluation import QuestionSetError, evaluate, load_questions, unknown_expectations
    from vaulttools.words import count

    if args.langfuse_dataset and args.export_dataset:
        raise CliError("--langfuse-dataset and --export-dataset go one at a time")
    if args.export_dataset:
        if args.from_traces:
            if args.file:
                raise CliError("--from-traces takes its questions from Langfuse: give no FILE.yaml")
            if not (args.score or args.tag):
                raise CliError("--from-traces needs --score NAME=VALUE or --tag TAG (which traces to take)")
        elif not args.file:
            raise CliError("--export-dataset NAME needs a question set FILE.yaml, or --from-traces")
        questions: list[Question] = []
        if not args.from_traces:
            try:
                questions = load_questions(args.file)
            except QuestionSetError as exc:
                raise CliError(str(exc)) from None
        langfuse = client()
        try:
            traces: list[str] = []
            if args.from_traces:
                questions, traces = questions_from_traces(langfuse, args.score, args.tag)
                if not questions:
                    print("vaulttools eval: no trace matches: nothing exported", file=sys.stderr)
                    return 0
            exported = export_questions(langfuse, args.export_dataset, questions, traces)
        finally:
            langfuse.shutdown()
        print(f"exported {count(exported, 'item')} to the Langfuse dataset {args.export_dataset}")
        return 0

    if args.file:
        raise CliError("--langfuse-dataset takes its questions from Langfuse: give no FILE.yaml")
    from vaulttools.answering import service_settings

    # Read even without --answers: what a run records leaves the machine, so the service's own private folders
    # and tags (GRASBOT_PRIVATE_*) hide the same notes here as they do for a visitor. Before anything is asked
    # of Langfuse: a bad variable is said first.
    settings = service_settings()
    root = vault_path(args)
    langfuse = client()
    answers = None
    try:
        dataset, questions = dataset_questions(langfuse, args.langfuse_dataset)
        pipeline = load_pipeline(root, "nothing to evaluate", privacy=settings.privacy())
        for question, note in unknown_expectations(questions, set(pipeline.index.ids)):
            print(f"vaulttools eval: warning: dataset item {question.id}: expects `{note}`, which is no public note of {root}", file=sys.stderr)
        evaluate(questions[:3], pipeline.search)  # warm the stem cache, as a local eval does
        report = evaluate(questions, pipeline.search)
        stamp = datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
        metadata: dict[str, Any] = {"vault": str(root), "public_notes": pipeline.index.size}
        if not args.answers:
            run_name = args.run_name or f"retrieval {stamp}"
            result = record_run(dataset, report, run_name, metadata)
        else:
            from vaulttools.answering import ServiceAnswerer

            run_name = args.run_name or f"answers {stamp}"
            metadata |= {"llm_backend": settings.llm_backend, "model": settings.llm_model, "verify_policy": settings.verify_policy}
            # the service is stopped (its traces flushed) before the SDK's client is shut down below
            with ServiceAnswerer(root, settings) as answerer:
                result, answers = record_answer_run(dataset, report, answerer.answer, run_name, metadata)
    finally:
        langfuse.shutdown()
    code = show_report(args, f"Langfuse dataset {args.langfuse_dataset}", root, report, pipeline.index.size, answers)
    recorded = len(getattr(result, "item_results", []) or [])
    failed = f", {count(len(answers.failures), 'answer')} failed" if answers is not None and answers.failures else ""
    print(f"dataset run {run_name!r} recorded in Langfuse: {count(recorded, 'item')} scored{failed}", file=sys.stderr)
    return code
