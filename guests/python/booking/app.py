"""booking (Python): the multi-turn A2A agent of guests/booking, in Python.
It books a table once it knows for how many people and which day, asking
for what is missing (the task waits in input-required) and reading the
answers from the task's history. Its plain `handle` points to A2A."""

import re

import wit_world
from wit_world import exports
from wit_world.imports import a2a, types

from wharf_guest import a2a_outcome, a2a_text

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


class A2aHandler(exports.A2aHandler):
    def on_message(self, turn: a2a.Turn) -> a2a.Outcome:
        said = [a2a_text(m).lower() for m in [*turn.history, turn.message] if m.role == a2a.Role.USER]
        words = [w for s in said for w in re.split(r"[^0-9a-z]+", s) if w]
        numbers = [int(w) for w in words if w.isdigit()]
        days = [w for w in words if w in DAYS]
        people = numbers[-1] if numbers else None
        day = days[-1] if days else None
        if people == 0:
            return ask("A table for nobody? For how many people?")
        if people is None:
            return ask("For how many people?")
        if day is None:
            return ask("Which day?")
        return a2a_outcome("COMPLETED", f"Booked a table for {people} on {day}.")


def ask(question: str) -> a2a.Outcome:
    return a2a_outcome("INPUT_REQUIRED", question)


class WitWorld(wit_world.WitWorld):
    def handle(self, req: types.Request) -> types.Response:
        return types.Response(status=200, headers=b"", body=b"booking speaks A2A at /a2a/booking-py\n")

    def describe(self) -> types.Card:
        return types.Card(
            name="booking-py",
            version="0.1.0",
            description="Books a table, asking for the party size and the day (Python)",
            skills=[
                types.Skill(
                    id="book-table",
                    name="Book a table",
                    description="Books a table for a number of people on a day of the week",
                    tags=["multi-turn"],
                )
            ],
        )

    def health(self) -> types.Health:
        return types.Health_Ok()
