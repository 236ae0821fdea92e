"""The path of litejobs' clock in settings and tests (``LITEJOBS["CLOCK"]`` names
``litejobs.clock.SystemClock`` by default; tests move a ``FrozenClock`` with ``use_clock``).

``litejobs.clock.now()``, ``use_clock``, ``FrozenClock``, ``SystemClock`` (the default of
``LITEJOBS["CLOCK"]``) and the rest are the objects of ``litejobs.core.clock``.
"""

from .core.clock import (
    Clock,
    FrozenClock,
    SystemClock,
    database_now,
    forget_configured_clock,
    get_clock,
    lease_instant,
    now,
    use_clock,
)

__all__ = [
    "Clock",
    "FrozenClock",
    "SystemClock",
    "database_now",
    "forget_configured_clock",
    "get_clock",
    "lease_instant",
    "now",
    "use_clock",
]
