"""http-echo in Python: a standard wasi:http/proxy component
(componentize-py), nothing of Wharf's. It keeps the echo contract of
Wharf's echo agents: 200 with the request body and headers, plus
x-echo-method and x-echo-path; with `x-echo-chunks: N` (1-64) the body
leaves in N pieces, each flushed as it is written."""

from componentize_py_types import Err, Ok
from wit_world import exports
from wit_world.imports import streams
from wit_world.imports.types import (
    Fields,
    IncomingRequest,
    Method_Connect,
    Method_Delete,
    Method_Get,
    Method_Head,
    Method_Options,
    Method_Other,
    Method_Patch,
    Method_Post,
    Method_Put,
    Method_Trace,
    OutgoingBody,
    OutgoingResponse,
    ResponseOutparam,
)

METHODS = {
    Method_Get: "GET",
    Method_Head: "HEAD",
    Method_Post: "POST",
    Method_Put: "PUT",
    Method_Delete: "DELETE",
    Method_Connect: "CONNECT",
    Method_Options: "OPTIONS",
    Method_Trace: "TRACE",
    Method_Patch: "PATCH",
}

# The most bytes one blocking write may carry.
MAX_WRITE = 4096


class IncomingHandler(exports.IncomingHandler):
    def handle(self, request: IncomingRequest, response_out: ResponseOutparam) -> None:
        method = request.method()
        name = method.value if isinstance(method, Method_Other) else METHODS[type(method)]
        target = request.path_with_query() or "/"
        path = target.split("?", 1)[0]
        chunks = None
        pairs = []
        for key, value in request.headers().entries():
            if key == "x-echo-chunks":
                chunks = value
            # The request's framing is not the answer's; a response carries no host.
            if key not in ("content-length", "host"):
                pairs.append((key, value))
        body = read_all(request)
        pieces = 1
        if chunks is None:
            pairs.append(("content-length", str(len(body)).encode()))
        else:
            try:
                pieces = int(chunks)
            except ValueError:
                pieces = 0
            if not 1 <= pieces <= 64:
                return respond(response_out, 400, [], [b"x-echo-chunks must be 1 to 64"])
        pairs.append(("x-echo-method", name.encode()))
        pairs.append(("x-echo-path", path.encode()))
        size = max(1, -(-len(body) // pieces))
        respond(response_out, 200, pairs, [body[i : i + size] for i in range(0, len(body), size)])


def read_all(request: IncomingRequest) -> bytes:
    incoming = request.consume()
    data = bytearray()
    with incoming.stream() as stream:
        while True:
            try:
                data += stream.blocking_read(65536)
            except Err as err:
                if isinstance(err.value, streams.StreamError_Closed):
                    break
                raise
    return bytes(data)


def respond(out: ResponseOutparam, status: int, pairs, pieces) -> None:
    resp = OutgoingResponse(Fields.from_list(pairs))
    resp.set_status_code(status)
    body = resp.body()
    ResponseOutparam.set(out, Ok(resp))
    with body.write() as stream:
        for piece in pieces:
            for i in range(0, len(piece), MAX_WRITE):
                stream.blocking_write_and_flush(piece[i : i + MAX_WRITE])
    OutgoingBody.finish(body, None)
