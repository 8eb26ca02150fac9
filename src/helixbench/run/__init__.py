"""A run job: a shard's questions in flight and their records (:mod:`.shard`), the
progress it prints and ``helixbench status`` (:mod:`.progress`), and the warnings
about runs with too many errors (:mod:`.health`)."""
