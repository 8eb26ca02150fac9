"""The data: upstream files pinned by URL and sha256 (``upstream``, ``fetch``), the
question table of every benchmark (``questions``, ``overlap``), GeneGPT's recorded
runs (``recordings``), demonstration snapshots (``snapshots``) and other systems'
published outputs (``published``). Nothing here calls a model or a tool."""
