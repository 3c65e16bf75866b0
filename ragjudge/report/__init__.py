"""``ragjudge report``: one evaluation's result as a file to hand on — a self-contained HTML page
(inline CSS, inline SVG plots, a small inline script to sort tables, nothing fetched) or a
Markdown summary for a pull request's comment.

- :mod:`~ragjudge.report.build` gathers every section from the services the command line uses
  (the same evaluation as ``ragjudge eval``, the same intervals, the evaluation screen's ranges
  over annotators, the all-pairs comparison, agreement, digests), filtered by what the viewer
  may see (:mod:`ragjudge.services.access.visibility`);
- :mod:`~ragjudge.report.html` and :mod:`~ragjudge.report.markdown` render it; every text from
  data is made visible (:mod:`ragjudge.safetext`) and escaped for its format;
- :mod:`~ragjudge.report.svg` draws the plots; :mod:`~ragjudge.report.natural` orders query ids
  as people count (1, 2, 10, 100); :mod:`~ragjudge.report.settled` is the section of how settled
  each comparison is, shown when its result is given.

The package imports nothing here, so a command loads only what it uses.
"""
