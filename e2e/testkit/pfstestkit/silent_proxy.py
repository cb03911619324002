"""A TCP relay between the operator and the API server that can make every open connection go silent:
the sockets stay open and nothing more passes either way — what a watch sees behind a stateful firewall
or a load balancer that dropped its flow, with no FIN or RST ever arriving. Connections opened after
`silence()` pass normally, so only a client that gives up on a quiet connection (Kopf's watch
`client_timeout`, the request timeout) gets going again. TLS passes through untouched: the API server's
certificate names 127.0.0.1, whatever the port."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from collections.abc import Iterator


class SilentProxy:
    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket, threading.Event]] = []
        self._closed = threading.Event()
        self.connections = 0
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            silent = threading.Event()
            with self._lock:
                self._pairs.append((client, upstream, silent))
                self.connections += 1
            thread = threading.Thread(target=self._relay, args=(client, upstream, silent), daemon=True)
            thread.start()

    def _relay(self, a: socket.socket, b: socket.socket, silent: threading.Event) -> None:
        sel = selectors.DefaultSelector()
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        try:
            while not self._closed.is_set():
                if silent.is_set():
                    # Hold both sockets open and read nothing: the peers' data sits in the kernel buffers.
                    self._closed.wait(0.5)
                    continue
                for key, _ in sel.select(timeout=0.5):
                    src: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = src.recv(65536)
                    if not data or silent.is_set():
                        if not data:
                            return
                        continue  # data that arrived as the connection went silent is dropped
                    key.data.sendall(data)
        except OSError:
            return
        finally:
            sel.close()
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()

    def silence(self) -> int:
        """Every connection open now goes silent for good; returns how many."""
        with self._lock:
            for _, _, silent in self._pairs:
                silent.set()
            return len(self._pairs)

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        for thread in self._threads:
            thread.join(timeout=5)


@contextlib.contextmanager
def silent_proxy(target: tuple[str, int]) -> Iterator[SilentProxy]:
    proxy = SilentProxy(target)
    try:
        yield proxy
    finally:
        proxy.close()
