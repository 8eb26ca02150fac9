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
    resources:
        # A shard that may reach NCBI holds one slot of this global resource, which
        # caps such jobs across a cluster (--resources ncbi=N); on one machine the
        # file-based request budget is shared by all jobs anyway.
        ncbi=get_ncbi_slots,
    params:
        spec=get_run_spec,
        recording=get_recording_arg,
    shell:
        "python -m helixbench run --spec {params.spec:q} --shard {wildcards.shard}"
        " --questions {input.questions:q} {params.recording}"
        " --snapshot {input.snapshot:q} --out {output:q} > {log:q} 2>&1"
