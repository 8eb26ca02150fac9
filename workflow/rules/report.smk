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
        sources=verbatim(get_config_sources()),
        # The folder holding the outputs (index.html's).
        out_dir=lambda wildcards, output: os.path.dirname(
            next(o for o in output if os.path.basename(o) == "index.html")
        ),
    # (the config on standard input, from the shell's own printf: a sweep's config is
    # past the 128 KiB one argument of a program may hold)
    shell:
        "printf '%s' {params.config:q} | python -m helixbench report --config-json -"
        " --out-dir {params.out_dir:q} --config-sources {params.sources:q} > {log:q} 2>&1"
