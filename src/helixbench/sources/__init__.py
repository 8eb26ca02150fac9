"""Runs other systems made, read as records of theirs: GeneGPT's recorded Codex runs
(:mod:`.recordings`), other groups' published outputs (:mod:`.published`, GeneAgent's
in :mod:`.geneagent_outputs`), and which upstream files hold answers an agent may
never read (:mod:`.answer_keys`)."""
