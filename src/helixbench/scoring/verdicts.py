"""A judge's reply read as the judge meant it, or counted undecided, never guessed.

Structured output first: the judge's tool call, then a JSON object it wrote with a
``result`` (one that is also in the graded answer is the answer's, quoted, not the
judge's). In text, the graded answer's own words are taken out first (a judge that
quotes the answer quotes its verdicts and tags too), then:

- a labelled verdict (``result: incorrect``, ``Verdict: correct``, ``grade = unsure``)
  is the verdict; labelled verdicts that differ are ``contradicted``;
- else the verdict words the judge states: the reply's first word, and each verdict
  word that ends its clause ("The answer is correct."), but not one that qualifies a
  noun ("The correct gene is TP53"); a negated one ("not correct", "isn't correct")
  makes the reply ``negated``; two different ones ``contradicted``; none
  ``unparseable``.

``negated``, ``contradicted``, ``unparseable`` and ``unsure`` are undecided: no score,
counted apart (as is ``split``: a jury whose rule gave no verdict, :mod:`.jury`). The
same rules read a verdict between tags (BixBench's ``<grade>``: every grade the judge
gave, not the first the reply holds) and a numeric grade (1, 0.5 or 0: the number
standing alone, not one in parentheses or counting something).
"""

from __future__ import annotations

import json
import re

WORDS = {"correct": "correct", "incorrect": "incorrect", "unsure": "unsure"}
UNDECIDED = ("unsure", "negated", "contradicted", "unparseable", "split")
_LABELLED = re.compile(
    r"(?i)\b(?:result|verdict|grade|judg(?:e)?ment|evaluation|final (?:verdict|answer|grade))"
    r"\s*(?:is\s*)?[:=]\s*[*_\"'`]*\s*(correct|incorrect|unsure)\b"
)
_WORD = re.compile(r"(?i)\b(correct|incorrect|unsure)\b")
_NEGATION = re.compile(r"(?i)(?:\bnot|n't|\bnever|\bno longer)\s+(?:\w+\s+){0,1}$")
_DETERMINERS = re.compile(r"(?i)\b(?:the|a|an|its|this|that|their|your)\s+$")
# What may follow a verdict word that ends its clause.
_CLAUSE_END = re.compile(r"^\s*(?:$|[.!,;:)\]\n—–-]|\*|because\b|since\b|as\b|but\b|and\b)")


def without_answer(text: str, answer: str | None) -> str:
    """``text`` with every verbatim copy of the graded answer (and of each of its lines
    of 8 characters or more) taken out: what the judge quoted is not what it said."""
    text = text or ""
    answer = (answer or "").strip()
    if not answer:
        return text
    pieces = [answer] + [line.strip() for line in answer.splitlines() if len(line.strip()) >= 8]
    pieces += [m.group(0) for m in re.finditer(r"<(\w+)>.*?</\1>", answer, re.DOTALL)]
    for piece in sorted(set(pieces), key=len, reverse=True):
        text = text.replace(piece, " ")
    return text


def _json_results(text: str, answer: str | None) -> list[tuple[str, str]]:
    """(result, rationale) of each JSON object with a ``result`` the judge wrote."""
    found = []
    decoder = json.JSONDecoder()
    at = 0
    while (start := text.find("{", at)) >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            at = start + 1
            continue
        raw = text[start:end]
        at = end
        if answer and raw in answer:  # quoted from the graded answer
            continue
        if isinstance(value, dict) and isinstance(value.get("result"), str):
            found.append((value["result"], str(value.get("rationale", ""))))
    return found


def _agreed(words: list[str], reason: str) -> tuple[str, str]:
    said = {WORDS.get(w.lower().strip(), "unparseable") for w in words}
    if not said:
        return "unparseable", reason
    if len(said) > 1:
        return "contradicted", f"verdicts that differ ({', '.join(sorted(said))}): {reason}"
    return said.pop(), reason


def read_verdict(text: str, tool_calls=None, answer: str | None = None) -> tuple[str, str]:
    """(verdict, reason) of a judge's reply (module docstring): ``correct``,
    ``incorrect``, or one of :data:`UNDECIDED`."""
    results = []
    for call in tool_calls or ():
        try:
            args = json.loads(call.get("arguments") or "{}")
        except ValueError:
            continue
        if isinstance(args, dict) and isinstance(args.get("result"), str):
            results.append((args["result"], str(args.get("rationale", ""))))
    if not results:
        results = _json_results(text or "", answer)
    if results:
        verdict, reason = _agreed([r for r, _ in results], results[0][1])
        return verdict, reason
    own = without_answer(text, answer)
    labelled = _LABELLED.findall(own)
    if labelled:
        return _agreed(labelled, (text or "").strip())
    return _stated(own, (text or "").strip())


def _stated(own: str, reason: str) -> tuple[str, str]:
    words, negated = [], False
    first = re.match(r"^[\s*#>_`\"']*(correct|incorrect|unsure)\b", own, re.IGNORECASE)
    if first:
        words.append(first.group(1))
    for found in _WORD.finditer(own):
        if first and found.start() == first.start(1):
            continue
        before, after = own[: found.start()], own[found.end() :]
        if _DETERMINERS.search(before) or not _CLAUSE_END.match(after):
            continue  # ("the correct gene": qualifies a noun, says no verdict)
        if _NEGATION.search(before):
            negated = True
        words.append(found.group(1))
    if negated:
        return "negated", f"a negated verdict: {reason}"
    return _agreed(words, reason)


def read_tagged(text: str, tag: str, answer: str | None = None) -> tuple[str | None, str]:
    """The one value the judge gave between ``<tag>`` and ``</tag>`` (the answer's own
    tags, quoted, taken out first): (value, reason); (None, why) where it gave none or
    gave different ones."""
    own = without_answer(text, answer)
    pattern = re.compile(rf"<{tag}>\s*(.*?)\s*</{tag}>", re.DOTALL | re.IGNORECASE)
    values = {v.strip().lower() for v in pattern.findall(own)}
    if not values:
        return None, "unparseable"
    if len(values) > 1:
        return None, "contradicted"
    value = values.pop()
    return value, f"<{tag}> {value} </{tag}>"


_GRADE_NUMBER = re.compile(r"(?<![\w.])(1(?:\.0+)?|0?\.5|0(?:\.0+)?)(?![\w.%])(?!\s*[a-z])")


def read_grade_number(text: str, answer: str | None = None) -> float | None:
    """A 1 / 0.5 / 0 grade: the numbers the judge states outside parentheses and not
    counting something ("1 gene"); None where there is none or they differ."""
    own = re.sub(r"\([^()]*\)", " ", without_answer(text, answer))
    grades = {float(g) for g in _GRADE_NUMBER.findall(own)}
    return grades.pop() if len(grades) == 1 else None
