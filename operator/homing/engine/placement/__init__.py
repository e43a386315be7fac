"""Where a pod should go: the admission pipeline (decide.py), the job kinds that say which
topology a job asks for, the strategies that turn memory into terms, one rule per term, the
weights and the patch."""
