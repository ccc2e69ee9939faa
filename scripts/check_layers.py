"""Check that imports run one way, down Nexo's layer order, with no cycle anywhere, and that only
nexo/settings.py reads the environment.

Usage: python scripts/check_layers.py   (exit status 1 and one line per violation when something is wrong;
tests/unit/test_layers.py runs it inside `make test`). The order is explained in docs/architecture.md.

A component is a top-level module or package of nexo/ (``nexo.orders.service`` belongs to ``orders``),
``jobs`` or ``app``. A component may import its own modules and components of LOWER layers only: never
one of its own layer (siblings stay independent) nor one above.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lowest first. Keep docs/architecture.md's table in step with this list.
LAYERS: list[tuple[str, set[str]]] = [
    ("request clock", {"request_timing"}),
    (
        "foundation",
        {
            "settings",
            "db",
            "formatting",
            "observability",
            "unknowns",
            "migrations",
            "form_input",
            "states",
            "redis_client",
            "leases",
        },
    ),
    (
        "platform",
        {"vocabulary", "books", "mail", "extensions", "audit", "telemetry", "processes", "security", "errors", "navigation"},
    ),
    ("stock", {"stock"}),
    ("outbox", {"outbox"}),
    ("identity", {"auth"}),
    ("domain", {"orders", "credit", "deadletters", "handoffs"}),
    ("backups", {"backup"}),
    ("pages", {"ops", "api", "demo", "health", "home", "maintenance"}),
    ("app factory", {"nexo"}),
    ("processes", {"app", "jobs"}),
]
LAYER_OF = {component: index for index, (_, components) in enumerate(LAYERS) for component in components}

# Only this module reads the environment; these trees run outside the app (or are its tests).
SETTINGS_MODULE = "nexo/settings.py"
OUTSIDE_THE_APP = ("scripts/", "tests/", "bench/", "sandbox/")
SKIPPED_DIRS = {".venv", ".git", ".data", "node_modules", "__pycache__", "test-artifacts"}

# Known exceptions, as (path, "imports nexo.X" | "reads the environment"): none. The dead-letter opening
# lives in the outbox and the relay's settings in Settings (docs/architecture.md).
ALLOWED: set[tuple[str, str]] = set()
# Not Nexo settings, so not in Settings: supervisord hands its event listener the RPC address in the
# environment, and supervisor.childutils.getRPCInterface reads it from there (ADR-013).
SUPERVISOR_PROTOCOL = {"jobs/process_events.py"}


def component(module: str) -> str | None:
    """The component a dotted module name belongs to, or None when it is not Nexo's."""
    parts = module.split(".")
    if parts[0] == "nexo":
        return parts[1] if len(parts) > 1 else "nexo"
    if parts[0] in ("jobs", "app"):
        return parts[0]
    return None


def module_name(path: Path) -> str:
    """`nexo/orders/service.py` → `nexo.orders.service` (a package's __init__ is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every module an import statement names (``from nexo import audit`` names ``nexo.audit``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(package + ([base] if base else []))
            if base in ("nexo", "jobs"):
                # `from nexo import create_app` names the factory itself, `from nexo import audit` a module.
                found += [(node.lineno, f"{base}.{alias.name}" if _is_module(base, alias.name) else base) for alias in node.names]
            else:
                found.append((node.lineno, base))
    return found


def _is_module(package: str, name: str) -> bool:
    return (ROOT / package / f"{name}.py").exists() or (ROOT / package / name / "__init__.py").exists()


def environment_reads(tree: ast.Module) -> list[int]:
    """Lines that read the process environment: os.environ, os.getenv, or `from os import environ/getenv`."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("environ", "environb", "getenv", "getenvb")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ) or (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(alias.name in ("environ", "environb", "getenv", "getenvb") for alias in node.names)
        ):
            lines.append(node.lineno)
    return lines


def python_files() -> list[Path]:
    """The repository's Python files, outside virtualenvs and caches."""
    return sorted(p for p in ROOT.rglob("*.py") if not SKIPPED_DIRS.intersection(p.relative_to(ROOT).parts))


def module_graph() -> dict[str, dict[str, int]]:
    """Every repository module (nexo, jobs, bench, scripts, sandbox, tests) → the repository modules it imports,
    with the line of the first import; imports inside functions count too (they run, only later).

    A name is resolved to a module file when one exists (`from nexo import audit` → nexo.audit), and a
    bare name to a sibling script (`import supervisor_conf` in scripts/) when that file is there.
    """
    files = {module_name(p): p for p in python_files()}
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: dict[str, int] = {}
        for line, name in _all_imports(tree, module, path.name == "__init__.py"):
            target = _resolve(name, path, files)
            if target and target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def _all_imports(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(package + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _resolve(name: str, importer: Path, files: dict[str, Path]) -> str | None:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in files:
            return candidate
        sibling = module_name(importer.parent / "x.py").rpartition(".")[0]
        if sibling and f"{sibling}.{candidate}" in files and importer.parent.name == "scripts":
            return f"{sibling}.{candidate}"
    return None


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import cycles of the graph: each strongly connected group of modules, as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(_closed_path(sorted(group), graph))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _closed_path(group: list[str], graph: dict[str, dict[str, int]]) -> list[str]:
    # A shortest way back to the first module, for a message a person can follow.
    start, members = group[0], set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node]):
            if target == start:
                return [*paths[node], start]
            if target in members and target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    return group


def check() -> list[str]:
    """Every violation, as 'path:line: message' (an empty list when the code follows the rules)."""
    problems = []
    for path in python_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(OUTSIDE_THE_APP):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        if rel != SETTINGS_MODULE and rel not in SUPERVISOR_PROTOCOL and (rel, "reads the environment") not in ALLOWED:
            problems += [
                f"{rel}:{line}: reads the environment; only {SETTINGS_MODULE} may (add a Settings field)"
                for line in environment_reads(tree)
            ]
        module = module_name(path)
        source = component(module)
        if source is None:
            continue
        if source not in LAYER_OF:
            problems.append(f"{rel}:1: component {source!r} is in no layer; add it to LAYERS in scripts/check_layers.py")
            continue
        for line, target_module in imported_modules(tree, module, path.name == "__init__.py"):
            target = component(target_module)
            if target is None or target == source:
                continue
            if (rel, f"imports nexo.{target}") in ALLOWED:
                continue
            if target not in LAYER_OF:
                problems.append(f"{rel}:{line}: imports {target_module}, whose component {target!r} is in no layer")
            elif LAYER_OF[target] >= LAYER_OF[source]:
                problems.append(
                    f"{rel}:{line}: {source} ({LAYERS[LAYER_OF[source]][0]}) imports {target_module} "
                    f"({LAYERS[LAYER_OF[target]][0]}): imports must go to a lower layer"
                )
    graph = module_graph()
    for cycle in import_cycles(graph):
        first, second = cycle[0], cycle[1]
        path = ROOT / (first.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / first.replace(".", "/") / "__init__.py"
        problems.append(
            f"{path.relative_to(ROOT).as_posix()}:{graph[first][second]}: import cycle "
            + " → ".join(cycle)
            + " (move what both need to a module below them)"
        )
    return problems


def main() -> int:
    """Print the violations; exit status 1 when there is any."""
    problems = check()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} layering problem(s); the order is in docs/architecture.md", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
