"""filter (Python): refuses paths below /admin with a JSON 403 naming the
rule, attaches the request method as metadata, and marks every response
with x-filtered-by: python."""

import wit_world
from wit_world.imports import filtering, types

import wharf_guest


def verdict(decision=None, response_ops=(), metadata=(), rule_ids=(), reason=""):
    return filtering.Verdict(
        decision=decision or filtering.Decision_Allow(),
        request_header_ops=[],
        response_header_ops=list(response_ops),
        body=None,
        metadata=list(metadata),
        want_body=False,
        audit=filtering.Audit(rule_ids=list(rule_ids), tags=[], reason=reason),
    )


class WitWorld(wit_world.WitWorld):
    def phases(self) -> filtering.Phases:
        return filtering.Phases.REQUEST_HEADERS | filtering.Phases.RESPONSE_HEADERS

    def on_request_headers(self, head: bytes, headers: bytes) -> filtering.Verdict:
        fields = wharf_guest.decode_head(head)
        if fields.get("path", "").startswith("/admin"):
            block = types.Response(
                status=403,
                headers=wharf_guest.headers(b"", ("content-type", "application/json")),
                body=b'{"error":{"code":"forbidden","message":"admin paths are closed"}}',
            )
            return verdict(filtering.Decision_Block(block), rule_ids=["admin-path"], reason="admin path")
        return verdict(metadata=[("py.method", fields.get("method", ""))])

    def on_request_body(self, head: bytes, headers: bytes, body: bytes) -> filtering.Verdict:
        return verdict()

    def on_response_headers(self, head: bytes, headers: bytes, status: int, resp_headers: bytes) -> filtering.Verdict:
        return verdict(response_ops=[filtering.HeaderOp_Set(("x-filtered-by", b"python"))])

    def on_response_body(self, head: bytes, headers: bytes, status: int, resp_headers: bytes, body: bytes) -> filtering.Verdict:
        return verdict()
