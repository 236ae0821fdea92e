"""``runworker --pool processes``: N single-threaded worker processes under one parent.

For CPU-bound bodies that threads would serialise on the GIL. The parent only forwards
signals and restarts a child that died unexpectedly; each child is a full ``Worker`` with its
own Worker row, leases and drain.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from types import FrameType

logger = logging.getLogger(__name__)


class Supervisor:
    """Keeps ``processes`` children running ``manage.py runworker --pool threads``."""

    def __init__(self, processes: int, child_args: list[str]) -> None:
        self.processes = max(1, processes)
        self.child_args = child_args
        self.children: list[subprocess.Popen[bytes]] = []
        self.stopping = False
        self._signals = 0

    def _spawn(self) -> subprocess.Popen[bytes]:
        command = [sys.executable, sys.argv[0], "runworker", "--pool", "threads", *self.child_args]
        return subprocess.Popen(command)  # noqa: S603 - our own interpreter and manage.py

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        self.stopping = True
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGKILL if self._signals > 1 else signal.SIGTERM)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._forward)
        signal.signal(signal.SIGINT, self._forward)
        self.children = [self._spawn() for _ in range(self.processes)]
        logger.info("worker pool start processes=%s parent=%s", self.processes, os.getpid())
        while True:
            alive = 0
            for index, child in enumerate(self.children):
                code = child.poll()
                if code is None:
                    alive += 1
                elif not self.stopping and code != 0:
                    logger.warning("worker process %s exited with %s; restarting", child.pid, code)
                    time.sleep(1.0)
                    self.children[index] = self._spawn()
                    alive += 1
            if alive == 0:
                return 0
            time.sleep(0.2)
