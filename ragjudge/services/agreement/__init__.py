"""Agreement between annotators, and whether their disagreement changes which run wins.

``ratings`` reads the people's current grades as :class:`ragjudge.metrics.agreement.Ratings`;
``views`` computes the statistics, breakdowns and disputed pairs a screen or ``agree`` shows;
``answers`` does the same for judgments of generated answers; ``quality`` finds suspicious
labelling (too fast, drifting, inconsistent with oneself); ``verdict`` scores the runs under
each annotator's labels and says whether the winner changes.
"""
