"""scripts/check_layers.py: imports run down the layer order of docs/architecture.md, in no cycle anywhere;
only settings reads the environment."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_layers", ROOT / "scripts" / "check_layers.py")
check_layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_layers)


def test_the_code_follows_the_layer_order_and_reads_the_environment_only_in_settings():
    assert check_layers.check() == []


def test_an_import_up_the_order_is_a_violation():
    tree = ast.parse("from nexo.orders import service\nfrom nexo import audit\n")
    imported = [name for _, name in check_layers.imported_modules(tree, "nexo.telemetry.queries", False)]
    assert imported == ["nexo.orders", "nexo.audit"]
    assert check_layers.LAYER_OF["orders"] > check_layers.LAYER_OF["telemetry"]
    assert check_layers.LAYER_OF["audit"] == check_layers.LAYER_OF["telemetry"]  # siblings: refused too


def test_every_way_of_reading_the_environment_is_seen():
    tree = ast.parse("import os\nfrom os import environ\na = os.environ['A']\nb = os.getenv('B')\nc = os.path.sep\n")
    assert check_layers.environment_reads(tree) == [2, 3, 4]


def test_every_component_of_nexo_has_a_layer():
    components = {
        p.stem if p.is_file() else p.name
        for p in (ROOT / "nexo").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }
    assert components <= set(check_layers.LAYER_OF)


def test_the_cycle_detector_reports_exactly_the_cycle_of_a_graph():
    # a → b → c → a is a cycle; d imports into it and e stands alone: neither is part of it.
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}, "e": {}}
    assert check_layers.import_cycles(graph) == [["a", "b", "c", "a"]]


def test_a_graph_without_a_cycle_has_none_reported():
    graph = {"a": {"b": 1, "c": 1}, "b": {"c": 2}, "c": {}, "d": {"a": 4}}
    assert check_layers.import_cycles(graph) == []
