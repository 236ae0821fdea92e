"""SIGTERM and SIGINT for litejobs' long-running processes (worker, scheduler, relay).

The first signal asks for a graceful stop: the process finishes or hands on what it holds. A
second exits at once; whatever it held is then recovered when its leases lapse, which the
fences make safe.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType


class GracefulStop:
    """Sets ``stop_event`` on the first signal, exits the process on the second."""

    def __init__(self, stop_event: threading.Event, logger: logging.Logger, name: str) -> None:
        self.stop_event = stop_event
        self.logger = logger
        #: How the log lines name the process, e.g. "worker id=…".
        self.name = name
        self.requests = 0

    def install(self) -> None:
        """Handle both signals, when called from the main thread (signals go nowhere else)."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.on_signal)
            signal.signal(signal.SIGINT, self.on_signal)

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """The handler of SIGTERM and SIGINT."""
        self.requests += 1
        if self.requests > 1:
            self.logger.warning("%s exit now (second signal); its leases lapse", self.name)
            os._exit(1)
        self.logger.info("%s stopping signal=%s", self.name, signal.Signals(signum).name)
        self.stop_event.set()
