import pytest

from nexo.auth.views import safe_next


@pytest.mark.parametrize("target", ["/orders/new", "/credit/queue?client=x"])
def test_same_site_paths_are_accepted(target):
    assert safe_next(target) == target


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "javascript:alert(1)",
        "evil.example",
        "",
        None,
        "/ok\r\nSet-Cookie: x=y",
        "http:/evil.example",
    ],
)
def test_other_sites_and_odd_targets_are_refused(target):
    assert safe_next(target) is None
