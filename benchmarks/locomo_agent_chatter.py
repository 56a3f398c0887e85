"""The chatter of an agent session, generated with a fixed seed for benchmarks.locomo_agent:
what a gateway captures between the turns that say something about the user.

Kinds: `command` (slash commands, memory commands by id), `ack` (the user's and the
assistant's acknowledgements), `tool` (a tool's result: clock, weather, files, search,
build logs, calendar), `echo` (the assistant repeating what /v1/context injected).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

# Per turn, the chance of each kind of chatter before it.
P_USER_ACK = 0.15
P_ASSISTANT_ACK = 0.10
P_TOOL = 0.12
P_MEMORY_COMMAND = 0.03
P_COMMAND = 0.04

SESSION_COMMANDS = ["/new", "/reset", "/status", "/model openai/gpt-5", "/think high", "/verbose"]
USER_ACKS = [
    "ok",
    "thanks!",
    "ok thanks",
    "yes, go ahead",
    "perfect, continue",
    "sounds good",
    "ok (default)",
    "2",
    "lol ok",
    "great, thank you so much!",
    "yes please",
    "next",
]
ASSISTANT_ACKS = [
    "Sure!",
    "Got it.",
    "You're welcome!",
    "Of course, one moment.",
    "Okay, done.",
    "Happy to help!",
    "Sure thing, go ahead.",
]
MEMORY_COMMANDS = ["please pin memory {id}", "forget memory {id}", "show note {id}", "unpin {id}"]
TOOL_RESULTS = [
    '{{"tool": "get_time", "result": "2023-{m:02d}-{d:02d}T{h:02d}:{mi:02d}:00Z"}}',
    "weather.get: {t}°C, {sky}, wind {w} km/h, humidity {hu}%",
    "$ ls ~/Downloads\ninvoice-{n}.pdf  IMG_{n}.HEIC  notes.txt  setup-{v}.dmg",
    "$ git status\nOn branch main\nChanges not staged for commit:\n  modified:   src/app.py",
    "search_web: 1. Python 3.{v} release notes - docs.python.org  2. How to fix "
    "ModuleNotFoundError - stackoverflow.com  3. pip install guide",
    "calendar.list: Tue {h:02d}:00 standup; Wed {h:02d}:30 dentist; Fri 17:00 invoice due",
    "pytest: {n} passed, {f} failed in {s}.{f}1s\nFAILED tests/test_api.py::test_login",
    "npm ERR! code ERESOLVE\nnpm ERR! unable to resolve dependency tree\nnpm ERR! peer "
    "react@{v}.0.0",
    '{{"tool": "exchange_rate", "from": "USD", "to": "EUR", "rate": 0.9{n}}}',
    "curl -s https://api.example.com/health -> 200 OK in {s}{n} ms",
    "docker ps: CONTAINER web-{n} Up {h} hours; db-{f} Up {h} hours (healthy)",
    "stocks.quote: ACME {t}.{n} (+{f}.{w}%), volume {n}{hu}k",
]
SKIES = ["clear sky", "light rain", "overcast", "scattered clouds", "snow showers"]
# Asks no memory of a LoCoMo user is about: /v1/context should answer them with nothing.
OFF_TOPIC_PROMPTS = [
    "How do I reverse a linked list in Python?", "What's the capital of Australia?",
    "Write a haiku about autumn leaves.", "Explain the TCP three-way handshake.",
    "Convert 72 degrees Fahrenheit to Celsius.",
    "What is the difference between a mutex and a semaphore?",
    "Fix this error: ModuleNotFoundError: No module named 'numpy'",
    "Summarise the plot of Hamlet.", "How many ounces are in a pound?",
    "Translate 'good morning' into Japanese.", "What is the time complexity of quicksort?",
    "Give me a regex that matches email addresses.", "Who won the 2018 FIFA World Cup?",
    "How do I set up a Postgres replica?", "What does HTTP status 418 mean?",
    "Write a SQL query to find duplicate rows.", "Explain quantum entanglement simply.",
    "How do I center a div in CSS?", "What's a good name for a cat?",
    "Recommend a book about the Roman empire.",
    "What is the boiling point of water at high altitude?",
    "Draft an email asking for a deadline extension.",
    "How does garbage collection work in Java?", "What is the population of Canada?",
    "git rebase vs merge: which should I use?", "Compute 17 times 23.",
    "What causes the northern lights?", "How do I make sourdough starter?",
    "List the planets in order from the sun.", "What is Kubernetes used for?",
]  # fmt: skip
ECHO_LEADS = ["You told me before that", "From what I remember,", "As you mentioned earlier,"]


@dataclass(frozen=True)
class Chatter:
    role: str
    kind: str
    text: str


def tool_result(rng: random.Random) -> str:
    values = {
        "m": rng.randint(1, 12),
        "d": rng.randint(1, 28),
        "h": rng.randint(0, 23),
        "mi": rng.randint(0, 59),
        "t": rng.randint(-5, 34),
        "sky": rng.choice(SKIES),
        "w": rng.randint(0, 40),
        "hu": rng.randint(20, 99),
        "n": rng.randint(100, 9999),
        "v": rng.randint(8, 19),
        "f": rng.randint(0, 9),
        "s": rng.randint(1, 9),
    }
    return rng.choice(TOOL_RESULTS).format(**values)


def chatter_between(rng: random.Random, index: int, role: str) -> list[Chatter]:
    """The chatter captured before a session's turn `index`, spoken by `role`."""
    if index == 0:
        return [Chatter("user", "command", rng.choice(SESSION_COMMANDS))]
    said: list[Chatter] = []
    if role == "user":
        if rng.random() < P_USER_ACK:
            said.append(Chatter("user", "ack", rng.choice(USER_ACKS)))
        if rng.random() < P_COMMAND:
            said.append(Chatter("user", "command", rng.choice(SESSION_COMMANDS)))
        if rng.random() < P_MEMORY_COMMAND:
            text = rng.choice(MEMORY_COMMANDS).format(id=uuid.UUID(int=rng.getrandbits(128)))
            said.append(Chatter("user", "command", text))
    else:
        if rng.random() < P_ASSISTANT_ACK:
            said.append(Chatter("assistant", "ack", rng.choice(ASSISTANT_ACKS)))
        if rng.random() < P_TOOL:
            said.append(Chatter("tool", "tool", tool_result(rng)))
    return said


def echo_of(rng: random.Random, block: str, contents: list[str]) -> list[Chatter]:
    """The assistant repeating an injected block (pasting its memory lines, or saying one
    or two of its memories back), then the user's thanks."""
    lines = [line for line in block.splitlines() if line.startswith("- [")]
    if rng.random() < 0.5 and lines:
        text = "Here is what I remember:\n" + "\n".join(lines[:3])
    else:
        text = f"{rng.choice(ECHO_LEADS)} {' '.join(contents[: rng.randint(1, 2)])}"
    return [Chatter("assistant", "echo", text), Chatter("user", "ack", rng.choice(USER_ACKS))]
