"""Per-session conversation memory: bounded in turns, size, age and sessions; sessions isolated."""

from __future__ import annotations

from grasbot.service.memory import ConversationMemory


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_keeps_the_last_turns_in_order() -> None:
    memory = ConversationMemory(max_turns=3, max_chars=10_000)
    for i in range(5):
        memory.remember("s", f"q{i}", f"a{i}", answered_from=1)
    assert [(t.question, t.answer) for t in memory.history("s")] == [("q2", "a2"), ("q3", "a3"), ("q4", "a4")]


def test_sessions_are_isolated() -> None:
    memory = ConversationMemory()
    memory.remember("alice", "question d'Alice", "réponse à Alice", answered_from=1)
    memory.remember("bob", "question de Bob", "réponse à Bob", answered_from=1)
    assert [t.question for t in memory.history("alice")] == ["question d'Alice"]
    assert [t.question for t in memory.history("bob")] == ["question de Bob"]
    assert memory.history("carol") == []


def test_no_session_means_no_memory() -> None:
    memory = ConversationMemory()
    memory.remember(None, "q", "a", answered_from=1)
    memory.remember("", "q", "a", answered_from=1)
    assert memory.history(None) == [] and memory.history("") == [] and len(memory) == 0


def test_size_bound_drops_oldest_turns_and_cuts_a_huge_answer() -> None:
    memory = ConversationMemory(max_turns=10, max_chars=100)
    memory.remember("s", "q1", "a" * 40, answered_from=1)
    memory.remember("s", "q2", "b" * 40, answered_from=1)
    memory.remember("s", "q3", "c" * 40, answered_from=1)
    turns = memory.history("s")
    assert sum(t.size for t in turns) <= 100
    assert turns[-1].question == "q3" and turns[0].question == "q2"
    memory.remember("s", "q4", "d" * 1000, answered_from=1)
    turns = memory.history("s")
    assert [t.question for t in turns] == ["q4"]
    assert turns[0].size <= 100


def test_old_turns_expire() -> None:
    clock = Clock()
    memory = ConversationMemory(ttl_seconds=60, clock=clock)
    memory.remember("s", "ancienne", "a", answered_from=1)
    clock.now += 45
    memory.remember("s", "récente", "b", answered_from=1)
    clock.now += 30  # the first turn is 75 s old, the second 30 s
    assert [t.question for t in memory.history("s")] == ["récente"]
    clock.now += 31
    assert memory.history("s") == []
    assert len(memory) == 0  # an empty session is dropped, not kept forever


def test_number_of_sessions_is_bounded_least_recent_first() -> None:
    memory = ConversationMemory(max_sessions=3)
    for name in ("a", "b", "c"):
        memory.remember(name, "q", "r", answered_from=1)
    memory.history("a")  # reading does not refresh; writing does
    memory.remember("a", "q2", "r2", answered_from=1)
    memory.remember("d", "q", "r", answered_from=1)
    assert len(memory) == 3
    assert memory.history("b") == []
    assert [t.question for t in memory.history("a")] == ["q", "q2"]


def test_disabled_memory() -> None:
    memory = ConversationMemory(max_turns=0)
    memory.remember("s", "q", "a", answered_from=1)
    assert memory.history("s") == [] and not memory.enabled
