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


rule score_run:
    input:
        questions=paths.QUESTIONS,
        shards=get_run_shards,
        background=get_percentile_background,
        ragas_env=get_ragas_env,
    # The per-question scores and judge calls are written by the job itself, moved in
    # place once it succeeds: never outputs, which Snakemake deletes before a job and
    # after a failed one (a rescore whose judge is down would lose them).
    output:
        summary=paths.RUN_SUMMARY,
        prompts=paths.RUN_PROMPTS,
        table=paths.RUN_SCORE_TABLE,
        details=paths.RUN_DETAILS,
    log:
        "logs/score/{model}/{method}/{variant}.log",
    conda:
        ENVS["score"]
    params:
        spec=get_run_spec,
        scoring=verbatim(json.dumps(PLAN.scoring, sort_keys=True)),
        scorer_models=verbatim(get_scorer_models_arg()),
        model_cache=verbatim(get_model_cache()),
        background=get_background_arg,
        ragas_env=get_ragas_env_arg,
        version=paths.RUN_SUMMARY_VERSION,  # a new summary format rescores
        scores=lambda wildcards: get_run(wildcards).score_path,
        judge_calls=lambda wildcards: get_run(wildcards).judge_calls_path,
    shell:
        "python -m helixbench score --spec {params.spec:q} --questions {input.questions:q}"
        " --scoring {params.scoring:q} {params.scorer_models} --model-cache {params.model_cache:q}"
        " {params.background} {params.ragas_env} --judge-calls {params.judge_calls:q}"
        " --out {params.scores:q} --summary {output.summary:q} --details {output.details:q}"
        " {input.shards:q} > {log:q} 2>&1"
