"""The boundary protocol: plain data round-trips; nothing executable or oversized gets through."""

from __future__ import annotations

import io
import os

import ml_dtypes
import numpy as np
import pytest

from grader import protocol


def roundtrip(value):
    r, w = os.pipe()
    try:
        tree, blobs = protocol.encode(value)
        protocol.send(w, {"value": tree}, blobs)
        header, got_blobs = protocol.receive(r, deadline=None)
        return protocol.decode(header["value"], got_blobs)
    finally:
        os.close(r)
        os.close(w)


def test_plain_values_round_trip():
    value = {"a": [1, 2.5, None, "s", True], "b": (np.arange(6, dtype=np.int16).reshape(2, 3), np.float32(1.5)),
             "c": float("nan"), "d": 1 + 2j}
    got = roundtrip(value)
    assert got["a"] == [1, 2.5, None, "s", True]
    assert isinstance(got["b"], tuple) and got["b"][0].dtype == np.int16
    np.testing.assert_array_equal(got["b"][0], value["b"][0])
    assert got["b"][1].shape == () and got["b"][1] == np.float32(1.5)
    assert np.isnan(got["c"]) and got["d"] == 1 + 2j


def test_an_array_spec_crosses_as_shape_and_dtype_only():
    spec = protocol.ArraySpec((3, 4), "float32")
    assert roundtrip({"x": (spec, [spec])}) == {"x": (spec, [spec])}
    tree, blobs = protocol.encode(spec)
    assert blobs == [] and tree == {"__spec__": [[3, 4], "float32"]}
    with pytest.raises(protocol.ProtocolError, match="array spec of dtype object refused"):
        protocol.decode({"__spec__": [[2], "object"]}, [])
    for forged in (5, [[2], {"a": 1}], [[{}], "float32"], [[2], "not a dtype"], [[2], "float32", "x"]):
        with pytest.raises(protocol.ProtocolError):  # a worker's forged reply is refused, never a TypeError
            protocol.decode({"__spec__": forged}, [])


def test_each_process_gets_only_its_own_element_of_a_per_process_argument():
    rows = (np.zeros((2, 3)), np.ones((4, 3)))
    request = {"args": (protocol.PerProcess(rows), 7), "kwargs": {"scale": protocol.PerProcess((1.0, 2.0)), "k": "x"}}
    for i in (0, 1):
        own = protocol.for_process(request, i)
        assert own["args"][0] is rows[i] and own["args"][1] == 7 and own["kwargs"] == {"scale": (1.0, 2.0)[i], "k": "x"}
        tree, blobs = protocol.encode(own)
        assert len(blobs) == 1  # the other process's rows are not in what this one receives
    with pytest.raises(protocol.UnsupportedValue, match="PerProcess"):  # a single worker has no process to pick
        protocol.encode(request)


def test_ndarray_subclass_arrives_as_plain_ndarray():
    class Liar(np.ndarray):
        def __eq__(self, other):
            return True

    got = roundtrip(np.zeros(3).view(Liar))
    assert type(got) is np.ndarray


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4])
def test_jaxs_narrow_dtypes_cross_as_themselves(dtype):
    """A student's bfloat16 result is graded as bfloat16 (its dtype is part of the answer), not refused."""
    value = np.array([[1.5, -2.0], [0.0, 3.0]]).astype(dtype)
    got = roundtrip({"x": value})["x"]
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 2)
    np.testing.assert_array_equal(got.astype(np.float64), value.astype(np.float64))


@pytest.mark.parametrize("name, carrier", [("__class__", np.uint16), ("float32", np.uint32), ("void", np.uint8),
                                           ("bfloat16", np.uint8), ("bfloat16", np.int16)])
def test_a_narrow_dtype_is_only_a_name_of_ml_dtypes_on_its_own_carrier(name, carrier):
    tree, blobs = protocol.encode(np.arange(4, dtype=carrier))
    with pytest.raises(protocol.ProtocolError, match="refused"):
        protocol.decode(dict(tree, dtype=name), blobs)


@pytest.mark.parametrize("value, named", [
    (object(), "an object of type object"),
    (lambda: 1, "an object of type function"),
    (np.array([object()], dtype=object), "dtype object"),
    (np.array(["a"]), "dtype <U1"),
    (np.zeros(2, dtype="V2"), "dtype \\|V2"),
    (np.zeros(2, dtype=[("a", "<i4")]), "dtype"),
    ({1: 2}, "non-string keys"),
])
def test_unsupported_values_are_refused_by_name(value, named):
    with pytest.raises(protocol.UnsupportedValue, match=named):
        protocol.encode(value)


def test_a_pickled_object_array_is_refused_on_decode():
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        protocol.decode({"__array__": 0}, [buf.getvalue()])


@pytest.mark.parametrize("size, refusal", [(protocol.MAX_MESSAGE_BYTES + 1, "message larger than 512 MiB"),
                                           (protocol.MAX_HEADER_BYTES + 1, "a header larger than 16 MiB")])
def test_an_oversized_message_or_header_is_refused_before_reading_it(size, refusal):
    r, w = os.pipe()
    try:
        os.write(w, protocol._LEN.pack(size))
        with pytest.raises(protocol.ProtocolError, match=refusal):
            protocol.receive(r, deadline=None)
    finally:
        os.close(r)
        os.close(w)


def test_a_failure_reply_is_cut_to_size_made_valid_text_and_given_a_known_kind():
    """Student code can write the reply itself: 24 MiB of message, a lone surrogate, a kind of its own."""
    from grader.errors import REPLY_TEXT_CHARS, StudentFailure

    huge = "y" * (24 << 20)
    failure = StudentFailure.from_reply({"ok": False, "kind": "passed_really", "message": huge, "detail": huge,
                                         "where": "\ud800.py:1", "line": None})
    assert failure.kind == "raised"
    assert failure.message == "y" * REPLY_TEXT_CHARS + f" [... {(24 << 20) - REPLY_TEXT_CHARS} more characters cut]"
    assert len(failure.detail) == len(failure.message) and failure.line is None
    assert failure.where == "?.py:1"
    assert StudentFailure.from_reply({"kind": "timeout", "message": "m"}).kind == "timeout"
    assert StudentFailure.from_reply({"kind": ["timeout"], "message": "m"}).kind == "raised"  # unhashable: no crash


def test_timeout_and_closed_channel_are_distinguished():
    import time

    r, w = os.pipe()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.receive(r, deadline=time.monotonic() + 0.05)
    os.close(w)
    with pytest.raises(protocol.ChannelClosed):
        protocol.receive(r, deadline=time.monotonic() + 1)
    os.close(r)
