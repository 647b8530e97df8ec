"""classify (Python): a keyword classifier. The body is UTF-8 text; words
are runs of ASCII letters and digits, lower-cased. The answer is JSON:
{"words":W,"labels":[{"label":L,"hits":H,"score":S},...]}, labels with hits
only, most hits first (ties in table order), S = H*1000 // total hits."""

import json
import re

import wit_world
from componentize_py_types import Err
from wit_world.imports import types

import wharf_guest

LABELS = [
    ("billing", ("invoice", "refund", "charge", "payment", "price")),
    ("outage", ("down", "error", "outage", "timeout", "crash")),
    ("security", ("password", "breach", "phishing", "leak", "hacked")),
]
LABEL_OF = {word: i for i, (_, words) in enumerate(LABELS) for word in words}
WORD = re.compile(rb"[A-Za-z0-9]+")
JSON_HEADERS = wharf_guest.headers(b"", ("content-type", "application/json"))


class WitWorld(wit_world.WitWorld):
    def handle(self, req: types.Request) -> types.Response:
        try:
            req.body.decode("utf-8")
        except UnicodeDecodeError:
            raise Err(types.Error_BadRequest("body is not UTF-8"))
        hits = [0] * len(LABELS)
        words = 0
        for match in WORD.finditer(req.body):
            words += 1
            label = LABEL_OF.get(match.group().lower().decode("ascii"))
            if label is not None:
                hits[label] += 1
        total = sum(hits)
        order = sorted((i for i in range(len(LABELS)) if hits[i]), key=lambda i: -hits[i])
        labels = [
            {"label": LABELS[i][0], "hits": hits[i], "score": hits[i] * 1000 // total}
            for i in order
        ]
        body = json.dumps({"words": words, "labels": labels}, separators=(",", ":"))
        return types.Response(status=200, headers=JSON_HEADERS, body=body.encode())

    def describe(self) -> types.Card:
        return types.Card(
            name="classify",
            version="0.1.0",
            description="Labels text by keywords, with scores (Python)",
            skills=[],
        )

    def health(self) -> types.Health:
        return types.Health_Ok()
