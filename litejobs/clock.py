"""The path of litejobs' clock in settings and tests: ``LITEJOBS["CLOCK"]`` names
``litejobs.clock.SystemClock`` by default (a class with ``now()``: the ``Clock`` it
implements), code reads the time with ``litejobs.clock.now()``, and tests move a
``FrozenClock`` with ``use_clock``. The code lives in ``litejobs.core.clock``."""

from .core.clock import Clock, FrozenClock, SystemClock, now, use_clock

__all__ = ["Clock", "FrozenClock", "SystemClock", "now", "use_clock"]
