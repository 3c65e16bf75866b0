"""The project database: opening it, its settings, and writing to it without holding anyone up.

``database`` opens and creates a project (:class:`~ragjudge.services.project.database.Project`);
``dberrors`` words what a database refused; ``staging`` lets an import write in short
transactions that take turns with the annotators; ``columns`` reads a TREC run or qrels file
as arrays for those imports. This is the lowest floor of the services: it imports none of them.
"""
