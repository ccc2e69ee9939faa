"""The login limits hold across processes: two gunicorn servers sharing one REDIS_URL, attempts alternated.

With the limiter's default in-memory storage each process would count alone and allow twice as many
attempts; these tests fail then.
"""

from __future__ import annotations

import pytest

from tests.ops_helpers import gunicorn, post_login


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory):
    logs = tmp_path_factory.mktemp("two-servers")
    with gunicorn(logs / "a.log") as a, gunicorn(logs / "b.log") as b:
        yield a, b


def test_failed_logins_for_one_username_are_counted_across_two_processes(two_servers):
    a, b = two_servers
    for attempt in range(5):  # the default: 5 failed attempts per username
        assert post_login((a, b)[attempt % 2], "vendedor1", "wrong-password").status_code == 401
    for server in (a, b):
        refused = post_login(server, "vendedor1", "nexo-demo")
        assert refused.status_code == 429 and "Demasiados intentos" in refused.text
    assert post_login(b, "laura", "nexo-demo").status_code == 302


def test_failed_logins_from_one_address_are_counted_across_two_processes(two_servers):
    a, b = two_servers
    for attempt in range(20):  # the default: 20 failed attempts per client address
        assert post_login((a, b)[attempt % 2], f"nadie{attempt}", "wrong").status_code == 401
    assert post_login(a, "nadie-mas", "wrong").status_code == 429
    assert post_login(b, "laura", "nexo-demo").status_code == 429
