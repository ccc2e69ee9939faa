"""HTTP calls with a wall-clock deadline and a byte cap, whatever the other side does (guarantee 16, ADR-014).

`requests`' timeout=(connect, read) bounds each socket read, not the call: a destination that dribbles
one byte per second, or never finishes its headers, held a relay worker until RQ killed the job, and
the attempt never recorded an outcome. Here every request is a libcurl transfer (pycurl) with
CURLOPT_TIMEOUT_MS: one deadline over connect, send, headers and body, enforced by libcurl itself.
The body is read up to `max_body_bytes` (a 20 MB answer costs 64 KiB); Nexo only needs the effect
field of a success or an excerpt of an error.

Several requests go out at once on one `CurlMulti`, driven by the calling thread: no event loop and no
extra thread, and the protocol work runs in C (ADR-014 says why not httpx's async stack, ADR-008 what
it cost a relay worker). Each multi handle keeps its connections alive between calls; callers running at
the same time (the relay's lanes, web threads asking about a key) each take a multi of their own from
a small free list, since a libcurl handle must not be used by two threads at once.
"""

from __future__ import annotations

import ipaddress
import json as jsonlib
import os
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import Message

import certifi
import pycurl

from nexo.settings import DELIVERY_WAIT_MARGIN_S

MAX_BODY_BYTES = 64 * 1024
MAX_CONNECTIONS = 30  # kept alive per multi handle, every destination together
# What the caller allows beyond the deadline before it gives up on libcurl (bookkeeping only);
# settings.py counts it in the job time budget.
DEADLINE_MARGIN_S = DELIVERY_WAIT_MARGIN_S
# How long one wait for socket activity may last: a rq job-timeout alarm or SIGTERM in the calling
# thread is handled between two waits.
POLL_S = 0.5


class DeadlineExceeded(TimeoutError):
    """The exchange did not end within its deadline; whatever was sent may or may not have been applied."""


class TransportError(OSError):
    """The exchange broke before a whole answer arrived (refused, reset, a reply that is not HTTP…).

    Subclasses name the failure, because the class name is the dead letter's error signature.
    """


class ConnectError(TransportError):
    """The destination could not be reached: name not resolved, connection refused."""


class PrivateAddress(ConnectError):
    """A webhook's host resolved to an address that is not public (SSRF, ADR-022): nothing was sent."""


class RemoteProtocolError(TransportError):
    """The destination answered something that is not a well-formed HTTP answer."""


class ReadError(TransportError):
    """The connection broke while sending the request or reading the answer."""


# libcurl error codes (curl.h) → the failure they are, for the error signature.
_CURL_ERRORS = {
    pycurl.E_COULDNT_RESOLVE_HOST: ConnectError,
    pycurl.E_COULDNT_RESOLVE_PROXY: ConnectError,
    pycurl.E_COULDNT_CONNECT: ConnectError,
    pycurl.E_SSL_CONNECT_ERROR: ConnectError,
    pycurl.E_PEER_FAILED_VERIFICATION: ConnectError,  # the destination's certificate is not trusted
    pycurl.E_URL_MALFORMAT: ConnectError,
    pycurl.E_FTP_WEIRD_SERVER_REPLY: RemoteProtocolError,  # 8, CURLE_WEIRD_SERVER_REPLY since libcurl 7.51
    pycurl.E_PARTIAL_FILE: RemoteProtocolError,
    pycurl.E_GOT_NOTHING: RemoteProtocolError,
    pycurl.E_UNSUPPORTED_PROTOCOL: RemoteProtocolError,  # an HTTP/0.9 reply, or a file:// URL
    pycurl.E_BAD_CONTENT_ENCODING: RemoteProtocolError,
    pycurl.E_SEND_ERROR: ReadError,
    pycurl.E_RECV_ERROR: ReadError,
}


def encode_json(payload: dict) -> bytes:
    """The exact bytes a JSON body is sent as (a webhook's signature is computed over them)."""
    return jsonlib.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


