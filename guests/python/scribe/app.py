"""scribe (Python): the streaming A2A agent of guests/scribe, in Python.
Sent text, it writes the text back word by word as chunks of one artifact,
each reaching streaming clients as it is reported, then completes;
`count N` streams N chunks, `ping` is answered `pong` as a direct reply
(a message, no task), `fail` fails the task, `reject` rejects it,
`trap` traps. Its plain `handle`
streams the words as server-sent events."""

import wit_world
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import a2a, streaming, types

from wharf_guest import a2a_artifact, a2a_message, a2a_outcome, a2a_reply, a2a_text, headers


def chunks(artifact_id, pieces):
    for i, piece in enumerate(pieces):
        a2a.add_artifact(a2a_artifact(artifact_id, piece, artifact_id), i > 0, i == len(pieces) - 1)


class A2aHandler(exports.A2aHandler):
    def on_message(self, turn: a2a.Turn) -> a2a.Outcome:
        words = a2a_text(turn.message).split()
        if len(words) == 2 and words[0] == "count":
            if not words[1].isdigit():
                raise Err(types.Error_BadRequest(f"`{words[1]}` is not a count"))
            n = int(words[1])
            chunks("count", [f"{i}\n" for i in range(n)])
            return a2a_outcome("COMPLETED", f"counted to {n}")
        if words == ["ping"]:
            return a2a_reply("pong")
        if words == ["fail"]:
            raise Err(types.Error_Unavailable("asked to fail"))
        if words == ["reject"]:
            raise Err(types.Error_BadRequest("I will not write that"))
        if words == ["trap"]:
            raise RuntimeError("asked to trap")
        if not words:
            return a2a_outcome("INPUT_REQUIRED", "What shall I write?")
        a2a.working(a2a_message(f"writing {len(words)} words"))
        chunks("text", [f"{w} " for w in words])
        return a2a_outcome("COMPLETED", f"wrote {len(words)} words")


class WitWorld(wit_world.WitWorld):
    def handle(self, req: types.Request) -> types.Response:
        streaming.start(200, headers(b"", ("content-type", "text/event-stream")))
        for word in bytes(req.body).decode("utf-8", "replace").split():
            streaming.write(f'data: "{word}"\n\n'.encode())
        return types.Response(status=200, headers=b"", body=b"event: done\ndata: {}\n\n")

    def describe(self) -> types.Card:
        return types.Card(
            name="scribe-py",
            version="0.1.0",
            description="Writes what it is sent back, word by word, as a streamed artifact (Python)",
            skills=[
                types.Skill(
                    id="write",
                    name="Write",
                    description="Streams the words it is sent back as artifact chunks",
                    tags=["streaming", "text"],
                )
            ],
        )

    def health(self) -> types.Health:
        return types.Health_Ok()
