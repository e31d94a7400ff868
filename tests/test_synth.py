"""The synthetic-vault generator of benchmarks/: deterministic, well-formed, with the promised features."""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def _load_synth():
    spec = importlib.util.spec_from_file_location("benchmarks_synth", REPO / "benchmarks" / "synth.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


synth = _load_synth()


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _notes(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if p.name not in ("README.md", "TAXONOMIE.md"))


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth.generate(tmp_path_factory.mktemp("synth") / "v", 80, seed=7)


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    a = _tree(synth.generate(tmp_path / "a", 50, seed=42))
    b = _tree(synth.generate(tmp_path / "b", 50, seed=42))
    assert len([k for k in a if k.endswith(".md")]) == 52  # 50 notes + README + TAXONOMIE
    assert a == b


def test_other_seed_differs(tmp_path: Path) -> None:
    a = _tree(synth.generate(tmp_path / "a", 50, seed=42))
    c = _tree(synth.generate(tmp_path / "c", 50, seed=43))
    assert a != c
    assert set(a) != set(c)  # not only the text: the file names too


def test_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text("keep me", encoding="utf-8")
    with pytest.raises(FileExistsError):
        synth.generate(tmp_path, 5)
    assert (tmp_path / "x.md").read_text(encoding="utf-8") == "keep me"


def test_frontmatter_is_grasbot_like(vault: Path) -> None:
    notes = _notes(vault)
    assert len(notes) == 80
    tops = {p.relative_to(vault).parts[0] for p in notes}
    assert tops == {"00-MOC", "10-Projets", "20-Competences", "30-Parcours", "50-Technique"}
    assert max(len(p.relative_to(vault).parts) for p in notes) >= 4  # top + at least 2 sub-folder levels
    domain_slugs = {d[0] for d in synth.DOMAINS}
    for path in notes:
        text = path.read_text(encoding="utf-8")
        assert text.startswith("---\n")
        meta = yaml.safe_load(text.split("\n---\n", 1)[0][4:])
        assert isinstance(meta, dict), path
        assert meta["slug"] == unicodedata.normalize("NFC", path.stem)  # a few files have NFD names
        for key in ("title", "type", "source", "domains", "tags", "aliases", "answers", "priority", "updated"):
            assert key in meta, (path, key)
        assert meta["visibility"] in ("public", "private")
        assert set(meta["domains"]) <= domain_slugs
        for ref in meta.get("related") or []:
            assert re.fullmatch(r"\[\[[^\]]+\]\]", ref)


def test_bodies_have_links_headings_and_code(vault: Path) -> None:
    texts = [p.read_text(encoding="utf-8") for p in _notes(vault)]
    joined = "\n".join(texts)
    for pattern in (r"^## ", r"\^blk-[0-9a-f]{6}$", r"!\[\[[^\]]+\.(png|svg)", r"\[\[#", r"\]\([^)]*%20",
                    r"\]\(<", r"\[\[[^\]|#]+/[^\]]+\]\]", r"\\\|", r"^```python$", r"\[\[ancienne-note-"):
        assert re.search(pattern, joined, re.M), pattern
    words = [len(t.split("\n---\n", 1)[1].split()) for t in texts]
    assert 200 <= sum(words) / len(words) <= 450


def test_attachments_exist_and_links_to_them_match(vault: Path) -> None:
    names = {p.name for p in vault.rglob("_attachments/*")}
    assert names
    embeds = set(re.findall(r"!\[\[([^\]|#]+\.(?:png|svg|pdf))", "\n".join(p.read_text("utf-8") for p in _notes(vault))))
    assert embeds and embeds <= names


def test_taxonomy_and_manifest(vault: Path) -> None:
    taxonomy = (vault / "TAXONOMIE.md").read_text(encoding="utf-8")
    assert "## Domaines (`domains:`)" in taxonomy and "## Tags (`tags:`)" in taxonomy
    assert "entre 1 et 4 domaines" in taxonomy and "Entre 3 et 12 aliases" in taxonomy
    manifest = synth.read_manifest(vault)
    assert manifest["notes"] == 80 and manifest["seed"] == 7
    assert manifest["body_links_total"] >= 5 * 80
    broken = manifest["broken_target"] + manifest["broken_anchor"]
    assert 0.005 < broken / manifest["body_links_total"] < 0.045  # ~2 %


def test_ensure_vault_generates_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth, "DATA_DIR", tmp_path)
    first = synth.ensure_vault(12, seed=3)
    assert first == tmp_path / "synth-12-3"
    marker = first / "marker.txt"
    marker.write_text("reused", encoding="utf-8")
    assert synth.ensure_vault(12, seed=3) == first
    assert marker.exists()  # not regenerated
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
