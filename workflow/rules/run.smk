# Stage 3: one job per shard of a run (model x method over all its tasks; shards
# from config); a killed job resumes from the records it already wrote (see
# helixbench.transcripts).


rule run_shard:
    input:
        unpack(get_run_inputs),
    output:
        paths.RUN_SHARD,
    log:
        "logs/run/{model}/{method}/{variant}/shard-{shard}-of-{shards}.log",
    conda:
        get_run_env
    threads: RUN_THREADS
    resources:
        # ncbi: one slot for a shard that may reach NCBI; it caps such jobs across a
        # cluster (--resources ncbi=N), while on one machine the file-based request
        # budget is shared by all jobs anyway. endpoint_<host>_<port>: one slot of
        # its model server. gpu: a local model's GPUs. See common.smk.
        **RUN_RESOURCES,
    params:
        spec=get_run_spec,
        model_cache=verbatim(get_model_cache()),
        model_dir=get_model_dir_arg,
    shell:
        "python -m helixbench run --spec {params.spec:q} --shard {wildcards.shard} --threads {threads}"
        " --questions {input.questions:q} {params.model_dir}"
        " --model-cache {params.model_cache:q}"
        " --out {output:q} --log {log:q}"


rule prepare_local_model:
    output:
        directory(paths.LOCAL_MODEL),
    log:
        "logs/models/{weights}.log",
    conda:
        ENVS["local"]
    params:
        spec=get_weights_spec,
    shell:
        "python -m helixbench prepare-model --spec {params.spec:q} --out {output:q}"
        " > {log:q} 2>&1"


# A seed system's own environment (helixbench.methods.originals): a venv with the
# versions upstream pins, or under --sdm conda the environment of its file.
rule original_env:
    input:
        get_original_env_file,
    output:
        paths.ORIGINAL_ENV,
    log:
        "logs/envs/{env}.log",
    conda:
        get_original_env_conda
    params:
        in_place=ORIGINAL_ENV_IN_PLACE,
    shell:
        "python -m helixbench env {input:q} --out {output:q} {params.in_place}"
        " > {log:q} 2>&1"


# What a seed system builds before it runs (BRAD-Agent: its RAG database), in its
# own environment and outside the agent sandbox, which then shows it read-only.
rule prepare_original:
    input:
        unpack(get_prepare_original_inputs),
    output:
        paths.ORIGINAL_PREPARED,
    log:
        "logs/originals/{original}.log",
    conda:
        ENVS["run"]
    shell:
        "python -m helixbench prepare-original {wildcards.original:q} --env {input.env:q}"
        " --out {output:q} > {log:q} 2>&1"


# The peers' own wording of LAB-Bench's prompts (inspect_evals' template, chembench's
# chain-of-thought line), read from their packages: a multiple-choice run's input.
rule peer_templates:
    input:
        paths.PEER_ENV,
    output:
        paths.PEER_TEMPLATES,
    log:
        "logs/peers/lab-bench.log",
    conda:
        ENVS["run"]
    shell:
        "python -m helixbench peer-templates --env {input:q} --out {output:q} > {log:q} 2>&1"
