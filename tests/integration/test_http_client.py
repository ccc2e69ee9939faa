"""The relay's HTTP client on its own, against real sockets (ADR-014, ADR-008).

What the relay tests cannot see from the outside: that a batch reuses kept-alive connections, that
threads calling at once do not share a libcurl handle, and how each way of breaking is named (the
name is the dead letter's error signature).
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nexo.outbox.http_client import (
    DEADLINE_MARGIN_S,
    ConnectError,
    DeadlineExceeded,
    HttpClient,
    RemoteProtocolError,
    TransportError,
)


class _KeepAliveHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection open between requests

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        with self.server.lock:
            self.server.requests.append((self.headers.get("Idempotency-Key"), body, self.headers.get("Expect")))
        size = int(self.headers.get("X-Answer-Size", 0))
        answer = b'{"invoice_number":"F-1"}' if not size else b"x" * size
        self.send_response(int(self.headers.get("X-Status", 201)))
        self.send_header("Content-Type", self.headers.get("X-Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveHandler)
    httpd.daemon_threads = True
    httpd.lock, httpd.connections, httpd.requests = threading.Lock(), 0, []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(httpd) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}/invoices"


def _raw_server(answer: bytes | None, *, interval_s: float = 0.0):
    """A TCP server that answers every connection with `answer` (a byte every interval_s), or never."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:  # closed however the exchange ends (the client may hang up first)
                conn.recv(65536)
                try:
                    if answer is None:
                        time.sleep(30)
                        answer_bytes = b""
                    else:
                        answer_bytes = answer
                    for i in range(len(answer_bytes)):
                        conn.sendall(answer_bytes[i : i + 1])
                        time.sleep(interval_s)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}/invoices"


def test_a_batch_goes_out_at_once_and_the_next_batches_reuse_its_connections(server):
    client = HttpClient(5.0)
    try:
        for batch in range(3):
            calls = [
                ("POST", _url(server), {"n": batch * 4 + i, "name": "Ñandú"}, {"Idempotency-Key": f"k{batch}{i}"})
                for i in range(4)
            ]
            results = client.request_all(calls)
            assert [answer.status for answer, _ in results] == [201] * 4
            assert all(answer.complete and answer.text() == '{"invoice_number":"F-1"}' for answer, _ in results)
    finally:
        client.close()
    assert len(server.requests) == 12
    assert server.connections <= 4, f"{server.connections} connections for 12 requests in batches of 4"
    sent = {key: (body, expect) for key, body, expect in server.requests}  # a batch arrives in any order
    assert sent["k00"] == ('{"n":0,"name":"Ñandú"}'.encode(), None)  # no 100-continue round trip


def test_threads_calling_at_once_each_get_their_answers(server):
    client = HttpClient(5.0)

    def ask(thread: int) -> list[int]:
        return [
            client.request("POST", _url(server), json={"t": thread, "i": i}, headers={"Idempotency-Key": f"{thread}-{i}"}).status
            for i in range(10)
        ]

    try:
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(ask, range(4))) == [[201] * 10] * 4
    finally:
        client.close()
    assert sorted(key for key, _, _ in server.requests) == sorted(f"{t}-{i}" for t in range(4) for i in range(10))


def test_an_answer_over_the_cap_is_cut_and_said_so(server):
    client = HttpClient(5.0, max_body_bytes=1000)
    try:
        answer = client.request("POST", _url(server), json={}, headers={"X-Answer-Size": "5000000"})
        small = client.request("POST", _url(server), json={}, headers={"X-Answer-Size": "1000"})
    finally:
        client.close()
    assert (answer.status, len(answer.body), answer.complete) == (201, 1000, False)
    assert (small.status, len(small.body), small.complete) == (201, 1000, True)


