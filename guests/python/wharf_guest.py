"""Helpers for Python agents on Wharf: read the request head and headers
and build response header lists (MessagePack) without a MessagePack
library; and, for agents of the `a2a-agent` world, build A2A messages,
artifacts and outcomes. Streaming an answer uses the generated bindings
directly: `from wit_world.imports import streaming`, then
`streaming.start(status, headers)` and `streaming.write(chunk)` (each
raises `Err` when the host refuses)."""

import struct

_MALFORMED = "malformed MessagePack"


def _read_len(buf, pos, family):
    """Reads a map (family 0x80) or array (family 0x90) length."""
    tag = buf[pos]
    wide = 0xDE if family == 0x80 else 0xDC
    if tag & 0xF0 == family:
        return tag & 0x0F, pos + 1
    if tag == wide:
        return struct.unpack_from(">H", buf, pos + 1)[0], pos + 3
    if tag == wide + 1:
        return struct.unpack_from(">I", buf, pos + 1)[0], pos + 5
    raise ValueError(_MALFORMED)


def _read_str(buf, pos):
    tag = buf[pos]
    if tag & 0xE0 == 0xA0:
        n, pos = tag & 0x1F, pos + 1
    elif tag in (0xD9, 0xC4):  # str or bin, as header values are
        n, pos = buf[pos + 1], pos + 2
    elif tag in (0xDA, 0xC5):
        n, pos = struct.unpack_from(">H", buf, pos + 1)[0], pos + 3
    elif tag in (0xDB, 0xC6):
        n, pos = struct.unpack_from(">I", buf, pos + 1)[0], pos + 5
    else:
        raise ValueError(_MALFORMED)
    if pos + n > len(buf):
        raise ValueError(_MALFORMED)
    return bytes(buf[pos : pos + n]).decode("utf-8"), pos + n


def decode_head(head):
    """The request head as a dict: method, path, query, id, client, affinity.
    Raises ValueError when it is malformed."""
    try:
        fields, pos = _read_len(head, 0, 0x80)
        out = {}
        for _ in range(fields):
            key, pos = _read_str(head, pos)
            out[key], pos = _read_str(head, pos)
        return out
    except (IndexError, struct.error, UnicodeDecodeError) as err:
        raise ValueError(_MALFORMED) from err


def header(headers, name):
    """The value of header `name` (lower-case) in a header list, as a
    string; None when it is not there. Raises ValueError when malformed."""
    if not headers:
        return None
    try:
        pairs, pos = _read_len(headers, 0, 0x90)
        for _ in range(pairs):
            two, pos = _read_len(headers, pos, 0x90)
            if two != 2:
                raise ValueError(_MALFORMED)
            key, pos = _read_str(headers, pos)
            value, pos = _read_str(headers, pos)
            if key == name:
                return value
        return None
    except (IndexError, struct.error, UnicodeDecodeError) as err:
        raise ValueError(_MALFORMED) from err


def _put_str(out, text):
    data = text.encode("utf-8")
    n = len(data)
    if n < 32:
        out.append(0xA0 | n)
    elif n < 0x100:
        out += bytes((0xD9, n))
    elif n < 0x10000:
        out += b"\xda" + struct.pack(">H", n)
    else:
        out += b"\xdb" + struct.pack(">I", n)
    out += data


def headers(request_headers=b"", *extra):
    """A response header list: the pairs of `request_headers` (possibly
    empty) followed by `extra` (name, value) string pairs."""
    pairs, pos = 0, 0
    if request_headers:
        try:
            pairs, pos = _read_len(request_headers, 0, 0x90)
        except (IndexError, struct.error) as err:
            raise ValueError(_MALFORMED) from err
    n = pairs + len(extra)
    out = bytearray()
    if n < 16:
        out.append(0x90 | n)
    elif n < 0x10000:
        out += b"\xdc" + struct.pack(">H", n)
    else:
        out += b"\xdd" + struct.pack(">I", n)
    out += request_headers[pos:]
    for name, value in extra:
        out.append(0x92)
        _put_str(out, name)
        _put_str(out, value)
    return bytes(out)


# Other agents and topics, through the host (the `peers` import; the
# caller's KDL block must allow it: `calls "NAME"`, `publishes "PATTERN"`).
# The bindings are imported when first used, so filters use this module too.


def call(agent, method, path, body=b""):
    """Calls `agent` with a request of this method, path and body (no
    headers) and returns (status, body): the callee's answer, or for a
    refused or failed call 403 (denied), 404 (not found), 508 (a loop) or
    the failure's own status, with `CASE: message` as body."""
    from componentize_py_types import Err  # noqa: PLC0415
    from wit_world.imports import peers, types  # noqa: PLC0415

    head = bytearray(b"\x83")
    for text in ("method", method, "path", path, "query", ""):
        _put_str(head, text)
    try:
        resp = peers.call(agent, types.Request(head=bytes(head), headers=b"", body=body))
    except Err as err:
        e = err.value
        if isinstance(e, peers.CallError_Failed):
            status, message = e.value
            return status, f"failed: {message}".encode()
        case, status = {
            peers.CallError_Denied: ("denied", 403),
            peers.CallError_NotFound: ("not-found", 404),
            peers.CallError_LoopDetected: ("loop", 508),
        }[type(e)]
        return status, f"{case}: {e.value}".encode()
    return resp.status, resp.body


def publish(topic, payload):
    """Publishes `payload` to `topic`: how many subscribers it was queued
    for. Raises `Err` with the host's reason when refused."""
    from wit_world.imports import peers  # noqa: PLC0415

    return peers.publish(topic, payload)


# A2A (the `a2a-agent` world): the bindings are imported when first used, so
# agents and filters of the other worlds use this module too.


def _a2a():
    from wit_world.imports import a2a  # noqa: PLC0415 (only in a2a-agent builds)

    return a2a


def a2a_text(message):
    """The text of a message's text parts, joined by newlines."""
    a2a = _a2a()
    return "\n".join(p.content.value for p in message.parts if isinstance(p.content, a2a.Content_Text))


def a2a_part(text):
    """A text part."""
    a2a = _a2a()
    return a2a.Part(content=a2a.Content_Text(text), media_type="", filename="")


def a2a_message(text):
    """An agent message holding `text` (the host gives it an id)."""
    a2a = _a2a()
    return a2a.Message(message_id="", role=a2a.Role.AGENT, parts=[a2a_part(text)])


def a2a_artifact(artifact_id, text, name=""):
    """An artifact (or a chunk of one) holding `text`."""
    return _a2a().Artifact(artifact_id=artifact_id, name=name, parts=[a2a_part(text)])


def a2a_reply(text):
    """A direct reply: `text` answers the client as a message and no task is
    kept (on a new task's first turn that reported nothing; else the task
    completes with it)."""
    return a2a_outcome("DIRECT_REPLY", text)


def a2a_outcome(state, text=None):
    """How a turn ends: `state` is a `TurnState` name (`"COMPLETED"`,
    `"INPUT_REQUIRED"`, …), `text` the status message."""
    a2a = _a2a()
    message = a2a_message(text) if text is not None else None
    return a2a.Outcome(state=getattr(a2a.TurnState, state), message=message)
