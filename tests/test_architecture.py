"""The import contract of docs/architecture.md, read from the source with `ast`.

Every `import` counts, wherever it is written (a function-level "lazy" import is an arrow like any other;
only `if TYPE_CHECKING:` blocks, never run, are left out). The checks: no cycle between the project's
modules; the engine imports no web framework, LLM client, UI toolkit or file watcher, and nothing of
`grasbot.answer`, `grasbot.llm` or `grasbot.service`; `grasbot.answer` never imports the service; `grasbot.llm`
imports neither; nothing in `grasbot` imports `vaulttools`; no module imports another's private name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("grasbot", "vaulttools")

#: The engine: the data model, readers, link resolution, the vault, retrieval and the text module.
ENGINE = (
    "grasbot.model",
    "grasbot.markdown",
    "grasbot.links",
    "grasbot.vault",
    "grasbot.readers",
    "grasbot.search",
    "grasbot.text",
)
#: What the engine never imports: web frameworks and servers, LLM and HTTP clients, tracing, the UI
#: toolkit and the file watcher (the author's tools and the service bring those).
ENGINE_FORBIDDEN_LIBRARIES = (
    "fastapi", "starlette", "uvicorn", "ollama", "openai", "langfuse", "httpx", "textual", "watchdog",
)  # fmt: skip


def _is_under(module: str, prefixes: tuple[str, ...] | str) -> bool:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def module_files(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Module name -> file, for every `.py` file of the packages (a package is named by its `__init__`)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` except what sits under `if TYPE_CHECKING:` (never executed)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _lazy_exports(tree: ast.Module) -> list[str]:
    """The modules a package's `_EXPORTS` table (PEP 562 lazy attributes) loads on demand."""
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "_EXPORTS" and node.value is not None:
            return sorted(set(ast.literal_eval(node.value).values()))
    return []


def imports_of(name: str, path: Path, known: set[str]) -> list[tuple[str, int, str | None]]:
    """(imported module, line, imported name) for every import of the module `name` at `path`. A
    `from package import x` where `x` is a module of the project is an import of that module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    out: list[tuple[str, int, str | None]] = []
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                out.append((full, node.lineno, None) if full in known else (module, node.lineno, alias.name))
    out.extend((module, 1, None) for module in _lazy_exports(tree))
    return out


def project_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, dict[str, int]]:
    """module -> {project module it imports: first line}."""
    files = module_files(root, packages)
    known = set(files)
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges = graph.setdefault(name, {})
        for module, line, _ in imports_of(name, path, known):
            target = module
            while target and target not in known:  # `import grasbot.vault.x` -> the deepest known module
                target = target.rpartition(".")[0]
            if target and target != name and module.split(".")[0] in packages:
                edges.setdefault(target, line)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted; sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    members = set(component)
    arrows = [f"{a} -> {b} (line {line})" for a in component for b, line in sorted(graph[a].items()) if b in members]
    return "; ".join(arrows)


def forbidden_arrows(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Every import that breaks a rule of the layers, as `module:line imports target (rule)`."""
    files = module_files(root, packages)
    known = set(files)
    wrong: list[str] = []
    for name, path in files.items():
        for module, line, imported in imports_of(name, path, known):
            top = module.split(".")[0]
            rule = None
            if _is_under(name, ENGINE):
                if top in ENGINE_FORBIDDEN_LIBRARIES:
                    rule = "the engine imports no web, LLM, UI or watcher library"
                elif _is_under(module, ("grasbot.answer", "grasbot.llm", "grasbot.service")):
                    rule = "the engine imports nothing of answer, llm or service"
            if _is_under(name, "grasbot.answer") and _is_under(module, "grasbot.service"):
                rule = "answer never imports the service"
            if _is_under(name, "grasbot.llm") and _is_under(module, ("grasbot.answer", "grasbot.service")):
                rule = "llm backends import neither answer nor the service"
            if _is_under(name, "grasbot") and top == "vaulttools":
                rule = "grasbot never imports vaulttools"
            if imported is not None and imported.startswith("_") and not imported.startswith("__") and top in packages:
                rule = f"`{imported}` is private to {module}"
            if rule is not None:
                wrong.append(f"{name}:{line} imports {module}{'.' + imported if imported else ''} ({rule})")
    return sorted(set(wrong))


# -- the contract ---------------------------------------------------------------------------------------


def test_no_import_cycle_between_project_modules() -> None:
    graph = project_graph(REPO)
    assert len(graph) > 50  # the whole project was read
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_describe(graph, c) for c in found)


def test_no_forbidden_arrow() -> None:
    wrong = forbidden_arrows(REPO)
    assert not wrong, "imports against the layers of docs/architecture.md:\n" + "\n".join(wrong)


