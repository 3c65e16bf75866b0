"""The append-only event tables as they stand: an annotator's current label, marks and answer
judgments of a pair (the newest event of each), read one pair at a time for screens and in bulk
(ids coded once, no Python object per row) for evaluation and agreement.

Nothing here writes a grade: writing is ``labels`` (judging) and ``transfer`` (imports). This
floor sits under the gold, the access rules and the judging queue, which all read the current
labels.
"""
