"""Domain errors survive pickling whole: Celery hands a task's failure between processes
by pickle, and replaces an exception that does not round-trip by a bare base class."""

from __future__ import annotations

import pickle

from memory.clients.llm import LlmOutputError
from memory.errors import NotFoundError, TransientError


def test_an_llm_output_error_keeps_its_message_ids_and_the_models_output() -> None:
    error = LlmOutputError("invalid after one repair", raw_output="nope", attempts=["a", "nope"])
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is LlmOutputError
    assert (str(copy), copy.message, copy.raw_output, copy.attempts) == (
        "invalid after one repair",
        "invalid after one repair",
        "nope",
        ["a", "nope"],
    )


def test_ids_survive_and_the_http_mapping_is_the_classs() -> None:
    copy = pickle.loads(pickle.dumps(NotFoundError("no such note", note_id="n1")))
    assert (type(copy), copy.ids, copy.status_code) == (NotFoundError, {"note_id": "n1"}, 404)
    transient = pickle.loads(pickle.dumps(TransientError("model answered 503", status=503)))
    assert transient.ids == {"status": 503} and transient.to_dict()["detail"] == str(transient)
