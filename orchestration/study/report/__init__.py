"""The study's report, from the committed predictions alone: its sections, the findings, the build,
the documents that quote it, and the demo's table. On :mod:`orchestration.study.settings`, beside
the running (:mod:`orchestration.study`)."""
