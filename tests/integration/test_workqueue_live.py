"""Live updates: a work-queue page's socket, fed by PostgreSQL NOTIFY (one LISTEN per process)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Permission
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.utils import timezone

from litejobs import workqueues
from litejobs.live import access
from litejobs.routing import websocket_path, websocket_urlpatterns
from litejobs.workqueues import listing, live, sockets
from tests.factories import UserFactory
from tests.live_helpers import eventually, sessions_named
from tests.testapp.factories import DisputeFactory

pytestmark = pytest.mark.django_db(transaction=True)

APPLICATION = URLRouter(websocket_urlpatterns)
SIGNED_IN = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def page_socket(user, queue: str = "disputes") -> WebsocketCommunicator:
    """A queue page's websocket, signed in as ``user`` (what AuthMiddlewareStack provides)."""
    socket = WebsocketCommunicator(APPLICATION, websocket_path(queue))
    socket.scope["user"] = user
    return socket


async def open_page(user, ids) -> WebsocketCommunicator:
    """Connect, wait for the server to listen, send the rows on screen, read their state."""
    socket = page_socket(user)
    connected, code = await socket.connect(timeout=10)
    assert connected, code
    assert (await socket.receive_json_from(timeout=10))["op"] == "ready"
    await socket.send_json_to({"op": "watch", "ids": list(ids)})
    snapshot = await socket.receive_json_from(timeout=10)
    assert snapshot["op"] == "items"
    socket.snapshot = snapshot["items"]
    return socket


def listen_connections() -> int:
    return sessions_named("litejobs-live")


def test_the_socket_receives_an_update_when_someone_claims(clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))

    async def scenario():
        socket = await open_page(bob, [item.pk])
        assert socket.snapshot == [listing.as_event(item)]
        await database_sync_to_async(workqueues.claim)(item.pk, alice)
        event = await socket.receive_json_from(timeout=5)
        assert event["op"] == "update" and event["id"] == item.pk
        assert event["state"] == "claimed" and event["holder"] == "alice"
        assert event["holder_id"] == alice.pk
        assert event["claim_expires_at"].startswith("2026-03-01T13:00:00")
        assert event["now"].startswith("2026-03-01T12:00:00")  # the server's (injected) clock

        await database_sync_to_async(workqueues.resolve)(item.pk, alice, "refund")
        event = await socket.receive_json_from(timeout=5)
        assert (event["state"], event["resolution"], event["resolver"]) == (
            "done",
            "refund",
            "alice",
        )
        assert event["holder"] == "" and event["claim_expires_at"] is None

        await database_sync_to_async(
            lambda: workqueues.enqueue_item("disputes", DisputeFactory())
        )()
        event = await socket.receive_json_from(timeout=5)
        assert event == {"op": "insert", "queue": "disputes", "count": 1, "now": event["now"]}
        await socket.disconnect()

    async_to_sync(scenario)()


def test_a_change_that_is_rolled_back_is_never_shown(clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())

    def claim_then_roll_back():
        from django.db import transaction

        with pytest.raises(RuntimeError), transaction.atomic():
            workqueues.claim(item.pk, alice)
            raise RuntimeError("changed my mind")

    async def scenario():
        socket = await open_page(bob, [item.pk])
        await database_sync_to_async(claim_then_roll_back)()
        assert await socket.receive_nothing(timeout=0.5)
        await socket.disconnect()

    async_to_sync(scenario)()


def test_only_users_who_may_work_the_queue_get_a_socket(clock, reviewers):
    carol = reviewers[2]

    async def scenario():
        for user, queue in (
            (carol, "disputes"),
            (AnonymousUser(), "disputes"),
            (reviewers[0], "nope"),
        ):
            socket = page_socket(user, queue)
            connected, code = await socket.connect(timeout=10)
            assert not connected and code == 4403
            await socket.disconnect()

    async_to_sync(scenario)()


def signed_in_socket(user) -> tuple[Client, WebsocketCommunicator]:
    """A queue page's websocket as a browser opens it: the session cookie of a real login,
    read by channels' AuthMiddlewareStack (as the ASGI application mounts the socket)."""
    browser = Client()
    browser.force_login(user)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={browser.session.session_key}"
    socket = WebsocketCommunicator(
        SIGNED_IN, websocket_path("disputes"), headers=[(b"cookie", cookie.encode())]
    )
    return browser, socket


def test_a_user_without_staff_status_gets_no_socket(clock, reviewers):
    clerk = UserFactory(
        username="clerk",
        is_staff=False,
        permissions=["testapp.review_dispute", "testapp.view_dispute"],
    )

    communicators = (page_socket(clerk), signed_in_socket(clerk)[1])

    async def scenario():
        for socket in communicators:
            connected, code = await socket.connect(timeout=10)
            assert not connected and code == sockets.CLOSE_FORBIDDEN
            await socket.disconnect()

    async_to_sync(scenario)()