# One request: (method, URL, JSON body as a dict or its encoded bytes, headers[, public_only]).
Call = tuple


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
        except LookupError:  # `charset=bogus`: a label no codec knows must not lose the answer
            return self.body.decode("utf-8", errors="replace")


class _Transfer:
    """One request on a multi handle: its easy handle, the body read so far, and when it started."""

    def __init__(
        self,
        client: HttpClient,
        method: str,
        url: str,
        json: dict | bytes | None,
        headers: dict[str, str] | None,
        public_only: bool = False,
    ):
        self.body = bytearray()
        self.refused: str | None = None  # the non-public address a public_only transfer would have used
        self._sockets: list[socket.socket] = []  # handed to libcurl, which works on a duplicate of each
        self.cut = False  # the answer was longer than the cap: stopped reading
        self.started = time.monotonic()
        self.result: Answer | BaseException | None = None
        self.seconds = 0.0
        self._cap = client.max_body_bytes
        self._deadline_s = client.deadline_s
        curl = self.curl = pycurl.Curl()
        curl.setopt(pycurl.URL, url)
        # Only http(s), also after a redirect (none are followed): a destination URL is a setting, but a
        # typo such as file:// must fail as a transport error, not read a file.
        curl.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        curl.setopt(pycurl.NOSIGNAL, 1)  # no SIGALRM from libcurl: rq's job timeout owns that signal
        # https destinations are verified against certifi's CA bundle (what httpx used), not a path
        # compiled into the wheel's libcurl that a given host may not have.
        curl.setopt(pycurl.CAINFO, certifi.where())
        deadline_ms = max(1, int(client.deadline_s * 1000))
        curl.setopt(pycurl.TIMEOUT_MS, deadline_ms)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, deadline_ms)
        # No Accept-Encoding (libcurl sends none unless asked): the cap counts bytes on the wire, and a
        # small gzip body cannot unfold into gigabytes in memory. No "Expect: 100-continue" round trip.
        lines = ["Expect:"] + [f"{name}: {value}" for name, value in (headers or {}).items()]
        if json is not None:
            curl.setopt(pycurl.POSTFIELDS, json if isinstance(json, bytes) else encode_json(json))
            lines.append("Content-Type: application/json")
        if public_only:
            # A webhook URL is written by an integration, not by the operator: it may name a host that
            # resolves into the distributor's own network. The address is checked where libcurl is about
            # to connect to it (no window for DNS rebinding), on a connection of its own: a kept-alive one
            # was opened without this check (ADR-022).
            curl.setopt(pycurl.OPENSOCKETFUNCTION, self._open_public_socket)
            curl.setopt(pycurl.FRESH_CONNECT, 1)
            curl.setopt(pycurl.FORBID_REUSE, 1)
        if method != ("POST" if json is not None else "GET"):
            curl.setopt(pycurl.CUSTOMREQUEST, method)
        curl.setopt(pycurl.HTTPHEADER, lines)
        curl.setopt(pycurl.WRITEFUNCTION, self._receive)

    def _open_public_socket(self, _purpose, address):
        host = address.addr[0] if address.addr else ""
        try:
            public = ipaddress.ip_address(host.split("%")[0]).is_global
        except ValueError:
            public = False
        if not public:
            self.refused = host
            return pycurl.SOCKET_BAD
        opened = socket.socket(address.family, address.socktype, address.protocol)
        self._sockets.append(opened)
        return opened

    def _receive(self, chunk: bytes):
        self.body += chunk
        if len(self.body) > self._cap:
            self.cut = True
            return 0  # any other count than len(chunk) makes libcurl stop this transfer
        return None

    def finish(self, errno: int = 0, message: str = "") -> None:
        """Turn how libcurl ended the transfer into an Answer or an exception (the caller closes the handle)."""
        curl = self.curl
        self.seconds = time.monotonic() - self.started
        for opened in self._sockets:
            opened.close()
        if errno == 0 or (errno == pycurl.E_WRITE_ERROR and self.cut):
            self.result = Answer(
                curl.getinfo(pycurl.RESPONSE_CODE),
                bytes(self.body[: self._cap]),
                complete=not self.cut,
                encoding=_charset(curl.getinfo(pycurl.CONTENT_TYPE)),
            )
        elif self.refused is not None:
            self.result = PrivateAddress(f"la dirección {self.refused} no es pública: no se envió nada")
        elif errno == pycurl.E_OPERATION_TIMEDOUT:
            self.result = DeadlineExceeded(f"sin respuesta completa en {self._deadline_s:g} s")
        else:
            self.result = _CURL_ERRORS.get(errno, TransportError)(message or f"libcurl error {errno}")


