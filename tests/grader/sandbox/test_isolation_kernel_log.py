"""The kernel log names other workers' processes and control groups (an OOM kill's report): the filter refuses
it to a worker even where the kernel would let any process read it (``kernel.dmesg_restrict`` 0)."""

import ctypes
import errno
import os

import pytest

from grader.sandbox import seccomp

_SYSLOG_ACTION_SIZE_BUFFER = 10


def _log_size(filtered: bool) -> int:
    """What syslog(2) says of the log's size in a child (minus the errno where it refuses), with or without the
    worker's filter; the child keeps this process's right to read the log (CAP_SYSLOG)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if filtered:
                seccomp.load(tcp=False)
            libc = ctypes.CDLL(None, use_errno=True)
            size = libc.klogctl(_SYSLOG_ACTION_SIZE_BUFFER, None, 0)
            os.write(write, str(size if size >= 0 else -ctypes.get_errno()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        told = f.read()
    os.waitpid(pid, 0)
    return int(told)


@pytest.mark.skipif(os.geteuid() != 0, reason="reading the kernel log without the filter needs CAP_SYSLOG (root)")
def test_the_kernel_log_is_refused_to_a_worker_that_could_otherwise_read_it():
    assert _log_size(filtered=False) > 0
    assert _log_size(filtered=True) == -errno.EPERM
