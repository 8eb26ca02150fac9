# Stage 4: per-question scores of a run and, in the same job (one start, one read of
# its records), its share of the report; rescoring never reruns a model.


# The percentile scorer's background, built (and encoded) once for every score job
# that ranks against it: GO's named biological processes, then the datasets' names.
rule percentile_background:
    input:
        questions=paths.QUESTIONS,
        go=[upstream_path(f) for f in go_files()],
    output:
        paths.PERCENTILE_BACKGROUND,
    log:
        "logs/score/percentile-background.log",
    conda:
        ENVS["score"]
    threads: 4  # (Snakemake gives it no more than --cores) every score job waits for it
    params:
        scoring=verbatim(json.dumps(PLAN.scoring, sort_keys=True)),
        model_cache=verbatim(get_model_cache()),
    shell:
        "python -m helixbench background --questions {input.questions:q} --go {input.go:q}"
        " --scoring {params.scoring:q} --model-cache {params.model_cache:q}"
        " --out {output:q} > {log:q} 2>&1"


# A batch of runs (the plan's, in order, `score_batch` at a time across models) scored
# and summarized in one process: one start, one read of the question table, the encoder
# loaded once. A run's files are moved in place by the job when that run is done, beside
# a fingerprint of what shaped them; the batch's record is the rule's one output
# (Snakemake deletes a job's outputs before it runs and after it fails: a rescore whose
# judge is down would lose them). A run whose fingerprint is unchanged is left as it is,
# so a run added to a finished sweep is scored alone and a batch cut short resumes.
rule score_batch:
    input:
        questions=paths.QUESTIONS,
        shards=get_batch_shards,
        background=get_batch_background,
        ragas_env=get_batch_ragas_env,
    output:
        paths.SCORE_BATCH,
    log:
        "logs/score/batch-{batch}.log",
    wildcard_constraints:
        batch=r"\d+-[0-9a-f]{8}",
    conda:
        ENVS["score"]
    params:
        runs=get_batch_jobs,  # (a run added or changed: its batch runs again, no other)
        scoring=PLAN.scoring,
        scorer_models={name: spec for _, name, spec in PLAN.scoring_models()},
        model_cache=get_model_cache(),
        version=paths.RUN_SUMMARY_VERSION,  # a new summary format rescores
    script:
        "../scripts/score_batch.py"
