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
    shell:
        "python -m helixbench report --config-json {params.config:q} --out-dir {params.out_dir:q}"
        " --config-sources {params.sources:q} > {log:q} 2>&1"


# The page with the runs' files it loads, as one folder: Snakemake's own report
# (`snakemake --report report.zip`) bundles it whole, so the bundled page shows every
# question. Hard links, not copies.
rule report_page:
    input:
        page=f"{paths.REPORT_DIR}/index.html",
        runs=get_run_pages(),
    output:
        report(
            directory(paths.REPORT_PAGE_DIR),
            htmlindex="index.html",
            caption="../report/index.rst",
            category="Report",
        ),
    log:
        "logs/report-page.log",
    conda:
        ENVS["fetch"]
    params:
        # results/report/runs, from a run's page: runs/<model>/<method>.js
        runs=lambda wildcards, input: os.path.dirname(os.path.dirname(input.runs[0])),
    shell:
        "(mkdir -p {output:q} && cp -l {input.page:q} {output:q}/"
        " && cp -rl {params.runs:q} {output:q}/runs) > {log:q} 2>&1"
