"""SIGTERM means what Ctrl-C means: stop, kill the workers, remove the scratch, exit 130.

Python turns SIGINT into KeyboardInterrupt but lets SIGTERM end the process on the spot, which
would leave the workers (in sessions of their own) and the scratch copy of the student's code
behind. Both signals raise KeyboardInterrupt here; once one has, further ones are ignored, so a
second Ctrl-C cannot cut the clean-up short.
"""

from __future__ import annotations

import signal

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _stop(signum, frame):
    for sig in _SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """Install the handler for both signals (leaving alone one this process was started to ignore)."""
    for sig in _SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _stop)
