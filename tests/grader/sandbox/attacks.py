"""Code that the hostile submissions of these tests share (as source text, run in a confined worker).

``PROCESS_CALLS``: the system calls that name another process, through libc (``sys_call`` for those
Python has no function for, x86_64 numbers); ``TRY_STEPS``: the loop that tries each step of an
attack, a step that does not raise OSError being an escape. Neither holds braces, so either may
precede a template that is filled with ``str.format``.
"""

PROCESS_CALLS = '''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def sys_call(number, *args):
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def ptrace_attach(pid):
    if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")


class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def read_memory(pid):
    buf = ctypes.create_string_buffer(8)
    local, remote = IOVec(ctypes.addressof(buf), 8), IOVec(0x400000, 8)
    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0:
        raise OSError(ctypes.get_errno(), "process_vm_readv")
'''

TRY_STEPS = '''

def escapes(steps):
    """The names of the (name, step) pairs whose step did not raise OSError: each one an escape."""
    found = []
    for name, step in steps:
        try:
            step()
            found.append(name)
        except OSError:
            pass
    return found
'''
