"""echo (Python): answers 200 with the request body and headers, plus
x-echo-method and x-echo-path taken from the request head. With
x-echo-chunks: N (1-64) it streams the answer: the head at once, the body
in N pieces, the last one returned by handle. With x-echo-call: AGENT it
calls AGENT through the host with the body and answers with its status and
body (a refused or failed call: its status and `CASE: message`); with
x-echo-publish: TOPIC it publishes the body and adds x-echo-queued."""

import wit_world
from componentize_py_types import Err
from wit_world.imports import streaming, types

import wharf_guest


class WitWorld(wit_world.WitWorld):
    def handle(self, req: types.Request) -> types.Response:
        try:
            head = wharf_guest.decode_head(req.head)
            agent = wharf_guest.header(req.headers, "x-echo-call")
            if agent is not None:
                status, body = wharf_guest.call(agent, "POST", "/", req.body)
                return types.Response(status=status, headers=b"", body=body)
            extra = [("x-echo-method", head.get("method", "")), ("x-echo-path", head.get("path", ""))]
            topic = wharf_guest.header(req.headers, "x-echo-publish")
            if topic is not None:
                try:
                    queued = str(wharf_guest.publish(topic, req.body))
                except Err:
                    queued = "refused"
                extra.append(("x-echo-queued", queued))
            headers = wharf_guest.headers(req.headers, *extra)
            chunks = wharf_guest.header(req.headers, "x-echo-chunks")
        except ValueError as err:
            raise Err(types.Error_BadRequest(f"malformed request: {err}"))
        if chunks is None:
            return types.Response(status=200, headers=headers, body=req.body)
        if not chunks.isdigit() or not 1 <= int(chunks) <= 64:
            raise Err(types.Error_BadRequest("malformed request: x-echo-chunks must be 1 to 64"))
        streaming.start(200, headers)
        body = req.body
        size = max(-(-len(body) // int(chunks)), 1)
        while len(body) > size:
            streaming.write(body[:size])
            body = body[size:]
        return types.Response(status=200, headers=b"", body=body)

    def describe(self) -> types.Card:
        return types.Card(
            name="echo",
            version="0.1.0",
            description="Returns the request body and headers (Python)",
            skills=[],
        )

    def health(self) -> types.Health:
        return types.Health_Ok()
