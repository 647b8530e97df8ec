"""echo (Python): answers 200 with the request body and headers, plus
x-echo-method and x-echo-path taken from the request head."""

import wit_world
from componentize_py_types import Err
from wit_world.imports import types

import wharf_guest


class WitWorld(wit_world.WitWorld):
    def handle(self, req: types.Request) -> types.Response:
        try:
            head = wharf_guest.decode_head(req.head)
            headers = wharf_guest.headers(
                req.headers,
                ("x-echo-method", head.get("method", "")),
                ("x-echo-path", head.get("path", "")),
            )
        except ValueError as err:
            raise Err(types.Error_BadRequest(f"malformed request: {err}"))
        return types.Response(status=200, headers=headers, body=req.body)

    def describe(self) -> types.Card:
        return types.Card(
            name="echo",
            version="0.1.0",
            description="Returns the request body and headers (Python)",
            skills=[],
        )

    def health(self) -> types.Health:
        return types.Health_Ok()
