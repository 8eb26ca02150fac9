"""The report's tables (each a ``results/report/<name>.csv``): a run's rows of them
made in its own job (:mod:`..run_share`), the whole table where the runs meet
(:mod:`..joined`, :mod:`..build`)."""
