"""Drives a running Wharf with the official A2A Python SDK (a2a-sdk 1.3).

Usage: sdk_client.py BASE_URL BINDING [BOOKING [ONLY [SCRIBE]]]
  BINDING: JSONRPC, HTTP+JSON or GRPC; BOOKING: the multi-turn agent's name
  (default `booking`); ONLY: run only the scenarios whose name holds it;
  SCRIBE: the streaming agent's name (default `scribe`).

BASE_URL serves the SCRIBE and BOOKING agents at /a2a/NAME, with push
notifications allowed to 127.0.0.1 (the script's own webhook server). Each
scenario asserts what the SDK's client got back; the script prints one line
per scenario and a closing `N passed, N failed` line, and exits non-zero
when any failed.
"""

import asyncio
import json
import sys
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import httpx
from google.protobuf import json_format
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

BASE, BINDING = sys.argv[1], sys.argv[2]
BOOKING = sys.argv[3] if len(sys.argv) > 3 else "booking"
ONLY = sys.argv[4] if len(sys.argv) > 4 else ""
SCRIBE = sys.argv[5] if len(sys.argv) > 5 else "scribe"


def grpc_channel(url):
    """The card's GRPC interface is the host's h2c listener, `http://HOST`."""
    return grpc.aio.insecure_channel(url.removeprefix("http://"))


def config_for(streaming=True, polling=False):
    return ClientConfig(
        streaming=streaming,
        polling=polling,
        supported_protocol_bindings=[BINDING],
        httpx_client=httpx.AsyncClient(timeout=30),
        grpc_channel_factory=grpc_channel,
    )


async def client(agent, streaming=True, polling=False):
    config = config_for(streaming, polling)
    return await ClientFactory(config).create_from_url(f"{BASE}/a2a/{agent}")


class Webhooks:
    """A local webhook receiver: every POST is parsed strictly as the SDK's
    `StreamResponse` and kept per path with its headers; a path named
    `/flaky-N` answers 503 to its first N posts."""

    def __init__(self):
        self.received, self.refused = {}, {}
        self.lock = threading.Lock()
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                with hooks.lock:
                    refused = hooks.refused.get(self.path, 0)
                    wanted = int(self.path.split("-")[-1]) if "/flaky-" in self.path else 0
                    if refused < wanted:
                        hooks.refused[self.path] = refused + 1
                        self.send_response(503)
                        self.end_headers()
                        return
                    event = json_format.Parse(body, StreamResponse())
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    hooks.received.setdefault(self.path, []).append((headers, event))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    async def wait_for(self, path, done, seconds=20):
        """What `path` received, once `done(events)` holds."""
        for _ in range(seconds * 20):
            with self.lock:
                got = list(self.received.get(path, []))
            if got and done([e for _, e in got]):
                return got
            await asyncio.sleep(0.05)
        raise AssertionError(f"{path} received {[e for _, e in got]}")


HOOKS = Webhooks()


def state_of(event):
    kind = event.WhichOneof("payload")
    if kind == "status_update":
        return event.status_update.status.state
    if kind == "task":
        return event.task.status.state
    return None


def finished(events):
    return state_of(events[-1]) == TaskState.TASK_STATE_COMPLETED


def message(text, task_id="", context_id=""):
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            task_id=task_id,
            context_id=context_id,
        )
    )


def text_of(msg):
    return "".join(p.text for p in msg.parts)


async def events(c, text, **ids):
    return [e async for e in c.send_message(message(text, **ids))]


async def card_names_the_agent_and_every_binding():
    c = await client(SCRIBE)
    card = await c.get_card() if hasattr(c, "get_card") else c._card
    assert card.name == SCRIBE, card.name
    bindings = sorted(i.protocol_binding for i in card.supported_interfaces)
    assert bindings == ["GRPC", "HTTP+JSON", "JSONRPC"], bindings
    (grpc_interface,) = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
    assert grpc_interface.tenant == SCRIBE, grpc_interface
    assert card.capabilities.streaming
    assert [s.id for s in card.skills] == ["write"]


async def the_host_names_a_default_agent():
    config = config_for(streaming=False)
    # Given only the host, the SDK reads its card and follows the interfaces.
    c = await ClientFactory(config).create_from_url(BASE)
    (only,) = await events(c, "count 2")
    assert only.task.status.state == TaskState.TASK_STATE_COMPLETED, only.task.status
    assert text_of(only.task.status.message) == "counted to 2"


