"""A group's processes wait for their coordinator to listen before JAX connects to it: connecting too
early costs gRPC's one-second back-off on every start of a multi-process layout."""

import socket
import threading
import time

from grader.sandbox.worker import _await_coordinator


def test_it_returns_as_soon_as_the_coordinator_listens():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = socket.socket()

    def listen_later():
        time.sleep(0.2)
        server.bind(("127.0.0.1", port))
        server.listen()

    thread = threading.Thread(target=listen_later)
    thread.start()
    began = time.monotonic()
    try:
        left = _await_coordinator(f"127.0.0.1:{port}", timeout_s=10)
        waited = time.monotonic() - began
    finally:
        thread.join()
        server.close()
    assert 0.2 <= waited < 10  # it waited for the listener, and not for its whole time limit
    assert 0 < left <= 10 - waited + 0.01  # and JAX's connect gets what is left of the limit


def test_a_coordinator_that_never_listens_is_left_to_jax_to_report():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    began = time.monotonic()
    assert _await_coordinator(f"127.0.0.1:{port}", timeout_s=0.3) == 0.0
    assert 0.3 <= time.monotonic() - began < 5
