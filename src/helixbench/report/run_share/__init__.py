"""A run's share of the report, made by its score job as the run finishes
(:mod:`.run_summary`): its rows of the tables, the facts of its records, its
questions for the HTML page (:mod:`.details`), the error types of its wrong answers
and the tool replies and code runs it read."""
