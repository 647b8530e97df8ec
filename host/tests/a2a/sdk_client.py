"""Drives a running Wharf with the official A2A Python SDK (a2a-sdk 1.3).

Usage: sdk_client.py BASE_URL BINDING [BOOKING [ONLY]]
  BINDING: JSONRPC or HTTP+JSON; BOOKING: the multi-turn agent's name
  (default `booking`); ONLY: run only the scenarios whose name holds it.

BASE_URL serves the `scribe` and BOOKING agents at /a2a/NAME. Each
scenario asserts what the SDK's client got back; the script prints one line
per scenario and a closing `N passed, N failed` line, and exits non-zero
when any failed.
"""

import asyncio
import sys
import traceback
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

BASE, BINDING = sys.argv[1], sys.argv[2]
BOOKING = sys.argv[3] if len(sys.argv) > 3 else "booking"
ONLY = sys.argv[4] if len(sys.argv) > 4 else ""


async def client(agent, streaming=True, polling=False):
    config = ClientConfig(
        streaming=streaming,
        polling=polling,
        supported_protocol_bindings=[BINDING],
        httpx_client=httpx.AsyncClient(timeout=30),
    )
    return await ClientFactory(config).create_from_url(f"{BASE}/a2a/{agent}")


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


async def card_names_the_agent_and_both_bindings():
    c = await client("scribe")
    card = await c.get_card() if hasattr(c, "get_card") else c._card
    assert card.name == "scribe", card.name
    bindings = sorted(i.protocol_binding for i in card.supported_interfaces)
    assert bindings == ["HTTP+JSON", "JSONRPC"], bindings
    assert card.capabilities.streaming
    assert [s.id for s in card.skills] == ["write"]


async def send_returns_the_finished_task():
    c = await client("scribe", streaming=False)
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
    c = await client("scribe")
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
    c = await client("scribe", streaming=False)
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
    streamer, other = await client("scribe"), await client("scribe")
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
    poller = await client("scribe", streaming=False, polling=True)
    watcher = await client("scribe")
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


async def failures_end_the_task_with_a_reason():
    c = await client("scribe", streaming=False)
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
    c = await client("scribe", streaming=False)
    try:
        await c.get_task(GetTaskRequest(id="no-such-task"))
        raise AssertionError("an unknown task was found")
    except TaskNotFoundError:
        pass
    try:
        await c.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id="t", url="http://127.0.0.1:9/hook")
        )
        raise AssertionError("push configs were accepted")
    except PushNotificationNotSupportedError:
        pass


SCENARIOS = [
    card_names_the_agent_and_both_bindings,
    send_returns_the_finished_task,
    stream_delivers_every_event_in_order,
    list_filters_by_context_and_pages,
    multi_turn_asks_until_it_knows_enough,
    cancel_interrupts_a_running_turn,
    subscribe_follows_a_live_task,
    failures_end_the_task_with_a_reason,
    errors_come_back_as_the_sdk_types,
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
