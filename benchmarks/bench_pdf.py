"""PDF import benchmark: `vaulttools import pdf` on each real book, whole process, against pymupdf4llm.

    python benchmarks/bench_pdf.py                 # the three books of ../shared/corpora/pdf, 5 runs each
    python benchmarks/bench_pdf.py --quick         # 3 runs
    python benchmarks/bench_pdf.py --no-pymupdf    # ours only

What is timed, each figure the median of fresh processes (interpreter start and imports count, as for a
user who runs the command):

- ours: `vaulttools import pdf BOOK --vault EMPTY --copy-pdf` into a new empty vault: reading (pypdfium2),
  structure, printed pages, Markdown, writing every note. Target: ≤ 3 s for 200 pages, ≤ 6 s for 400
  (15 ms a page);
- pymupdf4llm's `to_markdown(BOOK, page_chunks=True)` on the same file in the same run, as the textbook seed
  does it (page chunks only: no sections, no notes written). It is AGPL: installed by the `bench` extra
  only, never a dependency of the project.

Beside the times: sections found, PDF pages, where printed pages came from, and for pymupdf4llm the pages
whose chunk has no heading at all (the seed's "metadata lost on the next page").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _util  # noqa: E402

CORPORA = Path(os.environ.get("GRASBOT_CORPORA") or _util.REPO.parent / "shared" / "corpora")
BOOKS = ("formation-latex-ul.pdf", "Apprends_LaTeX.pdf", "fbook.pdf")
SECONDS_PER_PAGE = 3.0 / 200  # ≤ 3 s for 200 pages, ≤ 6 s for 400

OURS = """
import json, shutil, tempfile, time
start = time.perf_counter()
from vaulttools.cli import main
vault = tempfile.mkdtemp(prefix="bench-pdf-")
try:
    import io, contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["import", "pdf", {path!r}, "--vault", vault, "--copy-pdf", "--json", "--visibility", "public"])
    assert status == 0, status
    summary = json.loads(out.getvalue())[0]
    report(sections=summary["sections"], pages=summary["pages"], page_source="+".join(summary["page_source"]),
           structure=summary["structure"], elapsed=time.perf_counter() - start)
finally:
    shutil.rmtree(vault, ignore_errors=True)
"""

THEIRS = """
import re, time
start = time.perf_counter()
import pymupdf4llm
chunks = pymupdf4llm.to_markdown({path!r}, page_chunks=True, show_progress=False)
no_heading = sum(1 for c in chunks if not re.search(r"(?m)^#{{1,6}} ", c["text"]))
bold_headings = sum(len(re.findall(r"(?m)^#{{1,6}} .*\\*\\*", c["text"])) for c in chunks)
report(pages=len(chunks), no_heading=no_heading, bold_headings=bold_headings, elapsed=time.perf_counter() - start)
"""


def _has_pymupdf4llm() -> bool:
    try:
        _util.run_once("import pymupdf4llm; pymupdf4llm.to_markdown")
        return True
    except _util.BenchmarkError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser(__doc__.splitlines()[0])
    parser.add_argument("--no-pymupdf", action="store_true", help="skip the pymupdf4llm comparison")
    args = parser.parse_args(argv)
    runs = _util.runs_for(args)
    books = [CORPORA / "pdf" / name for name in BOOKS if (CORPORA / "pdf" / name).is_file()]
    if not books:
        _util.note(f"no real book in {CORPORA / 'pdf'}: nothing to measure")
        return _util.SKIPPED
    theirs_ok = not args.no_pymupdf and _has_pymupdf4llm()
    if not args.no_pymupdf and not theirs_ok:
        _util.note("pymupdf4llm is not installed (pip install -e '.[bench]'): ours only")
    rows = []
    raw: dict[str, object] = {}
    for book in books:
        ours = _util.measure(f"import {book.name}", OURS.format(path=str(book)), runs, timeout=300)
        pages = int(ours.metric("pages"))
        target = SECONDS_PER_PAGE * pages
        row = [
            book.name,
            str(pages),
            f"{ours.metric('sections')} ({ours.metric('structure')})",
            str(ours.metric("page_source")),
            _util.fmt_spread(ours),
            _util.fmt_seconds(ours.median("cpu")),
            f"≤ {target:.1f} s: {_util.verdict(ours.median(), target)}",
        ]
        raw[book.name] = {"ours": ours.as_dict()}
        if theirs_ok:
            theirs = _util.measure(f"pymupdf4llm {book.name}", THEIRS.format(path=str(book)), runs, timeout=600)
            row += [
                _util.fmt_spread(theirs),
                _util.fmt_ratio(_util.ratio(theirs.median(), ours.median())),
                f"{theirs.metric('no_heading')}/{theirs.metric('pages')}",
            ]
            raw[book.name]["pymupdf4llm"] = theirs.as_dict()  # type: ignore[index]
        rows.append(row)
    columns = ["book", "pages", "sections", "printed pages", "ours (wall)", "ours (CPU)", "target"]
    if theirs_ok:
        columns += ["pymupdf4llm page chunks", "ratio", "chunks without heading"]
    _util.print_table(
        "vaulttools import pdf, whole process, vs pymupdf4llm page chunks (same files, same run)",
        columns,
        rows,
        notes=[f"median of {runs} fresh processes (min–max); ratio = pymupdf4llm / ours", _util.machine()],
    )
    _util.write_json(args.json, "pdf", {"runs": runs, "books": raw})
    return 0


if __name__ == "__main__":
    sys.exit(main())
