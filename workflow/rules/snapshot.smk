# Stage 2: the demonstration snapshot each recorded run's prompt header embeds.


rule recorded_snapshot:
    input:
        get_recording_file,
    output:
        paths.RECORDED_SNAPSHOT,
    log:
        "logs/snapshot/{recording}/{run_dir}/{task}.log",
    wildcard_constraints:
        run_dir=r"[A-Za-z0-9_]+_results(/[A-Za-z0-9_]+)?",
    conda:
        ENVS["fetch"]
    params:
        mask=get_recorded_mask,
        url=get_recorded_url,
    shell:
        "python -m helixbench snapshot --recording {input:q} --recording-name {wildcards.recording:q}"
        " --url {params.url:q} --mask {params.mask} --out {output:q} > {log:q} 2>&1"