def test_the_charset_of_the_answer_decodes_it_and_a_bogus_one_does_not_lose_it(server):
    client = HttpClient(5.0)
    try:
        latin = client.request(
            "POST", _url(server), json={}, headers={"X-Status": "400", "X-Content-Type": "text/plain; charset=ISO-8859-1"}
        )
        bogus = client.request(
            "POST", _url(server), json={}, headers={"X-Status": "400", "X-Content-Type": 'application/json; charset="bogus"'}
        )
    finally:
        client.close()
    assert (latin.status, latin.encoding, bogus.encoding) == (400, "iso-8859-1", "bogus")
    assert bogus.text() == '{"invoice_number":"F-1"}'


def test_a_dribbled_answer_ends_at_the_deadline():
    listener, url = _raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100, interval_s=0.1)
    client = HttpClient(0.8)
    started = time.monotonic()
    try:
        [(answer, seconds)] = client.request_all([("POST", url, {}, None)])
    finally:
        client.close()
        listener.close()
    assert isinstance(answer, DeadlineExceeded)
    assert 0.7 <= seconds <= 0.8 + DEADLINE_MARGIN_S and time.monotonic() - started <= 0.8 + DEADLINE_MARGIN_S


def test_silence_ends_at_the_deadline_and_other_requests_of_the_batch_are_not_held(server):
    listener, silent = _raw_server(None)
    client = HttpClient(0.8)
    try:
        results = client.request_all([("POST", silent, {}, None), ("POST", _url(server), {}, None)])
    finally:
        client.close()
        listener.close()
    (silence, _), (answer, answered_in) = results
    assert isinstance(silence, DeadlineExceeded)
    assert answer.status == 201 and answered_in < 0.5


def test_a_refused_connection_and_a_reply_that_is_not_http_are_named():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    refused = f"http://127.0.0.1:{closed.getsockname()[1]}/"
    closed.close()
    listener, garbage = _raw_server(b"HELLO, this is not HTTP\r\n\r\n")
    client = HttpClient(2.0)
    try:
        with pytest.raises(ConnectError):
            client.request("POST", refused, json={})
        with pytest.raises(RemoteProtocolError):
            client.request("POST", garbage, json={})
    finally:
        client.close()
        listener.close()


def test_only_http_urls_are_asked():
    client = HttpClient(2.0)
    try:
        with pytest.raises(TransportError):
            client.request("GET", "file:///etc/passwd")
    finally:
        client.close()


@pytest.fixture
def untrusted_tls_server(tmp_path, server):
    """The keep-alive server behind TLS with a self-signed certificate nobody trusts."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveHandler)
    httpd.daemon_threads = True
    httpd.lock, httpd.connections, httpd.requests = threading.Lock(), 0, []
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_an_https_destination_is_verified_and_an_untrusted_certificate_is_refused(untrusted_tls_server):
    client = HttpClient(5.0)
    try:
        with pytest.raises(ConnectError):
            client.request("POST", f"https://127.0.0.1:{untrusted_tls_server.server_address[1]}/invoices", json={})
    finally:
        client.close()
    assert untrusted_tls_server.requests == [], "the request went out over an unverified connection"


_KEEP_ALIVE_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"invoice_number":"F-1"}'
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _start_destination(port: int = 0):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", _KEEP_ALIVE_SERVER, str(port)], stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def test_a_kept_alive_connection_to_a_destination_killed_and_restarted_is_not_an_error():
    """kill -9 of the destination between two requests: the cached connection is dead, the next request
    must open a new one instead of failing (a failure would spend one of the event's attempts)."""
    import signal

    first, port = _start_destination()
    client = HttpClient(3.0)
    url = f"http://127.0.0.1:{port}/invoices"
    try:
        assert client.request("POST", url, json={"n": 1}).status == 201  # its connection stays cached
        first.send_signal(signal.SIGKILL)
        first.wait()
        second, _ = _start_destination(port)
        try:
            answers = [client.request("POST", url, json={"n": n}).status for n in range(3)]
        finally:
            second.kill()
            second.wait()
            second.stdout.close()
    finally:
        client.close()
        if first.poll() is None:
            first.kill()
            first.wait()
        first.stdout.close()
    assert answers == [201, 201, 201]
