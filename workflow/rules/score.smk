# Stage 4: per-question scores of a task; rescoring never reruns a model.


rule score_task:
    input:
        questions=paths.QUESTIONS,
        shards=get_task_shards,
    output:
        paths.TASK_SCORES,
    log:
        "logs/score/{model}/{method}/{benchmark}/{task}.log",
    conda:
        CONDA_ENV
    params:
        spec=get_run_spec,
        scorers=config["scorers"],
    shell:
        "python -m helixbench score --spec {params.spec:q} --questions {input.questions:q}"
        " --scorers {params.scorers} --out {output:q} {input.shards:q} > {log:q} 2>&1"