def test_the_public_api_is_lazy_and_complete() -> None:
    import grasbot

    assert "Vault" in grasbot.__all__ and "RetrievalPipeline" in grasbot.__all__
    for name in grasbot.__all__:
        assert getattr(grasbot, name) is not None, name
    # the public names are the engine's and the answer layer's, never the service's or an LLM client's
    tree = ast.parse((REPO / "grasbot" / "__init__.py").read_text(encoding="utf-8"))
    for module in _lazy_exports(tree):
        assert _is_under(module, ENGINE) or _is_under(module, "grasbot.answer"), module


def test_importing_the_package_loads_no_engine_module() -> None:
    """`import grasbot` (and so `import grasbot.vault`) pays for what it uses only."""
    import subprocess
    import sys

    code = (
        "import sys, grasbot; before = set(sys.modules); grasbot.Note; "
        "print(sorted(m for m in sys.modules if m.startswith('grasbot'))); "
        "print('grasbot.search.index' in sys.modules, 'yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    loaded, flags = out.strip().splitlines()
    assert "grasbot.model" in loaded and "grasbot.vault" not in loaded, loaded
    assert flags == "False False", out


# -- the checker itself finds what it is for ------------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_checker_finds_a_cycle_made_by_a_function_level_import(tmp_path: Path) -> None:
    _write(tmp_path, {
        "grasbot/__init__.py": "",
        "grasbot/model.py": "def f():\n    from grasbot.links import g  # lazy\n    return g\n",
        "grasbot/links.py": "from grasbot import model\n",
        "grasbot/text.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from grasbot.links import g\n",
    })  # fmt: skip
    graph = project_graph(tmp_path, ("grasbot",))
    assert cycles(graph) == [["grasbot.links", "grasbot.model"]]
    assert "grasbot.links" not in graph["grasbot.text"]  # types only: never imported at run time


def test_the_checker_finds_forbidden_arrows(tmp_path: Path) -> None:
    _write(tmp_path, {
        "grasbot/__init__.py": "",
        "grasbot/vault.py": "def f():\n    import httpx\n    from grasbot.service import api\n",
        "grasbot/links.py": "from grasbot.markdown.frontmatter import _STR_CACHE\n",
        "grasbot/markdown/__init__.py": "",
        "grasbot/markdown/frontmatter.py": "_STR_CACHE = {}\n",
        "grasbot/answer/__init__.py": "",
        "grasbot/answer/pipeline.py": "from grasbot.service.api import Service\n",
        "grasbot/service/__init__.py": "",
        "grasbot/service/api.py": "import vaulttools.lint\n",
        "vaulttools/__init__.py": "",
        "vaulttools/lint.py": "",
    })  # fmt: skip
    wrong = forbidden_arrows(tmp_path)
    assert [w.split(" (")[0] for w in wrong] == [
        "grasbot.answer.pipeline:1 imports grasbot.service.api.Service",
        "grasbot.links:1 imports grasbot.markdown.frontmatter._STR_CACHE",
        "grasbot.service.api:1 imports vaulttools.lint",
        "grasbot.vault:2 imports httpx",
        "grasbot.vault:3 imports grasbot.service.api",
    ], wrong


@pytest.mark.parametrize("module", ["grasbot.vault", "grasbot.links", "grasbot.markdown.frontmatter"])
def test_no_engine_module_reaches_into_a_resolver_or_cache_by_hand(module: str) -> None:
    """The two cases of docs/architecture.md: the vault asks the resolver to forget its look-ups
    (`Resolver.forget_lookups`) and no module borrows another's string cache."""
    path = REPO / Path(*module.split(".")).with_suffix(".py")
    text = path.read_text(encoding="utf-8")
    assert "._found" not in text or module == "grasbot.links"
    assert "_STR_CACHE" not in text or module == "grasbot.markdown.frontmatter"


_DESIGN = "DES" + "IGN"  # (spelt in two halves so that this file does not cite it either)


def test_the_code_cites_only_documents_of_the_repository() -> None:
    """Comments and docs cite docs/ files of this repository, never a design file it does not hold."""
    citing = []
    for folder in ("grasbot", "vaulttools", "tests", "benchmarks", "docs"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".md", ".yaml") and "_data" not in path.parts and "fixtures" not in path.parts:
                text = path.read_text(encoding="utf-8", errors="replace")
                if (_DESIGN + " §" in text or _DESIGN + ".md" in text) :
                    citing.append(str(path.relative_to(REPO)))
    assert _DESIGN + " §" not in (REPO / "README.md").read_text(encoding="utf-8")
    assert citing == [], citing
