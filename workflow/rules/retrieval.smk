# A corpus's vector index for retrieval-augmented methods (brad): chunked, embedded
# and written once under resources/index/<key>/, then read by every run job.


rule build_index:
    input:
        get_index_inputs,
    output:
        paths.INDEX_MARKER,
    log:
        "logs/index/{key}.log",
    conda:
        ENVS["local"]
    threads: 2
    params:
        settings=get_index_settings,
    shell:
        "python -m helixbench index --settings {params.settings:q} --out {output:q}"
        " > {log:q} 2>&1"
