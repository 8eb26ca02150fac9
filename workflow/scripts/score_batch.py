"""The score_batch rule's job: its runs scored and summarized in one process
(helixbench.scoring.batch), its record of each run written to its output."""

import logging
from pathlib import Path

from helixbench import job_logging
from helixbench.scoring.batch import score_batch, write_manifest

sm = snakemake  # noqa: F821 (Snakemake's own object in a rule's script)
job_logging.configure(sm.log[0])  # (as a command's: libraries quiet, keys redacted)
background = sm.input.background or None
ragas_env = sm.input.ragas_env or None
done = score_batch(
    sm.params.runs,
    sm.params.scoring,
    sm.params.scorer_models or None,
    Path(sm.input.questions),
    model_cache=Path(sm.params.model_cache),
    background=Path(background) if background else None,
    ragas_env=ragas_env,
)
write_manifest(Path(sm.output[0]), done)
scored = sum(d["state"] == "scored" for d in done.values())
logging.info("%d of %d runs scored, %d current", scored, len(done), len(done) - scored)
