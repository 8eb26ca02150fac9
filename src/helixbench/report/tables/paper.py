"""Values the GeneGPT paper published (Jin et al. 2024, Tables 2 and 3), for comparison.

Keyed by the recording and mask they belong to; only the upstream-scored
(``genegpt``) metric has published counterparts.
"""

from __future__ import annotations

# Table 2, GeneGPT-full (111111) and GeneGPT-slim (001001) columns.
_TABLE2 = {
    "Gene alias": (0.80, 0.84),
    "Gene name conversion": (1.00, 1.00),
    "Gene SNP association": (1.00, 1.00),
    "Gene location": (0.62, 0.66),
    "SNP location": (1.00, 0.98),
    "Gene disease association": (0.76, 0.66),
    "Protein-coding genes": (0.76, 1.00),
    "Human genome DNA aligment": (0.44, 0.44),
    "Multi-species DNA aligment": (0.86, 0.88),
    "macro": (0.80, 0.83),
}
# Table 2's module averages, same columns.
TABLE2_MODULES = {
    "111111": {
        "Nomenclature": 0.90,
        "Genomic location": 0.87,
        "Functional analysis": 0.76,
        "Sequence alignment": 0.65,
    },
    "001001": {
        "Nomenclature": 0.92,
        "Genomic location": 0.88,
        "Functional analysis": 0.84,
        "Sequence alignment": 0.66,
    },
}
# Table 3 (GeneHop). Only Disease gene location was scored automatically; the
# other two were judged by hand and are shown for reference, not compared.
TABLE3 = {
    "SNP gene function": ("101110", 0.55),
    "Disease gene location": ("101110", 0.67),
    "sequence gene alias": ("111011", 0.28),
}


def published(recording: str | None, mask: str, benchmark: str, task: str, metric: str):
    """The paper's value for a replayed run's task (``"macro"`` for the average), else None."""
    if recording != "genegpt-2023" or metric != "genegpt":
        return None
    if benchmark == "geneturing" and task in _TABLE2:
        column = {"111111": 0, "001001": 1}.get(mask)
        return None if column is None else _TABLE2[task][column]
    if benchmark == "genehop" and task == "Disease gene location":
        table_mask, value = TABLE3[task]
        return value if mask == table_mask else None
    return None
