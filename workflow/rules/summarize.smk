# Stage 5: each run's share of the report, in its own job as the run finishes (on the
# cluster when there is one); the report joins these.
rule summarize_run:
    input:
        questions=paths.QUESTIONS,
        scores=paths.RUN_SCORES,
        judge_calls=paths.RUN_JUDGE_CALLS,
        shards=get_run_shards,
    output:
        summary=paths.RUN_SUMMARY,
        prompts=paths.RUN_PROMPTS,
        scores=paths.RUN_SCORE_TABLE,
        details=paths.RUN_DETAILS,
    log:
        "logs/summarize/{model}/{method}/{variant}.log",
    conda:
        ENVS["report"]
    params:
        spec=get_run_spec,
        scoring=verbatim(json.dumps(PLAN.scoring, sort_keys=True)),
        version=paths.RUN_SUMMARY_VERSION,
    shell:
        "python -m helixbench summarize --spec {params.spec:q} --questions {input.questions:q}"
        " --scoring {params.scoring:q} --scores {input.scores:q} --out {output.summary:q}"
        " --details {output.details:q} --judge-calls {input.judge_calls:q}"
        " {input.shards:q} > {log:q} 2>&1"


# A run in other tools' formats (report.exports): Every Eval Ever, Inspect eval logs.
rule export_run:
    input:
        unpack(get_export_inputs),
    output:
        directory(paths.RUN_EXPORTS),
    log:
        "logs/export/{model}/{method}/{variant}.log",
    conda:
        ENVS["report"]
    params:
        spec=get_run_spec,
        scoring=verbatim(json.dumps(PLAN.scoring, sort_keys=True)),
        formats=" ".join(EXPORTS),
        inspect_env=get_inspect_env_arg,
    shell:
        "python -m helixbench export --spec {params.spec:q} --questions {input.questions:q}"
        " --scoring {params.scoring:q} --scores {input.scores:q} --summary {input.summary:q}"
        " --formats {params.formats} {params.inspect_env} --out {output:q}"
        " {input.shards:q} > {log:q} 2>&1"
