# Stage 5: a run in other tools' formats, in its own job (on the cluster when there is
# one); the run's share of the report comes from its score job (score.smk).


# Every Eval Ever, Inspect eval logs (report.exports).
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
        scores=lambda wildcards: get_run(wildcards).score_path,  # (its score batch's)
        summary=lambda wildcards: get_run(wildcards).summary_path,
        inspect_env=get_inspect_env_arg,
    shell:
        "python -m helixbench export --spec {params.spec:q} --questions {input.questions:q}"
        " --scoring {params.scoring:q} --scores {params.scores:q} --summary {params.summary:q}"
        " --formats {params.formats} {params.inspect_env} --out {output:q}"
        " {input.shards:q} > {log:q} 2>&1"
