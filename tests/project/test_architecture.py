"""The layout rules of docs/architecture.md, checked on the source tree.

- Layers point one way: core -> blobs -> shared integration plumbing -> cli -> iceberg ->
  spark/conformance -> demo.  Every import counts, including those inside functions.
- Each standard blob-type and blob-property name is a string literal in one module only.
- Modules stay small: about 400 lines, functions about 60.
- ``import puffin.iceberg`` stays light (no argparse, no CLI, no pyiceberg).
- The package stands alone: nothing imports the repository's ``tools``, ``tests`` or ``bench``,
  which the wheel does not ship.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from _paths import ROOT

SRC = ROOT / "src" / "puffin"

# Rank of each part of the package: a module may import only from lower ranks or its own part.
_CORE = {
    "errors", "layout", "limits", "version", "types", "codecs", "metadata", "footer", "io",
    "reader", "writer",
}
_RANKS = {
    "blobs": 1,
    "support": 2,
    "ndv": 2,
    "cli": 3,
    "iceberg": 4,
    "spark": 5,
    "conformance": 5,
    "demo": 6,
}
# The facade re-exports lazily by name; `python -m puffin` runs the CLI.
_FACADES = {"__init__", "__main__"}


def _part(module: str) -> str | None:
    """The part of ``puffin.x.y`` (its first component after ``puffin``), None for facades."""
    parts = module.split(".")
    if parts[0] != "puffin":
        return None
    if len(parts) == 1:
        return None
    head = parts[1]
    if head in _CORE:
        return "core"
    if head in _FACADES:
        return None
    return head


def _rank(part: str) -> int:
    return 0 if part == "core" else _RANKS[part]


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _imports(path: Path, module: str) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # `from puffin import spark` imports a part, too
                yield node.lineno, f"{target}.{alias.name}"
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant):
                yield node.lineno, str(node.args[0].value)


# Repository folders the wheel does not ship (pyproject.toml: packages = ["src/puffin"]).
_REPOSITORY_ONLY = ("tools", "tests", "bench")


def test_nothing_imports_the_repository_folders() -> None:
    """A module under src/puffin that imports ``tools``, ``tests`` or ``bench`` (also inside
    a function, also through ``importlib.import_module``) works only in a checkout."""
    wrong: dict[str, str] = {}  # place -> the module imported there (not its names too)
    for module, path in _modules():
        for line, target in _imports(path, module):
            if target.split(".")[0] in _REPOSITORY_ONLY:
                place = f"{path.relative_to(ROOT)}:{line}"
                wrong[place] = min(wrong.get(place, target), target, key=len)
    assert not wrong, "the installed wheel has no such module:\n" + "\n".join(
        f"{place} imports {target}" for place, target in sorted(wrong.items())
    )


def test_every_part_has_a_rank() -> None:
    for module, _ in _modules():
        part = _part(module)
        assert part is None or part == "core" or part in _RANKS, (
            f"{module}: add its part to _RANKS (and to docs/architecture.md)"
        )


def test_imports_point_down_the_layers() -> None:
    wrong = []
    for module, path in _modules():
        part = _part(module)
        if part is None:
            continue
        for line, target in _imports(path, module):
            other = _part(target)
            if other is None or other == part or (other not in _RANKS and other != "core"):
                continue
            if _rank(other) >= _rank(part):
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({part}) imports {target} ({other})")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(set(wrong)))


def _standard_names() -> set[str]:
    from puffin.blobs import standard

    return {
        getattr(standard, name)
        for name in standard.__all__
        if isinstance(getattr(standard, name), str)
    }


def _literal_uses(path: Path, names: set[str]) -> Iterator[tuple[int, str]]:
    """Exact string constants equal to a standard name, except keys of dict displays.

    A dict display's key is an output field of our own JSON (``{"ndv": …}`` in ``--json``),
    which happens to share a word with a property; every other use names the property.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    dict_keys = {
        id(key)
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for key in node.keys
        if key is not None
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in names
            and id(node) not in dict_keys
        ):
            yield node.lineno, node.value


