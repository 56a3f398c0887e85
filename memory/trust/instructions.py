"""Instruction-like text: words that address the assistant or try to set its behaviour.

A memory is data about the past; text that tells the assistant what to do (or claims the
user wants it done) is what persistent prompt injection plants (Greshake et al. 2023;
AgentPoison 2024; MINJA 2025). The patterns below are deliberately broad: a flagged
low-trust memory is still stored and searchable, it is only kept out of the context
block unless the prompt is about its source, so a false positive costs little.
"""

from __future__ import annotations

import re

_PATTERNS = (
    # Addressed to the assistant or to whatever model reads the text.
    r"\b(note|message|instructions?|attention|reminder)\s+(to|for)\s+(the\s+)?"
    r"(assistant|ai|agent|model|llm|bot|chatbot)s?\b",
    r"\b(ai|llm|language model|assistant|agent|bot)s?\s+(reading|processing|summari[sz]ing)"
    r"\s+(this|these)\b",
    r"\b(dear|hey|hi|attention)\s+(ai|assistant|agent|chatgpt|claude|gpt|model|bot)\b",
    r"\b(you are now|from now on|going forward|henceforth|in (all )?future (sessions|"
    r"conversations|replies))\b",
    r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|"
    r"earlier|preceding|your|system)\b",
    r"\bnew\s+(instructions?|rules?|directives?|system prompt)\b",
    # Standing orders and claimed preferences of the user.
    r"\b(always|never|whenever|every time)\b[^.!?\n]{0,80}\b(send|forward|email|e-mail|"
    r"upload|share|post|transfer|pay|wire|include|reply|respond|answer|ask|tell|disclose|"
    r"reveal|click|visit|run|execute|recommend|use|approve|delete)\b",
    r"\b(the\s+)?user\s+(has\s+)?(asked|wants|wishes|instructed|requested|prefers|"
    r"authori[sz]ed|consented|requires|would like)\b[^.!?\n]{0,40}\b(you|assistant|agent|to)\b",
    r"\b(user'?s?|their)\s+(standing\s+)?(preference|instruction|wish|policy|rule)\s+"
    r"(is|that)\b",
    r"\b(without|never|don'?t|do not)\s+(asking|ask|confirming|confirm|confirmation|"
    r"checking|verifying|telling|notifying|mentioning)\b",
    r"\bno\s+(need\s+)?(for\s+)?confirmation\b",
    # Exfiltration and payment requests.
    r"\b(send|forward|email|e-mail|upload|post|exfiltrate|leak|copy)\b[^.!?\n]{0,60}"
    r"\b(password|passwords|credentials?|tokens?|api keys?|secrets?|pin|ssn|card|"
    r"history|conversation|chat|messages|files?|data|contacts)\b",
    r"\b(pay|wire|transfer|send)\b[^.!?\n]{0,40}\b(iban|account|bitcoin|btc|wallet|"
    r"\$\s?\d|usd|eur|€)",
    r"\biban\s*[:#]?\s*[a-z]{2}\d{2}",
    r"\b(pay|paid|send|buy)\b[^.!?\n]{0,60}\bgift ?cards?\b",
    # Phishing for credentials, and a download piped into a shell.
    r"\b(enter|type|submit|provide|give|paste)\b[^.!?\n]{0,40}\b(passwords?|credentials|"
    r"pin|card number)\b[^.!?\n]{0,30}\b(at|on|to|into)\s+(https?://|www\.)",
    r"\b(curl|wget)\b[^|\n]{0,200}\|\s*(sudo\s+)?(ba|z)?sh\b",
    # An assistant promising to act on what it read, later or for good.
    r"\b(for|in|on)\s+(all\s+)?future\s+(\w+\s+)?(upgrades?|requests?|questions?|tasks?|"
    r"payments?|sessions?|conversations?)\b",
    r"\bI(\s+will|'ll)\s+(always\s+)?(use|point|send|direct|forward|pay|follow)\b[^.!?\n]{0,60}"
    r"\b(if|when|whenever|next time|from now)\b",
    r"\b(saved|noted|stored|remembered|recorded)\s+(that|this|it)\s+as\s+(your|the user'?s)\s+"
    r"(\w+\s+)?(preference|instruction|default|rule|policy)\b",
    r"!\[[^\]]*\]\(\s*https?://[^)]*[?&=][^)]*\)",  # a markdown image that carries data
    # Fake roles and system messages.
    r"<\|?\s*(im_start|im_end|system|endoftext)\s*\|?>",
    r"\[\s*(system|admin|developer|assistant)\s*(message|note|override|prompt)?\s*\]",
    r"^\s*(system|developer)\s*:",
    r"\b(jailbreak|developer mode|dan mode|do anything now)\b",
    r"<!--[^>]*\b(assistant|ai|instruction|ignore|always|never)\b",
    r"\b(remember|memori[sz]e|store|save)\s+(this|that|the following)\b[^.!?\n]{0,40}"
    r"\b(whenever|always|for (all|every|future))\b",
)
_INSTRUCTION_RE = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE | re.M)


def looks_like_instruction(text: str) -> bool:
    """True when `text` addresses the assistant, claims a standing order of the user, or
    asks for data to be sent or money to be paid."""
    return _INSTRUCTION_RE.search(text) is not None
