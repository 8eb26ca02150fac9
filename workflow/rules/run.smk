# Stage 3: one job per (model, method, task, shard); a killed job resumes from
# the records it already wrote (see helixbench.records).


rule run_shard:
    input:
        unpack(get_run_inputs),
    output:
        paths.RUN_SHARD,
    log:
        "logs/run/{model}/{method}/{benchmark}/{task}/shard-{shard}-of-{shards}.log",
    conda:
        CONDA_ENV
    params:
        spec=get_run_spec,
    shell:
        "python -m helixbench run --spec {params.spec:q} --shard {wildcards.shard}"
        " --questions {input.questions:q} --recording {input.recording:q}"
        " --snapshot {input.snapshot:q} --out {output:q} > {log:q} 2>&1"
