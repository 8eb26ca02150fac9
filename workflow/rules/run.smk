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
    threads: get_run_threads
    resources:
        **ENDPOINT_RESOURCES,
        # A shard that may reach NCBI holds one slot of this global resource, which
        # caps such jobs across a cluster (--resources ncbi=N); on one machine the
        # file-based request budget is shared by all jobs anyway.
        ncbi=get_ncbi_slots,
        # One slot of its model server's resource (endpoint_<host>), if it has one.
    params:
        spec=get_run_spec,
        recording=get_recording_arg,
        model_cache=get_model_cache(),
        model_dir=get_model_dir_arg,
    shell:
        "python -m helixbench run --spec {params.spec:q} --shard {wildcards.shard} --threads {threads}"
        " --questions {input.questions:q} {params.recording} {params.model_dir}"
        " --snapshot {input.snapshot:q} --model-cache {params.model_cache:q}"
        " --out {output:q} > {log:q} 2>&1"


rule prepare_local_model:
    output:
        directory(paths.LOCAL_MODEL),
    log:
        "logs/models/{model}.log",
    conda:
        CONDA_ENV
    params:
        spec=get_model_spec,
    shell:
        "python -m helixbench prepare-model --spec {params.spec:q} --out {output:q}"
        " > {log:q} 2>&1"
