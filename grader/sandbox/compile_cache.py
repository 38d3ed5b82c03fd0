"""JAX's persistent compilation cache as a worker uses it: read by name, written only where trusted.

A worker may look up compiled programs in two folders and write to at most one:

- ``shared``: the cache that only trusted processes fill (grader.workers.compile_cache publishes
  what they compiled). Every worker reads it, by name only: an entry's name is a hash of the program,
  its compile options, the devices and the versions (JAX's key), so a worker can only open an entry
  for a program it could build itself, and its confinement lets it neither list the folder nor write
  to it (Landlock: read files, not folders; as root, a folder of mode 0711 owned by the grader).
- ``own``: the worker's own folder, which it may write (a ``kept`` folder of its confinement): a
  trusted worker's outbox (a clean worker, or a worker of ``grade check`` running the reference
  solutions), which the grader publishes to ``shared`` once the worker is gone, or, in a student's own
  run of their exercises, that student's own cache (grader.workers.compile_cache.own_folder).

A student's worker in any other run (``--submission``, a batch, GitHub Classroom) gets no ``own``, so
JAX never even serialises what it compiles. Before any of this, :func:`protected` checks that the worker cannot create a file in
``shared``: where it can (a machine whose confinement does not hold), the worker does not read it.

JAX 0.10 has one cache folder per process; this module installs a cache of its own through JAX's
``CacheInterface`` (jax._src.compilation_cache), which reads both folders and writes each entry
whole (a temporary name, then a rename), so an entry that exists is never half-written.
"""

from __future__ import annotations

import contextlib
import os

SUFFIX = "-cache"  # JAX's file name for an entry: <key>-cache (jax._src.lru_cache)
NEVER_S = 1e9  # a minimum compile time no program reaches: JAX then never serialises one for the cache


def protected(shared: str) -> bool:
    """Whether this process cannot create a file in ``shared`` (what a student's code must not do)."""
    try:
        fd = os.open(os.path.join(shared, f".write-check-{os.getpid()}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return True
    os.close(fd)
    os.unlink(os.path.join(shared, f".write-check-{os.getpid()}"))
    return False


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _cache_class():
    from jax._src.compilation_cache_interface import CacheInterface

    class Entries(CacheInterface):
        """Looks an entry up in each of ``read`` in turn; writes new ones to ``write`` ("": nowhere)."""

        def __init__(self, read: list[str], write: str):
            self._read, self._write = read, write
            self._path = write or (read[0] if read else "")

        def get(self, key: str) -> bytes | None:
            for folder in self._read:
                value = _read(os.path.join(folder, key + SUFFIX))
                if value is not None:
                    return value
            return None

        def put(self, key: str, value: bytes) -> None:
            if not self._write:
                return
            final = os.path.join(self._write, key + SUFFIX)
            partial = os.path.join(self._write, f".{key}.{os.getpid()}.partial")
            try:  # a full disk, or a student's own cache emptied by another of their runs: the program still runs
                with open(partial, "wb") as f:
                    f.write(value)
                os.replace(partial, final)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(partial)

        def clear(self) -> None:
            raise NotImplementedError("a worker never clears a compile cache")

    return Entries


def use(shared: str, own: str, locations: bool = False) -> str:
    """Turn JAX's persistent cache on in this process: read ``own`` then ``shared``, write ``own``.

    ``locations``: whether a program's locations are part of its entry's key. JAX's key leaves them out, so
    that the same staging compiled from two files shares one entry; a clean worker reads them back from the
    compiled program (grader.sandbox.program_labels' labels, which code is the student's), so there two
    programs that differ only in them must not share one, or the second would read the first one's. There
    no Python frame enters a location (the clean worker's own names every operation: program_labels), so a
    program's key stays the same from one run, and one copy of the engine, to the next.

    Returns how the shared cache is used, for the worker's ready message: "read", "" (none given), or
    why not ("writable here": this process could write it, so it is not trusted).
    """
    how = ""
    if shared:
        how = "read" if protected(shared) else "writable here"
    read = [f for f in (own, shared if how == "read" else "") if f]
    if not read:
        return how
    import jax
    from jax._src import compilation_cache

    jax.config.update("jax_compilation_cache_dir", read[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0 if own else NEVER_S)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # else JAX names the folder in every program's compile options (for XLA's GPU caches), and so in
    # every key: no two folders, hence no outbox and the shared folder, would ever share an entry
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    jax.config.update("jax_compilation_cache_include_metadata_in_key", locations)
    if locations:  # the key then holds the operations' names, not the frames of a run's own copy of the engine
        jax.config.update("jax_traceback_in_locations_limit", 0)
    with compilation_cache._cache_initialized_mutex:
        compilation_cache._cache = _cache_class()(read, own)
        compilation_cache._cache_initialized = True
    return how