@pytest.mark.parametrize("ends", ["log-out", "password-change", "not-staff", "session-expiry"])
def test_a_page_whose_session_ends_stops_receiving_and_the_socket_closes(
    clock, reviewers, monkeypatch, ends
):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    monkeypatch.setattr(access, "PERMISSION_RECHECK", 0)  # read it again for every event
    browser, socket = signed_in_socket(bob)
    session_key = browser.session.session_key

    def end_the_session():
        if ends == "log-out":
            browser.logout()  # the session is deleted, as the admin's log out does
        elif ends == "password-change":  # the session's auth hash no longer matches
            bob.set_password("a-new-password-for-bob")
            bob.save()
        elif ends == "not-staff":
            get_user_model().objects.filter(pk=bob.pk).update(is_staff=False)
        else:
            Session.objects.filter(pk=session_key).update(expire_date=timezone.now())

    async def scenario():
        connected, code = await socket.connect(timeout=10)
        assert connected, code
        assert (await socket.receive_json_from(timeout=10))["op"] == "ready"
        await database_sync_to_async(workqueues.claim)(item.pk, alice)
        assert (await socket.receive_json_from(timeout=5))["holder"] == "alice"  # still in
        await database_sync_to_async(end_the_session)()
        await database_sync_to_async(workqueues.release)(item.pk, alice)
        assert await socket.receive_output(timeout=5) == {
            "type": "websocket.close",
            "code": sockets.CLOSE_FORBIDDEN,
        }
        await eventually(lambda: listen_connections() == 0)

    async_to_sync(scenario)()


@pytest.mark.parametrize("revoke", ["deactivate", "remove-permission"])
def test_a_user_who_loses_the_queue_stops_receiving_and_the_socket_closes(
    clock, reviewers, monkeypatch, revoke
):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    monkeypatch.setattr(access, "PERMISSION_RECHECK", 0)  # read it again for every event

    def take_away_from_bob():
        if revoke == "deactivate":
            get_user_model().objects.filter(pk=bob.pk).update(is_active=False)
        else:
            bob.user_permissions.remove(
                Permission.objects.get(content_type__app_label="testapp", codename="review_dispute")
            )

    async def scenario():
        watching = await open_page(alice, [item.pk])
        socket = await open_page(bob, [item.pk])
        await database_sync_to_async(take_away_from_bob)()  # bob's scope user still says yes
        await database_sync_to_async(workqueues.claim)(item.pk, alice)
        assert await socket.receive_output(timeout=5) == {
            "type": "websocket.close",
            "code": sockets.CLOSE_FORBIDDEN,
        }
        # alice, still allowed, keeps receiving.
        assert (await watching.receive_json_from(timeout=5))["holder"] == "alice"
        await watching.disconnect()
        await eventually(lambda: listen_connections() == 0)

    async_to_sync(scenario)()


def test_the_permission_is_read_again_at_most_every_few_seconds(clock, reviewers, monkeypatch):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    reads = []
    monkeypatch.setattr(access, "PERMISSION_RECHECK", 60)
    real = access.Guard.still_allowed
    monkeypatch.setattr(access.Guard, "still_allowed", lambda *a: reads.append(a) or real(*a))

    async def scenario():
        socket = await open_page(bob, [item.pk])
        await database_sync_to_async(workqueues.claim)(item.pk, alice)
        await database_sync_to_async(workqueues.release)(item.pk, alice)
        for _ in range(2):
            await socket.receive_json_from(timeout=5)
        await socket.disconnect()

    async_to_sync(scenario)()
    assert reads == []  # within PERMISSION_RECHECK of the last read: no query per event


def test_one_listen_connection_serves_every_page_of_a_process(clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())

    async def scenario():
        first = await open_page(alice, [item.pk])
        second = await open_page(bob, [item.pk])
        assert await database_sync_to_async(listen_connections)() == 1
        await database_sync_to_async(workqueues.claim)(item.pk, alice)
        for socket in (first, second):
            assert (await socket.receive_json_from(timeout=5))["holder"] == "alice"
        await first.disconnect()
        await second.disconnect()
        await eventually(lambda: listen_connections() == 0)  # the last page closed it

    async_to_sync(scenario)()


def test_after_the_listen_connection_drops_pages_resync_and_miss_nothing(clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())

    def cut_and_claim():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'litejobs-live' AND datname = current_database()"
            )
        workqueues.claim(item.pk, alice)  # while nobody listens

    async def scenario():
        socket = await open_page(bob, [item.pk])
        await database_sync_to_async(cut_and_claim)()
        assert (await socket.receive_json_from(timeout=10))["op"] == "resync"
        assert live.get_listener().listening
        await socket.send_json_to({"op": "watch", "ids": [item.pk]})
        snapshot = await socket.receive_json_from(timeout=5)
        assert snapshot["items"][0]["holder"] == "alice"  # the missed claim, read again
        await socket.disconnect()

    async_to_sync(scenario)()
