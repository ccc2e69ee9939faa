from pathlib import Path

from nexo.unknowns import UNKNOWNS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "unknowns.md").read_text(encoding="utf-8")


def test_every_unknown_in_the_code_is_in_the_register():
    for unknown in UNKNOWNS:
        assert f"| {unknown.key} |" in DOC, unknown.key


def test_the_register_lists_nothing_the_code_does_not_know():
    rows = [
        line.split("|")[1].strip()
        for line in DOC.splitlines()
        if line.startswith("| ") and not line.startswith("| key") and not line.startswith("| ---")
    ]
    assert sorted(rows) == sorted(u.key for u in UNKNOWNS)
