"""Scoring: the runs of a project or of files against the gold.

``files`` reads qrels and runs from files; ``evaluation`` evaluates runs (``eval``,
``compare``, ``explain``); ``rag`` and ``answers`` gather the labels the RAG and answer
measures need, ``sampled`` the pool sample of the sampled estimators; ``live`` keeps every
measure of every run current while people label (the evaluation screen's engine), made of
``livespace`` (queries, runs, numbered pairs, the pool), ``livelabels`` (its copy of the current
labels and what is decided from it), ``livecore`` (data structures), ``livepass`` (evaluating
whole views and touched queries), ``livesnapshot`` (what the screen shows) and ``livedetails``
(intervals, agreement, the gold's composition); ``comparisons`` compares every pair of an
evaluation's runs (corrected p-values); ``provenance`` digests runs and the label snapshot
(``ragjudge report``).
"""