async def send_returns_the_finished_task():
    c = await client(SCRIBE, streaming=False)
    (only,) = await events(c, "hello brave new world")
    task = only.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
    assert text_of(task.status.message) == "wrote 4 words"
    assert "".join(p.text for p in task.artifacts[0].parts) == "hello brave new world "
    got = await c.get_task(GetTaskRequest(id=task.id))
    assert got.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(got.history) == 3, [text_of(m) for m in got.history]
    trimmed = await c.get_task(GetTaskRequest(id=task.id, history_length=1))
    assert [text_of(m) for m in trimmed.history] == ["wrote 4 words"]


async def stream_delivers_every_event_in_order():
    c = await client(SCRIBE)
    got = await events(c, "count 5")
    kinds = [e.WhichOneof("payload") for e in got]
    assert kinds == ["task"] + ["artifact_update"] * 5 + ["status_update"], kinds
    assert got[0].task.status.state == TaskState.TASK_STATE_WORKING
    chunks = [e.artifact_update.artifact.parts[0].text for e in got[1:6]]
    assert chunks == [f"{i}\n" for i in range(5)], chunks
    assert [e.artifact_update.append for e in got[1:6]] == [False] + [True] * 4
    assert got[5].artifact_update.last_chunk
    assert got[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def list_filters_by_context_and_pages():
    c = await client(SCRIBE, streaming=False)
    context = str(uuid.uuid4())
    ids = []
    for i in range(3):
        (only,) = await events(c, f"count {i + 1}", context_id=context)
        ids.append(only.task.id)
    page = await c.list_tasks(ListTasksRequest(context_id=context, page_size=2))
    assert page.total_size == 3, page.total_size
    assert [t.id for t in page.tasks] == ids[::-1][:2]
    assert page.next_page_token
    rest = await c.list_tasks(
        ListTasksRequest(context_id=context, page_size=2, page_token=page.next_page_token)
    )
    assert [t.id for t in rest.tasks] == ids[:1]
    assert rest.next_page_token == ""


async def direct_reply_is_a_message_and_keeps_no_task():
    context = str(uuid.uuid4())
    for streaming in (False, True):
        c = await client(SCRIBE, streaming=streaming)
        got = await events(c, "ping", context_id=context)
        kinds = [e.WhichOneof("payload") for e in got]
        assert kinds == ["message"], (streaming, kinds)
        reply = got[0].message
        assert text_of(reply) == "pong", reply
        assert reply.role == Role.ROLE_AGENT, reply
        assert reply.message_id and reply.context_id == context and not reply.task_id, reply
    c = await client(SCRIBE, streaming=False)
    page = await c.list_tasks(ListTasksRequest(context_id=context))
    assert page.total_size == 0, [t.id for t in page.tasks]
    # A task the client knows already is answered, not dropped: it completes.
    (first,) = await events(c, "", context_id=context)
    assert first.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    (second,) = await events(c, "ping", task_id=first.task.id, context_id=context)
    assert second.task.id == first.task.id
    assert second.task.status.state == TaskState.TASK_STATE_COMPLETED, second.task.status
    assert text_of(second.task.status.message) == "pong"
    page = await c.list_tasks(ListTasksRequest(context_id=context))
    assert [t.id for t in page.tasks] == [first.task.id]


async def multi_turn_asks_until_it_knows_enough():
    c = await client(BOOKING, streaming=False)
    (first,) = await events(c, "I would like to book a table")
    task = first.task
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert text_of(task.status.message) == "For how many people?"
    ids = dict(task_id=task.id, context_id=task.context_id)
    (second,) = await events(c, "4 of us", **ids)
    assert second.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert text_of(second.task.status.message) == "Which day?"
    (third,) = await events(c, "Friday please", **ids)
    assert third.task.id == task.id
    assert third.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(third.task.status.message) == "Booked a table for 4 on friday."
    assert len(third.task.history) == 6
    try:
        await events(c, "and Saturday too", **ids)
        raise AssertionError("a finished task took another message")
    except UnsupportedOperationError:
        pass


async def cancel_interrupts_a_running_turn():
    streamer, other = await client(SCRIBE), await client(SCRIBE)
    stream = streamer.send_message(message("spin"))
    first = await anext(stream)
    task_id = first.task.id
    assert first.task.status.state == TaskState.TASK_STATE_WORKING
    canceled = await other.cancel_task(CancelTaskRequest(id=task_id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED, canceled.status
    rest = [e async for e in stream]
    states = [e.status_update.status.state for e in rest if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_CANCELED, states
    try:
        await other.cancel_task(CancelTaskRequest(id=task_id))
        raise AssertionError("a canceled task was canceled again")
    except TaskNotCancelableError:
        pass


async def subscribe_follows_a_live_task():
    poller = await client(SCRIBE, streaming=False, polling=True)
    watcher = await client(SCRIBE)
    started = [e async for e in poller.send_message(message("spin"))]
    task = started[-1].task
    assert task.status.state == TaskState.TASK_STATE_WORKING
    stream = watcher.subscribe(SubscribeToTaskRequest(id=task.id))
    first = await anext(stream)
    assert first.task.id == task.id
    await poller.cancel_task(CancelTaskRequest(id=task.id))
    rest = [e async for e in stream]
    assert rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
    try:
        async for _ in watcher.subscribe(SubscribeToTaskRequest(id=task.id)):
            pass
        raise AssertionError("subscribed to a finished task")
    except UnsupportedOperationError:
        pass


async def subscribe_follows_an_interrupted_task_to_its_end():
    """A subscriber to a task waiting for input stays until the task ends:
    it sees every later turn, and a cancel between turns."""
    c = await client(BOOKING, streaming=False)
    watcher = await client(BOOKING)
    (first,) = await events(c, "I would like to book a table")
    task = first.task
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    stream = watcher.subscribe(SubscribeToTaskRequest(id=task.id))
    head = await anext(stream)
    assert head.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, head
    rest = asyncio.ensure_future(collect(stream))
    ids = dict(task_id=task.id, context_id=task.context_id)
    (second,) = await events(c, "4 of us", **ids)
    assert second.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    await asyncio.sleep(0.2)
    assert not rest.done(), "the stream closed while the task waited for input"
    (third,) = await events(c, "Friday please", **ids)
    assert third.task.status.state == TaskState.TASK_STATE_COMPLETED
    got = await asyncio.wait_for(rest, timeout=30)
    said = [text_of(status_of(e).message) for e in got if status_of(e) is not None]
    assert "Which day?" in said, said
    assert said[-1] == "Booked a table for 4 on friday.", said
    assert status_of(got[-1]).state == TaskState.TASK_STATE_COMPLETED, got[-1]

    # Canceled while it waits: the subscriber is told, and the stream ends.
    (other,) = await events(c, "I would like to book a table")
    stream = watcher.subscribe(SubscribeToTaskRequest(id=other.task.id))
    await anext(stream)
    rest = asyncio.ensure_future(collect(stream))
    await asyncio.sleep(0.2)
    await c.cancel_task(CancelTaskRequest(id=other.task.id))
    got = await asyncio.wait_for(rest, timeout=30)
    assert status_of(got[-1]).state == TaskState.TASK_STATE_CANCELED, got


async def collect(stream):
    return [e async for e in stream]


def status_of(event):
    """The task status an event carries, if any."""
    if event.HasField("status_update"):
        return event.status_update.status
    if event.HasField("task"):
        return event.task.status
    return None


async def failures_end_the_task_with_a_reason():
    c = await client(SCRIBE, streaming=False)
    (failed,) = await events(c, "fail")
    assert failed.task.status.state == TaskState.TASK_STATE_FAILED
    assert text_of(failed.task.status.message) == "asked to fail"
    (rejected,) = await events(c, "reject")
    assert rejected.task.status.state == TaskState.TASK_STATE_REJECTED
    assert text_of(rejected.task.status.message) == "I will not write that"
    (trapped,) = await events(c, "trap")
    assert trapped.task.status.state == TaskState.TASK_STATE_FAILED
    assert text_of(trapped.task.status.message) == "the agent failed"


async def errors_come_back_as_the_sdk_types():
    c = await client(SCRIBE, streaming=False)
    try:
        await c.get_task(GetTaskRequest(id="no-such-task"))
        raise AssertionError("an unknown task was found")
    except TaskNotFoundError:
        pass
    try:
        await c.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id="no-such-task", url=HOOKS.url("/x"))
        )
        raise AssertionError("a push config was made for an unknown task")
    except TaskNotFoundError:
        pass


async def push_configs_are_kept_and_each_update_reaches_the_webhook():
    c = await client(BOOKING, streaming=False)
    (first,) = await events(c, "I would like to book a table")
    task = first.task
    path = f"/booking-{BINDING}"
    made = await c.create_task_push_notification_config(
        TaskPushNotificationConfig(
            task_id=task.id,
            url=HOOKS.url(path),
            token="tok-1",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="s3cret"),
        )
    )
    assert made.id and made.task_id == task.id, made
    second = await c.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=task.id, id="second", url=HOOKS.url("/unused"))
    )
    assert second.id == "second"
    got = await c.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id=made.id)
    )
    assert (got.url, got.token, got.authentication.scheme) == (made.url, "tok-1", "Bearer")
    listed = await c.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert sorted(x.id for x in listed.configs) == sorted([made.id, "second"]), listed
    for _ in range(2):  # deleting is idempotent
        await c.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="second")
        )
    listed = await c.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert [x.id for x in listed.configs] == [made.id], listed
    try:
        await c.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="second")
        )
        raise AssertionError("a deleted config was found")
    except TaskNotFoundError:
        pass
    for url in ["http://169.254.169.254/latest/meta-data", "http://10.0.0.1/", "file:///etc/passwd"]:
        try:
            await c.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url=url)
            )
            raise AssertionError(f"a webhook to {url} was accepted")
        except InvalidParamsError:
            pass
    ids = dict(task_id=task.id, context_id=task.context_id)
    await events(c, "4 of us", **ids)
    await events(c, "Friday please", **ids)
    got = await HOOKS.wait_for(path, finished)
    states = [state_of(e) for _, e in got if state_of(e) is not None]
    assert states[-2:] == [TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_COMPLETED], states
    for headers, event in got:
        assert headers["x-a2a-notification-token"] == "tok-1", headers
        assert headers["authorization"] == "Bearer s3cret", headers
        assert event.status_update.task_id == task.id, event
    assert "/unused" not in HOOKS.received, "a deleted webhook was called"


