"""Who is asking, and what they may see and change.

``identity`` resolves who is at the keyboard (a login token, ``--by``, the operating system's
login name) once; ``roster`` keeps the annotators' records (roles, kinds, status, reference
flags, tokens); ``visibility`` is the one rule for what an identity may see of other people's
grades and the gold. Every floor above asks here; none decides a right itself.
"""
