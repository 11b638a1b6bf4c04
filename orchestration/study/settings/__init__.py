"""The study's settings and its plan: the config, the pieces, a piece's attempts, the checks'
records and the budget. Data and arithmetic, the study's bottom floor (:mod:`orchestration.study`)."""
