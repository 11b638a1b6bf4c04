"""nsvqa: glue and infrastructure (data generation, datasets, pipeline, training, evaluation)."""
