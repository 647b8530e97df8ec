"""A client for Wharf's binary transport: MessagePack frames over a Unix
socket or TCP (the wire format is in docs/binary.md). Needs the `msgpack`
package (`pip install msgpack`).

    python3 examples/wharf_binary.py /tmp/wharf.sock echo 'hello'
    python3 examples/wharf_binary.py 127.0.0.1:8081 echo 'hello'

As a module: requests may be pipelined (`send` several, then `receive`
answers in the order they finish) or made one at a time (`call`).
"""

import socket
import struct
import sys

import msgpack


class WharfError(Exception):
    """An error frame: `status`, a stable `code`, a `message`, and
    `retry_after` (seconds) when the server asks the client to come back."""

    def __init__(self, frame):
        error = frame.get("error") or {}
        self.id = frame.get("id")
        self.status = frame.get("status")
        self.code = error.get("code")
        self.message = error.get("message")
        self.retry_after = frame.get("retry_after")
        super().__init__(f"{self.status} {self.code}: {self.message}")


class Client:
    """One connection. `address` is a socket path, or "host:port" for TCP."""

    def __init__(self, address, timeout=30.0):
        if isinstance(address, str) and (":" not in address or "/" in address):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(address)
        else:
            host, port = address.rsplit(":", 1) if isinstance(address, str) else address
            self.sock = socket.create_connection((host, int(port)), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id = 1
        self.early = {}

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, agent, body=b"", method="POST", path="/", query="", headers=(),
             affinity=None, **extra):
        """Sends one request without waiting; returns its id."""
        rid = self.next_id
        self.next_id += 1
        request = {"id": rid, "agent": agent, "method": method, "path": path,
                   "query": query, "headers": [list(h) for h in headers],
                   "body": body.encode() if isinstance(body, str) else bytes(body)}
        if affinity is not None:
            request["affinity"] = affinity
        request.update(extra)
        self.send_payload(msgpack.packb(request, use_bin_type=True))
        return rid

    def send_payload(self, payload):
        """Sends raw bytes as one frame (any payload: tests send bad ones)."""
        self.sock.sendall(struct.pack(">I", len(payload)) + payload)

    def receive(self):
        """The next frame from the server as a dict, or None when the server
        closed the connection."""
        prefix = self._exactly(4)
        if prefix is None:
            return None
        (length,) = struct.unpack(">I", prefix)
        payload = self._exactly(length)
        if payload is None:
            raise ConnectionError("the server closed the connection mid-frame")
        return msgpack.unpackb(payload, raw=False)

    def answer(self, rid):
        """The answer to request `rid` (answers to others are kept for later);
        raises WharfError for an error frame."""
        while rid not in self.early:
            frame = self.receive()
            if frame is None:
                raise ConnectionError("the server closed the connection")
            if frame.get("id") is None:
                raise WharfError(frame)
            self.early[frame["id"]] = frame
        frame = self.early.pop(rid)
        if "error" in frame:
            raise WharfError(frame)
        return frame

    def call(self, agent, body=b"", **kw):
        """Sends one request and waits for its answer:
        {"id", "status", "headers": [[name, value], …], "body": bytes}."""
        return self.answer(self.send(agent, body, **kw))

    def publish(self, topic, payload=b"", headers=()):
        """Publishes `payload` to `topic` (as `POST /topics/{topic}` does) and
        waits: the answer's body is JSON {"topic", "queued": N}."""
        rid = self.next_id
        self.next_id += 1
        request = {"id": rid, "topic": topic, "headers": [list(h) for h in headers],
                   "body": payload.encode() if isinstance(payload, str) else bytes(payload)}
        self.send_payload(msgpack.packb(request, use_bin_type=True))
        return self.answer(rid)

    def read(self, pattern, **parameters):
        """Reads back what kept topics matching `pattern` received (as
        `GET /topics/{pattern}/messages` does), with the same parameters
        (`after=`, `limit=`, `match=`, …): the answer's body is a JSON page
        {"topic", "messages": [...], "next"}."""
        from urllib.parse import urlencode
        rid = self.next_id
        self.next_id += 1
        request = {"id": rid, "topic": pattern, "method": "GET", "query": urlencode(parameters)}
        self.send_payload(msgpack.packb(request, use_bin_type=True))
        return self.answer(rid)

    def _exactly(self, n):
        chunks, left = [], n
        while left:
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def header(answer, name):
    """The first value of header `name` in an answer, or None."""
    for key, value in answer["headers"]:
        if key == name:
            return value
    return None


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: wharf_binary.py SOCKET|HOST:PORT AGENT BODY")
    with Client(sys.argv[1]) as client:
        try:
            answer = client.call(sys.argv[2], sys.argv[3])
        except WharfError as err:
            sys.exit(str(err))
        print(answer["status"], answer["body"].decode(errors="replace"))