def _charset(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, if any."""
    if not content_type or "charset" not in content_type.lower():
        return None
    message = Message()
    message["content-type"] = content_type
    return message.get_content_charset()


class HttpClient:
    """An HTTP client whose every request ends within `deadline_s` (see the module docstring)."""

    def __init__(self, deadline_s: float, *, max_body_bytes: int = MAX_BODY_BYTES):
        self.deadline_s = deadline_s
        self.max_body_bytes = max_body_bytes
        self._pid = os.getpid()
        self._idle: list[pycurl.CurlMulti] = []  # multi handles with their kept-alive connections
        self._lock = threading.Lock()
        self._closed = False

    def request(self, method: str, url: str, *, json: dict | None = None, headers: dict[str, str] | None = None) -> Answer:
        """One request, ended by the deadline; raises DeadlineExceeded or TransportError."""
        [(answer, _)] = self.request_all([(method, url, json, headers)])
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def request_all(self, calls: Sequence[Call]) -> list[tuple]:
        """Several requests at once, each ended by its own deadline; one (Answer or exception, seconds) per call.

        They run concurrently on one multi handle, so a batch takes about one deadline, not one per
        request (ADR-008). A call that failed gives its exception instead of an Answer.
        """
        if os.getpid() != self._pid:
            # A forked child shares the parent's sockets: it must build its own client.
            raise RuntimeError("HttpClient used in a forked process; build one per process")
        if not calls:
            return []
        multi = self._take()
        transfers: list[_Transfer] = []
        try:
            for call in calls:
                transfer = _Transfer(self, *call)
                transfers.append(transfer)
                multi.add_handle(transfer.curl)
            self._run(multi, {id(t.curl): t for t in transfers})
        finally:
            for transfer in transfers:
                multi.remove_handle(transfer.curl)
                transfer.curl.close()
            self._give_back(multi)
        return [(t.result, t.seconds) for t in transfers]

    def _run(self, multi: pycurl.CurlMulti, running: dict[int, _Transfer]) -> None:
        # libcurl ends each transfer at its TIMEOUT_MS; the hard stop below is a second fence, in case it
        # did not (then none of the unfinished transfers counts as answered).
        hard_stop = time.monotonic() + self.deadline_s + DEADLINE_MARGIN_S
        while running:
            while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                pass
            while True:
                queued, succeeded, failed = multi.info_read()
                for curl in succeeded:
                    running.pop(id(curl)).finish()
                for curl, errno, message in failed:
                    running.pop(id(curl)).finish(errno, message)
                if not queued:
                    break
            if not running:
                return
            left = hard_stop - time.monotonic()
            if left <= 0:
                for transfer in running.values():
                    transfer.seconds = time.monotonic() - transfer.started
                    transfer.result = DeadlineExceeded(f"sin respuesta completa en {self.deadline_s:g} s")
                return
            multi.select(min(POLL_S, left))

    def _take(self) -> pycurl.CurlMulti:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        multi = pycurl.CurlMulti()
        multi.setopt(pycurl.M_MAXCONNECTS, MAX_CONNECTIONS)
        return multi

    def _give_back(self, multi: pycurl.CurlMulti) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(multi)
                return
        multi.close()

    def close(self) -> None:
        """Close the kept-alive connections; a request still running closes its own when it ends."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
        for multi in idle:
            multi.close()
