# Stage 5: the report under results/report/.


rule report:
    input:
        get_report_inputs(),
    output:
        report(
            f"{paths.REPORT_DIR}/report.md",
            caption="../report/report.rst",
            category="Report",
        ),
        report(
            f"{paths.REPORT_DIR}/scores.csv",
            caption="../report/scores.rst",
            category="Scores",
        ),
        report(
            f"{paths.REPORT_DIR}/replay.csv",
            caption="../report/replay.rst",
            category="Replay",
        ),
        f"{paths.REPORT_DIR}/errors.csv",
        report(
            f"{paths.REPORT_DIR}/cost.csv",
            caption="../report/cost.rst",
            category="Cost",
        ),
        report(
            f"{paths.REPORT_DIR}/table2.md",
            caption="../report/table2.rst",
            category="Scores",
        ),
        f"{paths.REPORT_DIR}/table2.csv",
        f"{paths.REPORT_DIR}/genehop.md",
        f"{paths.REPORT_DIR}/provenance.json",
    log:
        "logs/report.log",
    conda:
        CONDA_ENV
    params:
        config=get_config_json(),
        out_dir=get_output_dir,
    shell:
        "python -m helixbench report --config-json {params.config:q} --out-dir {params.out_dir:q}"
        " > {log:q} 2>&1"
