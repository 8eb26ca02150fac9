# Stage 1: upstream files by URL (or from the mirror), checked against pinned sha256.


rule fetch_upstream:
    output:
        f"{paths.UPSTREAM_DIR}/{{relpath}}",
    log:
        "logs/fetch/{relpath}.log",
    wildcard_constraints:
        relpath=r"[^/]+/.+",
    conda:
        ENVS["fetch"]
    # (The mirror reaches the job as $HELIXBENCH_MIRROR, not as a parameter: a file
    # pinned by its sha256 is the same file wherever it came from, so a run with the
    # mirror and one without plan the same jobs.)
    params:
        lock=paths.UPSTREAM_LOCK,
        pin=get_pin_args,
    shell:
        "python -m helixbench fetch {output:q} {params.pin}"
        " --lock {params.lock:q} > {log:q} 2>&1"


# The question table's files in one job: fifty jobs, each a fresh process, cost
# seconds a run; each file is still checked against its own sha256.
rule fetch_benchmarks:
    output:
        get_benchmark_files(),
    log:
        "logs/fetch/benchmarks.log",
    conda:
        ENVS["fetch"]
    params:
        lock=paths.UPSTREAM_LOCK,
    shell:
        "python -m helixbench fetch {output:q} --lock {params.lock:q} > {log:q} 2>&1"


ruleorder: fetch_benchmarks > fetch_upstream


rule questions:
    input:
        get_benchmark_files(),
    output:
        paths.QUESTIONS,
    log:
        "logs/questions.log",
    conda:
        ENVS["fetch"]
    shell:
        "python -m helixbench questions --out {output:q} > {log:q} 2>&1"
