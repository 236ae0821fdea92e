"""Helpers of the live pages' websocket tests (work queues, the dashboard)."""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from django.db import connection


def sessions_named(application_name: str) -> int:
    """How many sessions of this test database carry ``application_name`` (a live page's
    LISTEN connection names itself so)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND datname = current_database()",
            [application_name],
        )
        return cursor.fetchone()[0]


async def eventually(predicate, timeout: float = 5.0) -> None:
    """Wait until ``predicate()`` (run in a thread: it may read the database) holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await database_sync_to_async(predicate)():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)
