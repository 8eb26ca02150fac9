# Stage 4: per-question scores of a run; rescoring never reruns a model.


rule score_run:
    input:
        questions=paths.QUESTIONS,
        shards=get_run_shards,
    output:
        paths.RUN_SCORES,
    log:
        "logs/score/{model}/{method}.log",
    conda:
        ENVS["score"]
    params:
        spec=get_run_spec,
        scoring=verbatim(json.dumps(PLAN.scoring, sort_keys=True)),
        scorer_models=verbatim(get_scorer_models_arg()),
        model_cache=verbatim(get_model_cache()),
    shell:
        "python -m helixbench score --spec {params.spec:q} --questions {input.questions:q}"
        " --scoring {params.scoring:q} {params.scorer_models} --model-cache {params.model_cache:q}"
        " --out {output:q} {input.shards:q} > {log:q} 2>&1"
