"""Multiple-choice questions as the peers ask them (LAB-Bench): two prompt variants,
each faithful to its source, its wording read from the peer's own files.

- ``inspect`` (the default): inspect_evals 0.26.0's ``lab_bench`` tasks. Its
  template (``MULTIPLE_CHOICE_TEMPLATE``: step-by-step reasoning, then
  ``ANSWER: $LETTER``), read from the installed package (:data:`PEER_TEMPLATES`,
  written by the ``peer_templates`` rule in the peer's own environment); the options
  as inspect_ai's ``multiple_choice`` writes them (``A) ...`` a line). The order is
  the one Inspect draws with its seed (42): a benchmark's questions as one dataset
  (its files in name order) shuffled as Hugging Face ``datasets`` shuffles
  (``numpy.random.default_rng(seed).permutation``), then each question's choices, in
  that order, by one ``random.Random(seed)``. The letter is read as inspect_ai
  0.3.285's ``parse_answers`` reads one answer: the last line ``ANSWER: X`` (after
  unwrapping ``$X$``, ``**X**`` and ``(X)``), else any ``ANSWER: X``, one letter
  among the choices' or none.
- ``futurehouse``: FutureHouse's own zero-shot code (``labbench/zero_shot.py``,
  ``MCQ_INSTRUCT_TEMPLATE``, read from the pinned file's syntax tree), with its
  chain-of-thought line (chembench 0.3.0's ``COT_PROMPT``, which FutureHouse's
  baseline turns on) and its options (``(A) ...``); its refusal worded as FutureHouse
  words it (no full stop), placed second before the shuffle, as its
  ``randomize_choices`` does, with a seeded shuffle per question (upstream's is
  unseeded). The letter is read as chembench's ``prepare_mcq_answer`` and
  ``run_regex`` read it: what lies between ``[ANSWER]`` tags (its
  ``MCQ_REGEX_TEMPLATE_1``, every match, sorted), else a reply of letters alone; then
  the first of the choices' letters found in that; brackets and angle brackets are
  dropped first, as zero_shot.py drops them.

- ``bixbench``: BixBench's zero-shot prompts (``bixbench/prompts.py``, pinned, read
  as constants), the options in the order its published file showed them (``(A)
  ...`` a line, as ``zero_shot.py`` joins them) and the answer cut from the reply as
  its ``parse_response`` cuts it; open answers in its open-answer template. Its
  questions are asked so whatever the method's ``choices`` says.

A presentation records the order it showed (the question's own indices, in the
order of the letters): the score reads the choice picked from it
(:mod:`helixbench.scoring.choice`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import string
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..datasets.upstream import lookup, python_constants, verified_bytes
from ..environments import environment_python
from ..paths import PEER_TEMPLATES
from ..scoring.choice import has_refusal

VARIANTS = ("inspect", "futurehouse", "bixbench")
# What inspect_evals' lab_bench tasks send with a prompt: the model and the message,
# no generation parameter (its tasks set no GenerateConfig).
INSPECT_UNSENT = ("stop", "max_tokens", "temperature")
LETTERS = string.ascii_uppercase
BIXBENCH_PROMPTS = lookup(
    "Future-House/BixBench", "bixbench/prompts.py", "49311180bdacb324c596f2e07596c126f2004008"
)
ZERO_SHOT = lookup(
    "ScienceOne-AI/ScienceEval",
    "benchmarks/LAB-Bench/labbench/zero_shot.py",
    "1683e4987bab03b706307b5cb9b4a46e8fed5e89",
)
FUTUREHOUSE_REFUSAL = "Insufficient information to answer the question"
CHEMBENCH = "chembench==0.3.0"  # the chain-of-thought line of FutureHouse's baseline
# Run in the peer's environment: its lab_bench template, refusal and seed, from the
# installed package, with the file's sha256 and the versions.
_READ_INSPECT = """
import hashlib, inspect, json
from importlib.metadata import version
import inspect_evals.lab_bench.lab_bench as lab_bench
from inspect_evals.lab_bench.record_to_sample_helpers import UNCERTAIN_ANSWER_CHOICE
source = inspect.getsourcefile(lab_bench)
print(json.dumps({
    "package": "inspect-evals==" + version("inspect-evals"),
    "inspect_ai": version("inspect-ai"),
    "file": "inspect_evals/lab_bench/lab_bench.py",
    "sha256": hashlib.sha256(open(source, "rb").read()).hexdigest(),
    "template": lab_bench.MULTIPLE_CHOICE_TEMPLATE,
    "refusal": UNCERTAIN_ANSWER_CHOICE,
    "seed": lab_bench.DEFAULT_SHUFFLE_SEED,
}))
"""


@dataclass(frozen=True)
class Presentation:
    """One question as a prompt variant shows it."""

    prompt: str
    presented: tuple[int, ...]  # the question's own choice indices, letter by letter
    options: tuple[str, ...]  # the choices' texts as shown, letter by letter
    variant: str
    answer_pattern: str | None = None  # where the variant's parse reads the letter from
    # Generation parameters its peer sends none of (inspect_evals' lab_bench: no stop,
    # no max_tokens, no temperature): left to the server's defaults, as it leaves them.
    unsent: tuple[str, ...] = ()

    def letter_of(self, text: str | None) -> str | None:
        """The letter a reply picks (None: it picks none the variant can read); BixBench's:
        the answer its parse_response cuts (an open answer's text, as it is)."""
        letters = LETTERS[: len(self.presented)]
        if self.variant == "bixbench":
            from ..sources.bixbench import parse_response

            return parse_response(text or "", mcq=bool(self.presented))
        if self.variant == "inspect":
            return _parse_inspect(text or "", letters)
        return _parse_futurehouse(text or "", letters, self.answer_pattern)


def template_source(variant: str) -> str:
    """The file a variant's wording is read from (a run job's input)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown choices variant {variant!r}; one of {', '.join(VARIANTS)}")
    if variant == "bixbench":  # (its pinned prompts.py)
        from ..benchmarks.bixbench import PROMPTS
        from ..paths import upstream_path

        return upstream_path(PROMPTS)
    return PEER_TEMPLATES


def upstream_sources(variant: str) -> list:
    """The pinned upstream files a variant reads its wording from."""
    if variant == "bixbench":
        from ..benchmarks.bixbench import PROMPTS

        return [PROMPTS]
    return [ZERO_SHOT] if variant == "futurehouse" else []


def present(variant: str, questions: list, seed: int, templates: dict, zero_shot: Path | None):
    """{question id: Presentation} of every question of one benchmark (``questions``,
    in the table's order: the order of its files), as ``variant`` shows them."""
    if variant == "inspect":
        peer = templates["inspect_evals"]
        for question in questions:
            if question.choices[-1] != peer["refusal"]:
                raise ValueError(f"{peer['package']} words the refusal {peer['refusal']!r}")
        return _inspect(questions, seed, peer["template"])
    template = futurehouse_template(zero_shot)
    chembench = templates["chembench"]
    cot = "\n" + chembench["cot"]
    return {
        q.id: _futurehouse(q, seed, template, cot, chembench["answer_pattern"]) for q in questions
    }


def presentations(context) -> dict | None:
    """A multiple-choice task's questions as its method's variant shows them (every
    question of the benchmark: the order is drawn over all of them), else None."""
    task, spec = context.task, context.run["method_spec"]
    if not task.get("choice_templates"):
        return None
    of_benchmark = [q for q in context.every if q.benchmark == task["benchmark"]]
    zero_shot = Path(task["choice_upstream"][0]) if task.get("choice_upstream") else None
    variant = task.get("choice_variant") or spec.get("choices", "inspect")
    seed = spec.get("choice_seed", 42)
    if variant == "bixbench":
        source = verified_bytes(zero_shot, BIXBENCH_PROMPTS.sha256).decode("utf-8")
        templates = python_constants(source)
        return {q.id: _bixbench(q, templates) for q in of_benchmark}
    return present(variant, of_benchmark, seed, read_templates(task["choice_templates"]), zero_shot)


def read_templates(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_templates(env_marker: str, out: Path) -> dict:
    """The peers' wording (the ``peer_templates`` job): inspect_evals' from the package
    installed in its environment, chembench's ``COT_PROMPT`` and answer pattern from
    its wheel (fetched from the package registry without its dependencies, which
    would bring PyTorch, and read as a syntax tree)."""
    python = environment_python(env_marker)
    done = subprocess.run([python, "-c", _READ_INSPECT], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"inspect_evals' lab_bench could not be read: {done.stderr[-2000:]}")
    inspect_evals = json.loads(done.stdout.strip().splitlines()[-1])
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [python, "-m", "pip", "download", "--no-deps", "-q", "-d", folder, CHEMBENCH],
            check=True,
            capture_output=True,
        )
        (wheel,) = Path(folder).glob("chembench-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            constants = python_constants(archive.read("chembench/constant.py").decode("utf-8"))
        chembench = {
            "package": CHEMBENCH,
            "wheel": wheel.name,
            "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
            "file": "chembench/constant.py",
            "cot": constants["COT_PROMPT"],
            "answer_pattern": constants["MCQ_REGEX_TEMPLATE_1"],
        }
    templates = {"inspect_evals": inspect_evals, "chembench": chembench}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(templates, indent=1) + "\n", encoding="utf-8")
    return templates


def _inspect(questions: list, seed: int, template: str) -> dict:
    order = np.random.default_rng(seed).permutation(len(questions))
    draws = random.Random(seed)
    shown = {}
    for i in order:
        question = questions[int(i)]
        positions = list(range(len(question.choices)))
        draws.shuffle(positions)
        texts = tuple(question.choices[p] for p in positions)
        options = "\n".join(f"{LETTERS[k]}) {text}" for k, text in enumerate(texts))
        letters = ",".join(LETTERS[: len(positions)])
        prompt = template.format(choices=options, letters=letters, question=question.text)
        shown[question.id] = Presentation(
            prompt, tuple(positions), texts, "inspect", unsent=INSPECT_UNSENT
        )
    return shown


def _futurehouse(question, seed: int, template: str, cot: str, pattern: str) -> Presentation:
    # FutureHouse's own order before its shuffle: the ideal, the refusal, the rest.
    last = len(question.choices) - 1
    theirs = [0, last, *range(1, last)]
    permutation = list(range(len(theirs)))
    random.Random(f"{seed}:{question.source_id or question.id}").shuffle(permutation)
    positions = [theirs[p] for p in permutation]
    texts = tuple(FUTUREHOUSE_REFUSAL if p == last else question.choices[p] for p in positions)
    answers = "\n".join(f"({LETTERS[k]}) {text}" for k, text in enumerate(texts))
    prompt = template.format(question=question.text, cot=cot, answers=answers)
    return Presentation(prompt, tuple(positions), texts, "futurehouse", pattern)


def _bixbench(question, templates: dict) -> Presentation:
    if not question.choices:  # an open answer, in its open-answer template
        prompt = templates["OPEN_ENDED_PROMPT_TEMPLATE"].format(question=question.text)
        return Presentation(prompt, (), (), "bixbench")
    refusal = has_refusal(question.choices)
    name = "MCQ_PROMPT_TEMPLATE_WITH" + ("_REFUSAL" if refusal else "OUT_REFUSAL")
    positions = tuple(question.shown or range(len(question.choices)))
    texts = tuple(question.choices[p] for p in positions)
    options = "\n".join(f"({LETTERS[k]}) {text}" for k, text in enumerate(texts))
    prompt = templates[name].format(question=question.text, options=options)
    return Presentation(prompt, positions, texts, "bixbench")


def futurehouse_template(zero_shot: Path) -> str:
    """``MCQ_INSTRUCT_TEMPLATE`` of FutureHouse's pinned ``zero_shot.py`` (its syntax
    tree, the file checked against its pin)."""
    tree = ast.parse(verified_bytes(zero_shot, ZERO_SHOT.sha256).decode("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "MCQ_INSTRUCT_TEMPLATE" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise ValueError(f"{zero_shot}: no MCQ_INSTRUCT_TEMPLATE")


# -- reading the letter --------------------------------------------------------------


def _parse_inspect(text: str, letters: str) -> str | None:
    text = re.sub(r"\$\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\$", r"\1", text)
    text = re.sub(r"\*\*\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\*\*", r"\1", text)
    text = re.sub(r"(?i)(^|[:,])(\s*)\(([A-Za-z\d])\)(?=\s*(?:,|\.|\n|\Z))", r"\1\2\3", text)
    found = re.findall(r"(?i)^ANSWER\s*:\s*([A-Za-z\d ,]+)\s*(?:$|\n|\.)", text, re.MULTILINE)
    found = found or re.findall(r"(?i)ANSWER\s*:\s*([A-Za-z\d ,]+)(?:[^\w]|\n|$|\.)", text)
    if not found:
        return None
    tokens = [t for t in found[-1].strip().rstrip(".").upper().split(",") if t]
    return tokens[0] if len(tokens) == 1 and tokens[0] in letters else None


def _parse_futurehouse(text: str, letters: str, pattern: str) -> str | None:
    text = text.strip()
    for mark in "()<>":  # as zero_shot.py strips them
        text = text.replace(mark, "").strip()
    found = sorted(set(re.findall(pattern, text, re.DOTALL)))
    if found:
        prepared = str(found)
    elif text in LETTERS:
        prepared = text
    else:  # letters alone, separated by commas or spaces; anything else reads as none
        split = text.split(",") if "," in text else text.split(" ") if " " in text else []
        kept = [part for part in split if part.strip() in LETTERS]
        prepared = ",".join(kept) if split and len(kept) == len(split) else ""
    first = re.search("|".join(letters), prepared)  # the first allowed letter, anywhere
    return first.group(0) if first else None
