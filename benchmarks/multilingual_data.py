"""The public multilingual development set: build it from the raw files, load it, score it.

Seven languages (en, zh, ja, de, es, fr, ru), one user each, with the same content in
every language: the five SQuAD v1.1 development paragraphs that XQuAD (en, de, es, ru,
zh; professional translations) and the Japanese and French SQuAD test sets of Asai et al.
(2018; manual translations) both translated, and the 33 questions about them present in
all seven (where it comes from, the licences and the limits:
`benchmarks/data/multilingual-sample/README.md`).

Invariants of a built sample (checked by `validate` and the unit test):
- every language has the same question ids, in the same order;
- a memory is one sentence of a paragraph, in that language, its text exactly as in the
  source; its id `<lang>-<paragraph>-<n>` is unique and names its language (sentence
  numbers are not aligned across languages: translators split sentences differently);
- a question's evidence is the sentence(s) of that language's paragraph that hold the
  answer span (the source's `answer_start`), so it is never empty and always names
  memories of that language;
- every non-English user also has `cross_questions`: the English question of each id
  with that language's evidence (an English prompt over memories in another language).

Rebuild the committed sample from the raw files (kept out of the repository):

    .venv/bin/python -m benchmarks.multilingual_data --from /tmp/mlraw
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any

from benchmarks.locomo_data import recall

LANGUAGES = ("en", "zh", "ja", "de", "es", "fr", "ru")
SOURCE_FILES = {
    **{lang: f"xquad.{lang}.json" for lang in ("en", "de", "es", "ru", "zh")},
    "ja": "squad_japanese_test.json",
    "fr": "squad_french_test.json",
}
DATA = Path(__file__).parent / "data" / "multilingual-sample" / "multilingual-sample.json"
KS = (1, 5, 10)
SOURCE = {
    "xquad": {
        "url": "https://github.com/google-deepmind/xquad",
        "commit": "7d30520c717524000f0d9d2f9c10a069acd9d285",
        "files": [SOURCE_FILES[lang] for lang in ("en", "de", "es", "ru", "zh")],
        "licence": "CC BY-SA 4.0",
    },
    "asai2018": {
        "url": "https://github.com/AkariAsai/extractive_rc_by_runtime_mt",
        "commit": "66611b8b6c4ebf2465b590fa09a03f86b071cf5c",
        "files": ["data/squad_japanese_test.json", "data/squad_french_test.json"],
        "licence": "no licence file; manual translations of SQuAD v1.1 (CC BY-SA 4.0)",
    },
}
_CJK_END = re.compile(
    "[\u3002\uff01\uff1f][\u300d\u300f\u201d\uff09)]*"
)  # full stop, full-width ! ?, then closers
_LATIN_END = re.compile(r"[.!?][\"”»)\]]*\s+")
_OPENERS = '"“„«(['


def split_spans(text: str, lang: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) in `text`'s own offsets, without surrounding space or
    byte-order mark. Chinese and Japanese end a sentence at an ideographic full stop or a
    full-width ! or ?; the others at . ! ?
    followed by space and an upper-case letter, a digit or an opening quote."""
    cuts = []
    if lang in ("ja", "zh"):
        cuts = [m.end() for m in _CJK_END.finditer(text)]
    else:
        for m in _LATIN_END.finditer(text):
            nxt = text[m.end() : m.end() + 1]
            if nxt and (nxt.isupper() or nxt.isdigit() or nxt in _OPENERS):
                cuts.append(m.end())
    spans, start = [], 0
    for end in [*cuts, len(text)]:
        left, right = start, end
        while left < right and (text[left].isspace() or text[left] == "\ufeff"):
            left += 1
        while right > left and text[right - 1].isspace():
            right -= 1
        if right > left:
            spans.append((left, right))
        start = end
    return spans


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _read(raw: Path, lang: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """question id -> (article title, paragraph text, the SQuAD-format question)."""
    data = json.loads((raw / SOURCE_FILES[lang]).read_text(encoding="utf-8"))
    return {
        qa["id"]: (article["title"], paragraph["context"], qa)
        for article in data["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    }


def build(raw: Path) -> dict[str, Any]:
    """The sample from the seven raw files in `raw` (deterministic: same files, same JSON)."""
    by_lang = {lang: _read(raw, lang) for lang in LANGUAGES}
    shared = set.intersection(*(set(questions) for questions in by_lang.values()))
    ids = sorted(shared, key=lambda qid: (by_lang["en"][qid][0], qid))
    users: dict[str, Any] = {}
    for lang in LANGUAGES:
        memories: list[dict[str, str]] = []
        spans_of: dict[str, list[tuple[str, int, int]]] = {}
        for qid in ids:
            title, context, _ = by_lang[lang][qid]
            if context in spans_of:
                continue
            spans_of[context] = []
            for n, (start, end) in enumerate(split_spans(context, lang), 1):
                memory_id = f"{lang}-{slug(title)}-{n}"
                spans_of[context].append((memory_id, start, end))
                memories.append(
                    {"id": memory_id, "paragraph": slug(title), "text": context[start:end]}
                )
        questions = []
        for qid in ids:
            _, context, qa = by_lang[lang][qid]
            answer = qa["answers"][0]
            start, end = answer["answer_start"], answer["answer_start"] + len(answer["text"])
            if context[start:end] != answer["text"]:
                raise ValueError(f"{lang} {qid}: answer_start does not point at the answer")
            evidence = [m for m, s, e in spans_of[context] if s < end and start < e]
            questions.append(
                {
                    "id": qid,
                    "question": qa["question"].strip(),
                    "answer": answer["text"],
                    "evidence": evidence,
                }
            )
        users[lang] = {
            "user_id": f"multilingual-{lang}",
            "memories": memories,
            "questions": questions,
        }
    english = {q["id"]: q["question"] for q in users["en"]["questions"]}
    for lang in LANGUAGES[1:]:
        users[lang]["cross_questions"] = [
            {"id": q["id"], "question": english[q["id"]], "evidence": q["evidence"]}
            for q in users[lang]["questions"]
        ]
    sample = {
        "name": "multilingual-sample",
        "languages": list(LANGUAGES),
        "source": SOURCE,
        "users": users,
    }
    validate(sample)
    return sample


def validate(sample: dict[str, Any]) -> None:
    """Raise ValueError where the sample breaks an invariant of the module docstring."""
    users = sample["users"]
    if sorted(users) != sorted(LANGUAGES):
        raise ValueError(f"languages {sorted(users)}")
    order = [q["id"] for q in users["en"]["questions"]]
    for lang, user in users.items():
        known = {m["id"] for m in user["memories"]}
        if len(known) != len(user["memories"]) or any(
            not m["id"].startswith(f"{lang}-") for m in user["memories"]
        ):
            raise ValueError(f"{lang}: memory ids not unique or not of the language")
        if [q["id"] for q in user["questions"]] != order:
            raise ValueError(f"{lang}: question ids differ from English")
        for q in [*user["questions"], *user.get("cross_questions", [])]:
            if not q["evidence"] or not set(q["evidence"]) <= known:
                raise ValueError(f"{lang} {q['id']}: evidence {q['evidence']}")
        if lang != "en" and [q["id"] for q in user["cross_questions"]] != order:
            raise ValueError(f"{lang}: cross-language questions differ from English")


def load(path: Path = DATA) -> dict[str, Any]:
    sample = json.loads(path.read_text(encoding="utf-8"))
    validate(sample)
    return sample


def score(
    evidence: list[list[str]], ranked: list[list[set[str]]], blocks: list[list[set[str]]]
) -> dict[str, float]:
    """R@1/5/10 (share of a question's evidence among the sources of the top k search
    results), context recall (the same over the whole /v1/context block) and context
    precision (per non-empty block, the share of its memories with an evidence source;
    0 when every block is empty), each averaged over the questions."""
    out = {
        f"R@{k}": statistics.fmean(
            recall(tuple(e), r, k) for e, r in zip(evidence, ranked, strict=True)
        )
        for k in KS
    }
    out["context_recall"] = statistics.fmean(
        recall(tuple(e), b, len(b)) for e, b in zip(evidence, blocks, strict=True)
    )
    precision = [
        sum(bool(s & set(e)) for s in b) / len(b)
        for e, b in zip(evidence, blocks, strict=True)
        if b
    ]
    out["context_precision"] = statistics.fmean(precision) if precision else 0.0
    out["empty_blocks"] = float(sum(not b for b in blocks))
    return {k: round(v, 4) for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--from",
        dest="raw",
        type=Path,
        required=True,
        help="a folder with " + ", ".join(SOURCE_FILES.values()),
    )
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    sample = build(args.raw)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(sample, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for lang, user in sample["users"].items():
        used = {m for q in user["questions"] for m in q["evidence"]}
        print(
            f"{lang}: {len(user['memories'])} memories ({len(used)} evidence), "
            f"{len(user['questions'])} questions"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
