"""The gold: what each pair's grade is, decided once for every path that scores.

``rules`` combines the annotators' grades into one (the aggregation rules, the reference and
its completeness); ``qrels`` makes a project's gold qrels; ``support`` is the same rule on facet
links, nugget support and answer judgments; ``adjudication`` records a lead's decision;
``pool`` is the judging pool (TREC pooling) and how much of it is judged.
"""