# The same words with another meaning: the `puffin ndv` command, and the keys of the CLI's
# own JSON reports (docs/cli.md) read back when rendering them as text.
_OTHER_MEANINGS = {
    ("cli/_parser.py", "ndv"),
    ("cli/_ndv.py", "ndv"),
    ("cli/_inspect.py", "ndv"),
    ("cli/_inspect.py", "cardinality"),
}


def test_standard_names_are_literals_in_one_module() -> None:
    names = _standard_names()
    assert {"apache-datasketches-theta-v1", "deletion-vector-v1", "ndv"} <= names
    home = SRC / "blobs" / "standard.py"
    elsewhere = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for _, path in _modules()
        if path != home
        for line, value in _literal_uses(path, names)
        if (path.relative_to(SRC).as_posix(), value) not in _OTHER_MEANINGS
    ]
    assert not elsewhere, "use puffin.blobs.standard instead of:\n" + "\n".join(elsewhere)


def _long_functions(path: Path, limit: int) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)"


def test_modules_and_functions_stay_small() -> None:
    # "About" 400 and 60: a little slack for a docstring, none for a second concept.
    big = [
        f"{path.relative_to(ROOT)} ({n} lines)"
        for _, path in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 440
    ]
    long = [f for _, path in _modules() for f in _long_functions(path, 70)]
    assert not big and not long, "\n".join(big + long)


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("puffin", ("numpy", "pyarrow", "argparse", "puffin.cli")),
        ("puffin.iceberg", ("argparse", "puffin.cli", "pyspark", "pyiceberg")),
        ("puffin.blobs.standard", ("numpy", "pyarrow")),
    ],
)
def test_imports_stay_light(module: str, forbidden: tuple[str, ...]) -> None:
    code = (
        f"import sys; import {module}; "
        f"print(' '.join(m for m in {forbidden!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import {module} loaded {out.stdout.strip()}"


# --- no circles, no private names across modules, no facade from below ------------------------


def _import_targets(path: Path, module: str) -> Iterator[tuple[int, str, str | None]]:
    """(line, module imported, name imported from it) for every import outside
    ``if TYPE_CHECKING:`` blocks, inside functions too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                yield node.lineno, target, alias.name


def _graph() -> dict[str, set[str]]:
    """Module -> the modules it imports (a name that is a submodule counts as that module)."""
    modules = dict(_modules())
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for _, target, name in _import_targets(path, module):
            full = f"{target}.{name}" if name else target
            while full and full not in modules:
                full = full.rpartition(".")[0]
            if full and full != module:
                edges[module].add(full)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
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
    return found


def test_no_import_circles_function_level_imports_included() -> None:
    """Typing-only imports are left out: they never run."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    cycles = _cycles(_graph())
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_imported_from_another_module() -> None:
    """A ``_``-prefixed function, class or constant stays in its module; a ``_``-prefixed
    module may be imported by the modules of its own package (that is what it is for)."""
    modules = dict(_modules())
    wrong = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for line, target, name in _import_targets(path, module):
            if name is None or not name.startswith("_") or name.startswith("__"):
                continue
            if f"{target}.{name}" in modules and target == package:
                continue  # a private module of the importer's own package
            if target.startswith("puffin"):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name} from {target}")
    assert not wrong, "\n".join(wrong)


# The reference conformance adapter tests this library through its public API on purpose.
_FACADE_USERS = {"puffin.__main__", "puffin.demo", "puffin.conformance.adapters._puffin"}


def test_nothing_below_the_facade_imports_it() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line}"
        for module, path in _modules()
        if module not in _FACADE_USERS and module != "puffin"
        for line, target, name in _import_targets(path, module)
        if (target == "puffin" and name is None) or (target == "puffin" and name in _public())
    ]
    assert not wrong, "import the defining module instead of the facade:\n" + "\n".join(wrong)


def _public() -> set[str]:
    import puffin

    return set(puffin.__all__)


# --- the spine: one footer door, a writer blind to its backend, one delete loader ----------------


