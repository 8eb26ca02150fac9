# Stage 6: the report under results/report/, joined from the runs' summaries.


rule report:
    input:
        get_report_inputs(),
    output:
        get_report_outputs(),
    log:
        "logs/report.log",
    conda:
        ENVS["report"]
    params:
        config=verbatim(get_config_json()),
        out_dir=get_output_dir,
    shell:
        "python -m helixbench report --config-json {params.config:q} --out-dir {params.out_dir:q}"
        " > {log:q} 2>&1"
