"""Judging: what an annotator is shown next and what their keys record.

``queue`` steps an annotator through the pool; ``events`` records grades, skips, flags,
comments and undo; ``facets`` the facets and nuggets of a query and their links to chunks;
``texts`` the query and chunk as shown; ``answers`` judging generated answers; ``review`` a
lead's answers to flags and comments; ``assignment`` splitting the pool among annotators;
``sampling`` the random samples of the pool ``assign --sample`` draws and keeps; ``llmhints``
how an LLM annotator's grades shape a person's queue; ``scale`` the names of the grades.
"""
