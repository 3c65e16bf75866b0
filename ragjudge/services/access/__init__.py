"""Who is asking, and what they may see and change.

``identity`` resolves who is at the keyboard (a login token, ``--by``, ``$RAGJUDGE_USER``, the
operating system's login name) once; ``roster`` keeps the annotators' records (roles, kinds,
status, reference flags, tokens); ``visibility`` is the one rule for what an identity may see of
other people's grades and the gold and what it may change, and makes the answer, an
:class:`~ragjudge.services.access.rights.Access` (``rights``), which every service that reveals
or changes something takes and asks. Every floor above asks here; none decides a right itself.
"""
