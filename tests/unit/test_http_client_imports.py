"""The relay's HTTP stack must not search sys.path on every request (requirements.txt, sniffio).

httpcore imports sniffio inside the function that tells asyncio from trio, called for every lock and
event it makes; when sniffio is missing that import fails each time, and Python does not remember a
failed import: each call walks sys.path again (encode/httpcore#1103).
"""

from __future__ import annotations

import asyncio
import importlib.machinery
from concurrent.futures import ThreadPoolExecutor

from httpcore import _synchronization


def test_httpcore_tells_the_event_loop_without_searching_for_a_module(monkeypatch):
    searched = []
    find_spec = importlib.machinery.PathFinder.find_spec

    def counting_find_spec(cls, name, path=None, target=None):
        searched.append(name)
        return find_spec(name, path, target)

    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", classmethod(counting_find_spec))

    async def ask():
        return [_synchronization.current_async_library() for _ in range(3)]

    # A loop of its own in a thread of its own, as the relay's HttpClient runs (an earlier test, the
    # browser's, may leave a loop running in this thread).
    with ThreadPoolExecutor(1) as thread:
        assert thread.submit(asyncio.run, ask()).result() == ["asyncio"] * 3
    assert searched == [], f"modules searched on the request path: {searched}"
