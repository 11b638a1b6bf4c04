"""The study's one-off checks, the redundancy scale check and the perception schedule check: the
top floor, on a piece's runner (:mod:`orchestration.study`)."""
