"""Report formats (text, json, github, sarif) and the command line's exit codes and options."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema

from vaulttools.lint.urls import rule_url
import pytest

from grasbot.vault import Vault
from vaulttools.cli import main
from vaulttools.lint import LintConfig, lint_vault, render
from vaulttools.lint.diagnostics import Diagnostic, Severity
from vaulttools.lint.engine import LintResult
from vaulttools.lint.formats.github import escape_data, escape_property
from vaulttools.lint.registry import RULE_NAMES
from vaulttools.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lint"
TAXO_VAULT = FIXTURES / "taxo-vault"
SARIF_SCHEMA = FIXTURES / "sarif-2.1.0-rtm.5.json"  # see tests/fixtures/lint/README.md


@pytest.fixture(scope="module")
def result() -> LintResult:
    vault = Vault.load(TAXO_VAULT)
    return lint_vault(vault, load_taxonomy(TAXO_VAULT / "TAXONOMIE.md"), LintConfig())


def lint_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_has_exactly_the_design_shape(result):
    data = json.loads(render(result, "json"))
    # DESIGN's keys, in order, and `notices` (added after them: what the text report says as `note:` lines)
    assert list(data) == ["version", "vault", "notes", "diagnostics", "summary", "notices"]
    assert data["notices"] == result.notices
    assert data["version"] == 1 and data["notes"] == 11 and data["vault"] == str(result.root)
    assert set(data["summary"]) == {"error", "warning"}
    assert data["summary"]["error"] == sum(1 for d in data["diagnostics"] if d["severity"] == "error")
    for d in data["diagnostics"]:
        # DESIGN's keys, in order, and `url` (added: the rule's documentation; readers of the old shape ignore it)
        assert list(d) == ["path", "line", "column", "end_line", "end_column", "rule", "url", "severity", "message", "fix"]
        assert d["url"] == rule_url(d["rule"]) and d["url"].endswith("docs/rules.md#" + d["rule"])
        assert d["rule"] in RULE_NAMES and d["severity"] in ("error", "warning")
        assert d["fix"] is None or set(d["fix"]) == {"message", "applicability"}
    assert any(d["fix"] for d in data["diagnostics"])


def test_text_lines_grouped_with_summary(result):
    text = render(result, "text", cwd=TAXO_VAULT)
    lines = text.splitlines()
    assert "projets/docker-notes.md:5:19: error unknown-domain `IA` is not in the closed list" in text
    assert lines[-1].startswith(f"Found {result.summary['error']} errors and {result.summary['warning']} warnings in {len({d.path for d in result.diagnostics})} of {result.notes} notes checked")
    # grouped: one blank line after each file's block, and each file appears in one block only
    paths = [l.split(":", 1)[0] for l in lines[:-1] if l and not l.startswith("note:")]
    blocks = [p for i, p in enumerate(paths) if i == 0 or paths[i - 1] != p]
    assert len(blocks) == len(set(blocks))
    coloured = render(result, "text", color=True, cwd=TAXO_VAULT)
    assert "\x1b[" in coloured and "unknown-domain" in coloured


def test_github_annotations_escape():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    diag = Diagnostic("dir, x/n:1.md", 3, 4, 3, 9, "broken-link", Severity.ERROR, "50% broken\nsee: here")
    res = LintResult(root=Path("/v"), notes=1, diagnostics=[diag])
    out = render(res, "github", cwd=Path("/v"))
    assert out == "::error file=dir%2C x/n%3A1.md,line=3,col=4,endLine=3,endColumn=9,title=broken-link::50%25 broken%0Asee: here\n"


def test_sarif_validates_against_the_schema(result):
    data = json.loads(render(result, "sarif", cwd=TAXO_VAULT))
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(data)
    run = data["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(RULE_NAMES)
    assert all(r["help"]["text"] and r["defaultConfiguration"]["level"] in ("error", "warning")
               for r in run["tool"]["driver"]["rules"])
    assert len(run["results"]) == len(result.diagnostics)
    first = run["results"][0]
    assert run["tool"]["driver"]["rules"][first["ruleIndex"]]["id"] == first["ruleId"]
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == result.diagnostics[0].path
    # an invalid document is rejected by the same validator (the check can fail)
    data["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(data)


def test_exit_codes(capsys, tmp_path):
    code, out, _ = lint_cli(capsys, str(TAXO_VAULT), "--no-cache")
    assert code == 1 and "error" in out
    code, _, _ = lint_cli(capsys, str(TAXO_VAULT), "--no-cache", "--exit-zero")
    assert code == 0
    code, out, _ = lint_cli(capsys, str(TAXO_VAULT), "--no-cache", "--select", "alias-duplicate,ambiguous-link")
    assert code == 0 and "alias-duplicate" in out and "broken-link" not in out  # warnings only
    code, _, err = lint_cli(capsys, str(TAXO_VAULT), "--select", "broken-links")
    assert code == 2 and "unknown rule `broken-links`" in err and "did you mean broken-link" in err
    code, _, err = lint_cli(capsys, str(tmp_path / "missing"))
    assert code == 2 and "vault not found" in err
    code, _, err = lint_cli(capsys, str(TAXO_VAULT), "--taxonomy", str(tmp_path / "nope.md"))
    assert code == 2 and "nope.md" in err
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.md").write_text("---\ntitle: A\n---\nSee [[b]].\n", encoding="utf-8")
    (clean / "b.md").write_text("# B\n", encoding="utf-8")
    code, out, _ = lint_cli(capsys, str(clean), "--no-cache")
    assert code == 0 and "All good: 2 notes checked" in out


def test_json_and_output_file(capsys, tmp_path):
    target = tmp_path / "report.json"
    code, out, _ = lint_cli(capsys, str(TAXO_VAULT), "--no-cache", "--format", "json", "--output", str(target))
    assert out == "" and code == 1
    assert json.loads(target.read_text(encoding="utf-8"))["notes"] == 11


def test_config_files(capsys, tmp_path):
    repo = tmp_path / "repo"
    vault = repo / "notes" / "vault"
    shutil.copytree(TAXO_VAULT, vault)
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.vaulttools.lint]\nignore = ["alias-duplicate"]\nexclude = ["prive"]\n'
        '[tool.vaulttools.lint.severity]\nbroken-anchor = "error"\nslug-duplicate = "off"\n',
        encoding="utf-8",
    )
    code, out, _ = lint_cli(capsys, str(vault), "--no-cache", "--format", "json")
    data = json.loads(out)
    rules = {d["rule"] for d in data["diagnostics"]}
    assert "alias-duplicate" not in rules and "slug-duplicate" not in rules
    assert all(d["severity"] == "error" for d in data["diagnostics"] if d["rule"] == "broken-anchor")
    assert data["notes"] == 10  # prive/mon-journal.md excluded from linting...
    assert any(d["rule"] == "private-link" for d in data["diagnostics"])  # ...but still known to links
    # --select on the command line replaces the file's selection; --ignore adds to it
    code, out, _ = lint_cli(capsys, str(vault), "--no-cache", "--format", "json", "--ignore", "broken-anchor")
    assert "broken-anchor" not in {d["rule"] for d in json.loads(out)["diagnostics"]}
    # vaulttools.toml in the vault wins over pyproject.toml
    (vault / "vaulttools.toml").write_text('[lint]\nselect = ["slug-mismatch"]\n', encoding="utf-8")
    code, out, _ = lint_cli(capsys, str(vault), "--no-cache", "--format", "json")
    assert {d["rule"] for d in json.loads(out)["diagnostics"]} == {"slug-mismatch"}
    # a bad configuration is a usage error naming the file and the key
    (vault / "vaulttools.toml").write_text('[lint]\nselekt = ["x"]\n', encoding="utf-8")
    code, _, err = lint_cli(capsys, str(vault))
    assert code == 2 and "vaulttools.toml" in err and "selekt" in err
    (vault / "vaulttools.toml").write_text('[lint\n', encoding="utf-8")
    code, _, err = lint_cli(capsys, str(vault))
    assert code == 2 and "invalid TOML" in err


def test_taxonomy_option_and_lookup_above_the_vault(capsys, tmp_path):
    repo = tmp_path / "repo"
    vault = repo / "vault"
    shutil.copytree(TAXO_VAULT, vault)
    (vault / "TAXONOMIE.md").rename(repo / "TAXONOMIE.md")  # beside the vault, as in this repository
    code, out, _ = lint_cli(capsys, str(vault), "--no-cache", "--format", "json")
    assert "unknown-domain" in {d["rule"] for d in json.loads(out)["diagnostics"]}
    (repo / "TAXONOMIE.md").rename(tmp_path / "elsewhere.md")
    code, out, _ = lint_cli(capsys, str(vault), "--no-cache", "--format", "json")
    assert "unknown-domain" not in {d["rule"] for d in json.loads(out)["diagnostics"]}
    code, out, _ = lint_cli(capsys, str(vault), "--no-cache", "--format", "json", "--taxonomy", str(tmp_path / "elsewhere.md"))
    assert "unknown-domain" in {d["rule"] for d in json.loads(out)["diagnostics"]}


def test_internal_error_is_one_line_and_exit_2(capsys, monkeypatch):
    import vaulttools.lint as lint_api

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(lint_api, "lint_vault", boom)
    code, out, err = lint_cli(capsys, str(TAXO_VAULT), "--no-cache")
    assert code == 2 and out == ""
    assert "internal error: RuntimeError: kaboom" in err and "Traceback" not in err


def test_progress_bar_only_on_a_terminal_for_large_vaults(monkeypatch):
    import io

    from vaulttools.commands import lint as command

    update, stop = command._progress(10_000)  # stderr is not a terminal under pytest
    assert update is None
    stop()

    class FakeTTY(io.StringIO):
        def isatty(self) -> bool:
            return True

    fake = FakeTTY()
    monkeypatch.setattr(command.sys, "stderr", fake)
    update, stop = command._progress(command.PROGRESS_MIN_NOTES - 1)
    assert update is None
    update, stop = command._progress(10_000)
    assert update is not None
    update(5_000, 10_000)
    stop()


def test_json_rows_are_exactly_json_dumps_of_each_diagnostic(result):
    text = render(result, "json")
    data = json.loads(text)
    assert data["diagnostics"] == [d.to_dict() for d in result.diagnostics]
    odd = Diagnostic('we"ird\\path\n.md', 1, 2, 3, 4, "broken-link", Severity.WARNING, "tab\there \u00e9 \x01 \u2028")
    res = LintResult(root=Path("/v"), notes=1, diagnostics=[odd])
    assert json.loads(render(res, "json"))["diagnostics"] == [odd.to_dict()]


def test_sarif_uris_are_encoded():
    diag = Diagnostic("Mes notes/École 42.md", 1, 1, 1, 2, "broken-link", Severity.ERROR, "m")
    res = LintResult(root=Path("/v"), notes=1, diagnostics=[diag])
    inside = json.loads(render(res, "sarif", cwd=Path("/v")))
    loc = inside["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert loc == "Mes%20notes/%C3%89cole%2042.md"
    outside = json.loads(render(res, "sarif", cwd=Path("/elsewhere")))
    loc = outside["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert loc == "file:///v/Mes%20notes/%C3%89cole%2042.md"


def test_sarif_is_exactly_the_indented_json_dump(result):
    """`sarif.render` writes each result from a template (json's indented dump is pure Python, 1.5 s on 35k
    findings): byte for byte what `json.dumps(to_data(...), indent=2)` gives, fixes and odd strings included."""
    from vaulttools.lint.formats import _shower
    from vaulttools.lint.formats.sarif import to_data
    from vaulttools.lint.diagnostics import Edit, Fix

    odd = Diagnostic('we"ird\\path\n.md', 1, 2, 3, 0, "broken-link", Severity.WARNING, "tab\there \u00e9 \x01 \u2028",
                     Fix("fix \"it\"", (Edit("to-list", "tags"),)))
    for res in (result, LintResult(root=Path("/v"), notes=1, diagnostics=[odd]),
                LintResult(root=Path("/v"), notes=0, diagnostics=[])):
        shown = _shower(res, TAXO_VAULT)
        expected = json.dumps(to_data(res, shown), ensure_ascii=False, indent=2) + "\n"
        assert render(res, "sarif", cwd=TAXO_VAULT) == expected


def test_json_report_is_the_same_from_rows_parts_and_bytes(result):
    """`render` builds the report as one list of rows; `note_part`/`assemble` (the lint cache's parts) and
    `render_bytes` (what `--format json` writes) must give the same text, byte for byte."""
    from itertools import groupby

    from vaulttools.lint.formats import Totals, assemble, note_part, render_bytes

    odd = [
        Diagnostic("a/É.md", 1, 2, 1, 3, "broken-link", Severity.ERROR, "m – œ \u2028", None),
        Diagnostic("a/É.md", 2, 1, 2, 1, "tag-format", Severity.WARNING, "tab\t\"q\"", None),
        Diagnostic("b.md", 1, 1, 1, 2, "broken-link", Severity.WARNING, "m – œ \u2028", None),
    ]
    for res in (result, LintResult(root=Path("/v"), notes=2, diagnostics=odd), LintResult(Path("/v"), 0, [])):
        text = render(res, "json")
        parts = [note_part("json", list(g), "") for _, g in groupby(res.diagnostics, key=lambda d: d.path)]
        assert assemble("json", Totals.of(res), parts) == text
        assert render_bytes(res, "json") == text.encode("utf-8")
        assert json.loads(text)["diagnostics"] == [d.to_dict() for d in res.diagnostics]


def test_a_registered_format_is_a_choice_of_vaulttools_lint(tmp_path, monkeypatch, capsys):
    """Formats come from the registry: one module and one `register` line make a new `--format`."""
    from vaulttools.cli import main
    from vaulttools.lint import formats

    monkeypatch.setattr(formats, "_REGISTRY", dict(formats._REGISTRY))
    monkeypatch.setattr(formats, "FORMATS", formats.FORMATS)
    monkeypatch.setattr(formats, "PART_FORMATS", formats.PART_FORMATS)
    (tmp_path / "count_format.py").write_text(
        "def render(result, shown):\n    return f'{len(result.diagnostics)} findings in {result.notes} notes\\n'\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    formats.register(formats.Format("count", "count_format", "how many findings"))
    with pytest.raises(ValueError, match="already registered"):
        formats.register(formats.Format("count", "count_format", "again"))
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("Voir [[nulle-part]].\n", encoding="utf-8")
    assert main(["lint", str(vault), "--format", "count", "--no-cache", "--exit-zero"]) == 0
    assert capsys.readouterr().out == "1 findings in 1 notes\n"
    with pytest.raises(SystemExit):
        main(["lint", str(vault), "--format", "nope"])
    assert "count" in capsys.readouterr().err  # the choices listed come from the registry


def test_json_carries_the_vault_notices_the_text_shows(capsys, tmp_path):
    """A vault-level notice (a folder symlink to outside the vault) is in the JSON report too, under its own
    top-level key, as the text report says it; the other keys are untouched. Also when answered by the cache."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("---\ntitle: A\n---\nVoir [[b]].\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n", encoding="utf-8")
    (vault / "ext").symlink_to(outside)
    code, text, _ = lint_cli(capsys, str(vault), "--no-cache")
    shown = [line.removeprefix("note: ") for line in text.splitlines() if line.startswith("note: ")]
    assert any("symlink-outside-vault" in line for line in shown), text
    for extra in (["--no-cache"], [], []):  # no cache; cache written; answered from the cache
        code, out, _ = lint_cli(capsys, str(vault), "--format", "json", *extra)
        data = json.loads(out)
        assert list(data) == ["version", "vault", "notes", "diagnostics", "summary", "notices"]
        assert data["notices"] == shown
        assert [d["rule"] for d in data["diagnostics"]] == ["broken-link"]


def test_rule_urls_have_one_configurable_base(tmp_path):
    """Every report links a rule to `<base>#<rule>`: by default this repository's docs/rules.md (no invented
    host), else `$VAULTTOOLS_DOCS_URL`, in JSON and SARIF alike, and a cached report follows a changed base."""
    import os
    import subprocess
    import sys

    vault = tmp_path / "v"
    shutil.copytree(TAXO_VAULT, vault)
    base = "https://git.example.org/me/grasbot/src/branch/main/docs/rules.md"

    def lint(fmt: str, docs_url: str | None) -> dict:
        env = {k: v for k, v in os.environ.items() if k != "VAULTTOOLS_DOCS_URL"}
        if docs_url is not None:
            env["VAULTTOOLS_DOCS_URL"] = docs_url
        run = subprocess.run([sys.executable, "-c", "import sys; from vaulttools.cli import main; sys.exit(main())", "lint", str(vault), "--format", fmt],
                             capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 1, run.stderr
        return json.loads(run.stdout)

    default = lint("json", None)["diagnostics"]
    assert default and all(d["url"] == "docs/rules.md#" + d["rule"] for d in default)
    for _ in range(2):  # written to the cache, then answered from it
        assert all(d["url"] == f"{base}#{d['rule']}" for d in lint("json", base)["diagnostics"])
    rules = lint("sarif", base)["runs"][0]["tool"]["driver"]["rules"]
    assert all(r["helpUri"] == f"{base}#{r['id']}" for r in rules)
    assert all(d["url"] == "docs/rules.md#" + d["rule"] for d in lint("json", None)["diagnostics"])
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert "grasbot/grasbot-vaulttools" not in pyproject  # no such repository