def _importers(targets: set[str]) -> dict[str, set[str]]:
    """``{module: the targets it imports}`` for modules importing any of ``targets``."""
    found: dict[str, set[str]] = {}
    for module, path in _modules():
        hits = {t for _, t in _imports(path, module) if t in targets}
        if hits:
            found[module] = hits
    return found


def test_the_footer_has_one_door() -> None:
    """Only ``puffin.footer`` itself reaches its backends: every reader goes through
    ``footer.parse``, so ``puffin.open`` and ``FileMetadata.from_json`` accept alike."""
    backends = {"puffin.footer.exact", "puffin.footer.streaming", "puffin.footer.caps"}
    outside = {
        m: t for m, t in _importers(backends).items() if not m.startswith("puffin.footer")
    }
    assert not outside, f"footer backends imported past the door: {outside}"
    from puffin import reader

    assert "parse_payload" in vars(reader)  # the reader's one way in (metadata -> footer)


def test_the_writer_does_not_know_its_backend() -> None:
    source = (SRC / "writer.py").read_text(encoding="utf-8")
    imported = {t for _, t in _imports(SRC / "writer.py", "puffin.writer")}
    backends = {"puffin.io.local", "puffin.io.remote", "puffin.io.staging", "puffin.io.stores"}
    assert not imported & backends
    for name in ("Upload", "Staging", "LocalSink", "StreamSink", "fdopen", "fsync"):
        assert name not in source, f"writer.py mentions {name}: it should only see a Sink"


def test_deletion_vectors_of_a_table_have_one_loader() -> None:
    """Above the blobs, only iceberg/metadata/delete_files.py reads a DV from a file."""
    readers = {
        "puffin.blobs.dv.files.read_deletion_vector",
        "puffin.blobs.dv.files.read_deletion_vectors",
    }
    wrong = {
        m: t
        for m, t in _importers(readers).items()
        if _part(m) not in ("core", "blobs", "cli", None)
        and m != "puffin.iceberg.metadata.delete_files"
    }
    assert not wrong, f"deletion vectors read past the one loader: {wrong}"


def test_one_lazy_facade_helper() -> None:
    defining = []
    for module, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                defining.append(module)
    assert defining == ["puffin.support.facade"] or not defining, defining


@pytest.mark.parametrize("facade", ["puffin", "puffin.iceberg"])
def test_no_public_name_is_also_a_submodule(facade: str) -> None:
    """Importing ``facade.x.y`` sets the attribute ``x`` on the package to the submodule, so
    a lazily exported name ``x`` would then be the module, not the function (a subpackage
    ``changes`` once shadowed the function ``changes`` after its own import)."""
    import importlib

    package = importlib.import_module(facade)
    folder = Path(package.__file__ or "").parent
    clashes = [n for n in package.__all__ if (folder / n).is_dir() or (folder / f"{n}.py").exists()]
    assert not clashes, clashes


def test_architecture_doc_lists_every_module() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if path.name == "__init__.py":
            rel = rel[: -len("__init__.py")] or "__init__.py"
        if f"`{rel}`" not in doc:
            missing.append(rel)
    assert not missing, f"docs/architecture.md does not list: {missing}"


def test_every_private_pyiceberg_name_imported_is_listed() -> None:
    """docs/architecture.md lists each private pyiceberg name ``src/`` imports, and who does:
    the cost of a pyiceberg upgrade, visible at once."""
    import re

    found: dict[str, set[str]] = {}
    for module, path in _modules():
        for _, target, name in _import_targets(path, module):
            if not target.startswith("pyiceberg") or name is None:
                continue
            private = name.startswith("_") or any(p.startswith("_") for p in target.split("."))
            if private and not name.startswith("__"):
                found.setdefault(f"{target}.{name}", set()).add(str(path.relative_to(SRC.parent)))
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## pyiceberg's private names", 1)[1].split("\n## ", 1)[0]
    listed = {
        m.group(1): set(re.findall(r"`([^`]+)`", m.group(2)))
        for m in re.finditer(r"^\| `(pyiceberg[^`]*)` \| (.*) \|$", section, re.MULTILINE)
    }
    assert listed == found
