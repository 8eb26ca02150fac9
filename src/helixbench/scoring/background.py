"""The background of the percentile scorer on GeneAgent's datasets.

GeneAgent's paper (Fig. 2c) ranks a generated name against 12,320 names: the 12,214
GO biological-process terms Hu et al. used plus the NeST and MSigDB names. Their exact
term list is not in their repository (its ``.gmt`` is not stored), so the nearest
background is the one their pinned GO files define: every biological-process term
that carries genes in ``collapsed_go.symbol`` (a line ``parent<TAB>child<TAB>type``,
``type`` ``gene`` where the child is a gene), named by ``goID_2_name.tab``, plus the
names of the datasets themselves.
"""

from __future__ import annotations

from pathlib import Path

from ..datasets.jsonfiles import read_text
from ..datasets.questions import Question, read_questions
from ..datasets.upstream import HU_COMMIT, HU_REPO, UpstreamFile, lookup

# The paper's background: 12,214 GO terms + 50 NeST + 56 MSigDB names.
PAPER_BACKGROUND = 12_320
GO_NAMES = "data/GO_BP/goID_2_name.tab"
GO_NAMESPACES = "data/GO_BP/goID_2_namespace.tab"
GO_GENES = "data/GO_BP/collapsed_go.symbol"


def go_files() -> list[UpstreamFile]:
    """The pinned GO files the default background is read from: names, namespaces, genes."""
    return [lookup(HU_REPO, path, HU_COMMIT) for path in (GO_NAMES, GO_NAMESPACES, GO_GENES)]


def _two_columns(text: str) -> dict[str, str]:
    pairs = (line.split("\t") for line in text.splitlines())
    return {p[0]: p[1].strip() for p in pairs if len(p) >= 2 and p[0].startswith("GO:")}


def go_process_names(names: str, namespaces: str, genes: str) -> list[str]:
    """The names of the biological-process terms that carry genes, in file order."""
    name_of, namespace_of = _two_columns(names), _two_columns(namespaces)
    carrying = dict.fromkeys(
        parts[0]
        for parts in (line.split("\t") for line in genes.splitlines())
        if len(parts) == 3 and parts[2].strip() == "gene"
    )
    return [
        name_of[term]
        for term in carrying
        if namespace_of.get(term) == "biological_process" and name_of.get(term)
    ]


def dataset_names(questions: list[Question]) -> list[str]:
    """Every true name of GeneAgent's three datasets (the toy sets are their samples)."""
    from ..benchmarks import is_sample

    own = (q for q in questions if q.benchmark == "genesets" and not is_sample(q.task))
    return sorted({q.gold for q in own})


def write_background(questions_path: Path, go_paths: list[Path] | None, out: Path) -> int:
    """Write the background, one name a line (GO's first, then the datasets' not among
    them); ``go_paths``: the local copies of :func:`go_files` (None: the datasets' only)."""
    names = []
    if go_paths:
        names_text, namespaces_text, genes_text = (read_text(p) for p in go_paths)
        names = go_process_names(names_text, namespaces_text, genes_text)
    background = list(dict.fromkeys(names + dataset_names(read_questions(questions_path))))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(name + "\n" for name in background), encoding="utf-8")
    tmp.replace(out)
    return len(background)


def read_background(path: Path) -> list[str]:
    return [n.strip() for n in Path(path).read_text(encoding="utf-8").splitlines() if n.strip()]
