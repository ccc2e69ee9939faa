"""HTTP calls with a wall-clock deadline and a byte cap, whatever the other side does (issue 11, ADR-014).

`requests`' timeout=(connect, read) bounds each socket read, not the call: a destination that dribbles
one byte per second, or never finishes its headers, held a relay worker until RQ killed the job, and
the attempt never recorded an outcome. Here the whole exchange — connect, send, headers, body — runs
under one `asyncio.timeout`, and the body is read up to `max_body_bytes` (a 20 MB answer costs
64 KiB). Nexo only needs the effect field of a success or an excerpt of an error.

One httpx.AsyncClient per process (keep-alive to each destination) on an event loop that runs in a
thread of its own: the callers are synchronous (an RQ job, the sweeper's loop), and a signal in the
main thread (rq's job-timeout alarm, SIGTERM) never lands inside the loop. The caller also waits at
most deadline + DEADLINE_MARGIN_S for the result, so even a stuck loop cannot hold it longer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from dataclasses import dataclass

import httpx

from nexo.settings import DELIVERY_WAIT_MARGIN_S

MAX_BODY_BYTES = 64 * 1024
MAX_CONNECTIONS = 20          # per process, every destination together
# What the caller allows beyond the deadline for the loop to hand the result over (bookkeeping only);
# settings.py counts it in the job time budget.
DEADLINE_MARGIN_S = DELIVERY_WAIT_MARGIN_S


class DeadlineExceeded(TimeoutError):
    """The exchange did not end within its deadline; whatever was sent may or may not have been applied."""


@dataclass(frozen=True)
class Answer:
    """What came back: the status, the first max_body_bytes of the body, and whether that was all of it."""

    status: int
    body: bytes
    complete: bool
    encoding: str | None = None

    def text(self) -> str:
        """The body read so far, decoded leniently (a cut multi-byte character becomes U+FFFD)."""
        try:
            return self.body.decode(self.encoding or "utf-8", errors="replace")
        except LookupError:     # `charset=bogus`: a label no codec knows must not lose the answer
            return self.body.decode("utf-8", errors="replace")


class HttpClient:
    """A keep-alive HTTP client whose every request ends within `deadline_s` (see the module docstring)."""

    def __init__(self, deadline_s: float, *, max_body_bytes: int = MAX_BODY_BYTES):
        self.deadline_s = deadline_s
        self.max_body_bytes = max_body_bytes
        self._pid = os.getpid()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nexo-http", daemon=True)
        self._thread.start()
        self._client: httpx.AsyncClient = self._wait(self._open(), timeout_s=10)

    async def _open(self) -> httpx.AsyncClient:
        # httpx's own timeouts are a second fence per phase; the deadline is asyncio.timeout below.
        # As many kept-alive connections as open ones: the relay lanes (relay.MAX_BATCH requests at once each)
        # find their connections open instead of paying a TCP connect and close per request (ADR-008).
        return httpx.AsyncClient(timeout=httpx.Timeout(self.deadline_s), follow_redirects=False,
                                 limits=httpx.Limits(max_connections=MAX_CONNECTIONS,
                                                     max_keepalive_connections=MAX_CONNECTIONS))

    def request(self, method: str, url: str, *, json: dict | None = None,
                headers: dict[str, str] | None = None) -> Answer:
        """One request, ended by the deadline; raises DeadlineExceeded or httpx.HTTPError."""
        if os.getpid() != self._pid:
            # The loop thread does not survive a fork: a forked child must build its own client.
            raise RuntimeError("HttpClient used in a forked process; build one per process")
        return self._wait(self._exchange(method, url, json, headers), timeout_s=self.deadline_s + DEADLINE_MARGIN_S)

    def request_all(self, calls: list[tuple[str, str, dict | None, dict[str, str] | None]]) -> list[tuple]:
        """Several requests at once, each ended by its own deadline; one (Answer or exception, seconds) per call.

        They run concurrently on the loop (keep-alive connections shared), so a batch takes about one
        deadline, not one per request (ADR-008). A call that failed gives its exception instead of an Answer.
        """
        if os.getpid() != self._pid:
            raise RuntimeError("HttpClient used in a forked process; build one per process")
        if not calls:
            return []
        try:
            return self._wait(self._exchange_all(calls), timeout_s=self.deadline_s + DEADLINE_MARGIN_S)
        except DeadlineExceeded as exc:      # the loop did not hand the results over in time: none counts
            return [(exc, self.deadline_s + DEADLINE_MARGIN_S)] * len(calls)

    async def _exchange_all(self, calls) -> list[tuple]:
        return await asyncio.gather(*(self._timed_exchange(*call) for call in calls))

    async def _timed_exchange(self, method, url, json, headers) -> tuple:
        started = time.monotonic()
        try:
            answer = await self._exchange(method, url, json, headers)
        except Exception as exc:
            return exc, time.monotonic() - started
        return answer, time.monotonic() - started

    async def _exchange(self, method, url, json, headers) -> Answer:
        # Identity encoding: the cap counts bytes on the wire, and a small gzip body cannot unfold into
        # gigabytes in memory.
        headers = {"Accept-Encoding": "identity", **(headers or {})}
        try:
            async with asyncio.timeout(self.deadline_s):
                async with self._client.stream(method, url, json=json, headers=headers) as response:
                    body, complete = bytearray(), True
                    async for chunk in response.aiter_raw():
                        body += chunk
                        if len(body) > self.max_body_bytes:
                            complete = False    # leaving the block closes this connection, unread
                            break
                    return Answer(response.status_code, bytes(body[:self.max_body_bytes]), complete,
                                  response.charset_encoding)
        except TimeoutError:
            raise DeadlineExceeded(f"sin respuesta completa en {self.deadline_s:g} s") from None

    def _wait(self, coroutine, *, timeout_s: float):
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise DeadlineExceeded(f"sin respuesta completa en {self.deadline_s:g} s") from None
        except BaseException:
            future.cancel()     # rq's job-timeout alarm or SIGTERM in the caller: stop the exchange too
            raise

    def close(self) -> None:
        """Close the connections and stop the loop thread."""
        if os.getpid() != self._pid or not self._thread.is_alive():
            return
        try:
            self._wait(self._client.aclose(), timeout_s=5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
