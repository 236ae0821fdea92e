"""The live dashboard: its websocket admits only staff who may view jobs, tells open pages at
once when jobs are enqueued and within a couple of seconds when they complete (completions fire
no NOTIFY), shares one watcher per process, survives a database outage, and closes for a user
whose session ended."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Group
from django.db import connection
from django.test import Client
from django.urls import reverse

from litejobs.jobs import claims, transitions
from litejobs.live import access, sockets, watcher
from litejobs.management.roles import READ_ONLY_GROUP, sync_read_only_group
from litejobs.routing import websocket_urlpatterns
from tests.factories import UserFactory
from tests.live_helpers import eventually, sessions_named
from tests.testapp.jobs import record

pytestmark = pytest.mark.django_db(transaction=True)

#: As a project mounts litejobs' patterns: the dashboard's route comes with them.
APPLICATION = URLRouter(websocket_urlpatterns)
SIGNED_IN = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
PATH = "/ws/litejobs/dashboard/"
INDEX = reverse("admin:app_list", kwargs={"app_label": "litejobs"})


def dashboard_socket(user) -> WebsocketCommunicator:
    """A dashboard's websocket, signed in as ``user`` (what AuthMiddlewareStack provides)."""
    socket = WebsocketCommunicator(APPLICATION, PATH)
    socket.scope["user"] = user
    return socket


async def open_dashboard(user) -> WebsocketCommunicator:
    socket = dashboard_socket(user)
    connected, code = await socket.connect(timeout=10)
    assert connected, code
    assert (await socket.receive_json_from(timeout=10))["op"] == "ready"
    return socket


async def changed(socket: WebsocketCommunicator, timeout: float = 3.0) -> bool:
    """Whether the page is told ``changed`` within ``timeout`` seconds (a timeout fails)."""
    return (await socket.receive_json_from(timeout=timeout))["op"] == "changed"


def watcher_connections() -> int:
    return sessions_named(watcher.Watcher.application_name)


@pytest.fixture
def viewer():
    """A staff user holding litejobs.view_job only."""
    return UserFactory(username="viewer", permissions=["litejobs.view_job"])


def test_only_active_staff_who_may_view_jobs_get_a_socket(clock):
    sync_read_only_group(apps.get_app_config("litejobs"))
    reader = UserFactory(username="reader")
    reader.groups.add(Group.objects.get(name=READ_ONLY_GROUP))
    admitted = [
        reader,
        UserFactory(username="viewer", permissions=["litejobs.view_job"]),
        get_user_model().objects.create_superuser("root", "root@example.com", "pw"),
    ]
    refused = [
        AnonymousUser(),
        UserFactory(username="clerk", is_staff=False, permissions=["litejobs.view_job"]),
        UserFactory(username="staff", permissions=["litejobs.view_worker"]),
        UserFactory(username="gone", is_active=False, permissions=["litejobs.view_job"]),
    ]

    async def scenario():
        for user in refused:
            socket = dashboard_socket(user)
            connected, code = await socket.connect(timeout=10)
            assert (connected, code) == (False, sockets.CLOSE_FORBIDDEN), user
            await socket.disconnect()
        for user in admitted:
            socket = await open_dashboard(user)
            await socket.disconnect()

    async_to_sync(scenario)()


def test_a_job_enqueued_elsewhere_tells_the_page_at_once(clock, viewer):
    async def scenario():
        socket = await open_dashboard(viewer)
        assert await socket.receive_nothing(timeout=1.5)  # nothing happened: nothing told
        await database_sync_to_async(lambda: record.enqueue(label="new"))()
        assert await changed(socket, timeout=0.9)  # the NOTIFY, not the next poll
        await socket.disconnect()

    async_to_sync(scenario)()


def test_a_job_claimed_then_completed_by_the_worker_path_tells_the_page(clock, viewer):
    job = record.enqueue(label="to finish")

    def claim():
        with connection.cursor() as cursor:
            [held] = claims.claim(
                cursor,
                owner="test",
                queues=[],
                limit=1,
                now=clock.now(),
                lease=timedelta(minutes=1),
            ).jobs
        return held

    def complete(held):
        with connection.cursor() as cursor:
            assert transitions.complete(cursor, held, now=clock.now(), result_json=None)

    async def scenario():
        socket = await open_dashboard(viewer)
        held = await database_sync_to_async(claim)()  # no NOTIFY: the fence moved
        assert held.id == job.id
        assert await changed(socket)
        await database_sync_to_async(complete)(held)  # no NOTIFY: the settled count moved
        assert await changed(socket)
        await socket.disconnect()

    async_to_sync(scenario)()


def test_two_dashboards_share_one_watcher(clock, viewer):
    other = UserFactory(username="other", permissions=["litejobs.view_job"])

    async def scenario():
        first = await open_dashboard(viewer)
        second = await open_dashboard(other)
        assert await database_sync_to_async(watcher_connections)() == 1
        await database_sync_to_async(lambda: record.enqueue(label="new"))()
        assert await changed(first) and await changed(second)
        await first.disconnect()
        assert await database_sync_to_async(watcher_connections)() == 1
        await second.disconnect()
        await eventually(lambda: watcher_connections() == 0)  # the last page closed it

    async_to_sync(scenario)()


def test_after_a_database_outage_the_pages_are_told_to_refresh(clock, viewer):
    def cut_and_enqueue():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND datname = current_database()",
                [watcher.Watcher.application_name],
            )
        record.enqueue(label="while nobody listens")

    async def scenario():
        socket = await open_dashboard(viewer)
        await database_sync_to_async(cut_and_enqueue)()
        assert await changed(socket, timeout=10)
        assert watcher.get_watcher().connections_made == 2
        await socket.disconnect()

    async_to_sync(scenario)()


def test_a_page_whose_session_is_deleted_is_closed_at_the_next_recheck(clock, viewer, monkeypatch):
    monkeypatch.setattr(access, "PERMISSION_RECHECK", 0)  # read it again for every event
    browser = Client()
    browser.force_login(viewer)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={browser.session.session_key}"
    socket = WebsocketCommunicator(SIGNED_IN, PATH, headers=[(b"cookie", cookie.encode())])

    async def scenario():
        connected, code = await socket.connect(timeout=10)
        assert connected, code
        assert (await socket.receive_json_from(timeout=10))["op"] == "ready"
        await database_sync_to_async(lambda: record.enqueue(label="one"))()
        assert await changed(socket)  # still signed in
        await database_sync_to_async(browser.logout)()  # the session is deleted
        await database_sync_to_async(lambda: record.enqueue(label="two"))()
        assert await socket.receive_output(timeout=5) == {
            "type": "websocket.close",
            "code": sockets.CLOSE_FORBIDDEN,
        }
        await eventually(lambda: watcher_connections() == 0)

    async_to_sync(scenario)()


def test_the_page_names_its_websocket_when_channels_is_installed(admin_client):
    html = admin_client.get(INDEX).content.decode()
    assert f'data-live="{PATH}"' in html
    assert '<span id="dashboard-live" class="litejobs-badge" data-state="connecting"' in html
