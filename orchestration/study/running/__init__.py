"""Running the study's pieces: the frozen code tree, a piece's parses, a piece, and the launcher
of pieces as jobs. On :mod:`orchestration.study.settings`, beside the report (:mod:`orchestration.study`)."""
