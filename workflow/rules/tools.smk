# Tool calls: the cache seeded from recorded runs, and live demonstration snapshots.
# The cache itself (tools.cache) is a store that jobs add to, not a rule's output:
# a rerun must never delete replies already paid for.


rule seed_tool_cache:
    input:
        get_seed_files,
    output:
        paths.TOOL_CACHE_SEED,
    log:
        "logs/tools/seed-{recording}-{files}.log",
    wildcard_constraints:
        recording=r"[^/]+",
        files=r"[0-9a-f]+",
    conda:
        ENVS["fetch"]
    params:
        cache=verbatim(get_tools_cache()),
    shell:
        "python -m helixbench seed-cache --recording {wildcards.recording:q}"
        " --cache {params.cache:q} --out {output:q}"
        " {input:q} > {log:q} 2>&1"


rule live_snapshot:
    input:
        get_live_snapshot_seeds,
    output:
        paths.LIVE_SNAPSHOT,
    log:
        "logs/snapshot/live/{name}.log",
    conda:
        ENVS["fetch"]
    resources:
        ncbi=1,
    params:
        mode=get_live_snapshot_mode,
    shell:
        "python -m helixbench live-snapshot --name {wildcards.name:q} --mode {params.mode}"
        " --out {output:q} > {log:q} 2>&1"