async def a_webhook_set_with_the_message_gets_every_event_in_order_despite_failures():
    c = await client(SCRIBE, streaming=False)
    path = f"/flaky-{BINDING}-2"
    request = message("count 3")
    request.configuration.CopyFrom(
        SendMessageConfiguration(
            task_push_notification_config=TaskPushNotificationConfig(url=HOOKS.url(path))
        )
    )
    (only,) = [e async for e in c.send_message(request)]
    assert only.task.status.state == TaskState.TASK_STATE_COMPLETED
    got = await HOOKS.wait_for(path, finished)
    kinds = [e.WhichOneof("payload") for _, e in got]
    assert kinds == ["artifact_update"] * 3 + ["status_update"], kinds
    chunks = [e.artifact_update.artifact.parts[0].text for _, e in got[:3]]
    assert chunks == ["0\n", "1\n", "2\n"], chunks
    assert HOOKS.refused[path] == 2, "the first two posts were refused and retried"
    assert all(e.artifact_update.task_id == only.task.id for _, e in got[:3])


SCENARIOS = [
    card_names_the_agent_and_every_binding,
    the_host_names_a_default_agent,
    send_returns_the_finished_task,
    stream_delivers_every_event_in_order,
    list_filters_by_context_and_pages,
    direct_reply_is_a_message_and_keeps_no_task,
    multi_turn_asks_until_it_knows_enough,
    cancel_interrupts_a_running_turn,
    subscribe_follows_a_live_task,
    subscribe_follows_an_interrupted_task_to_its_end,
    failures_end_the_task_with_a_reason,
    errors_come_back_as_the_sdk_types,
    push_configs_are_kept_and_each_update_reaches_the_webhook,
    a_webhook_set_with_the_message_gets_every_event_in_order_despite_failures,
]


async def main():
    passed = failed = 0
    for scenario in [s for s in SCENARIOS if ONLY in s.__name__]:
        try:
            await asyncio.wait_for(scenario(), timeout=60)
            passed += 1
            print(f"ok   {BINDING} {scenario.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {BINDING} {scenario.__name__}")
            traceback.print_exc(file=sys.stdout)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
