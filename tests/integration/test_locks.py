"""Fenced locks in one process: tokens, waits, renewal, loss, statements, transactions."""

import threading
import time

import psycopg
import pytest
from django.db import connection, transaction

import litejobs
from litejobs.exceptions import InvalidInput
from litejobs.locks import connections as lock_connections
from litejobs.models import Lock, LockCounter
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def other_connection():
    """A connection of the test's own, apart from Django's and the locks'."""
    return lock_connections.connect("default")


def test_a_second_holder_gets_a_greater_token():
    with litejobs.lock("digest:1", ttl="5s") as first:
        pass
    with litejobs.lock("digest:1", ttl="5s") as second:
        assert second.token > first.token
    assert not first.lost and not second.lost
