"""Super-CLEVR-style data generation: procedural vehicles, scene sampling, rendering, annotations."""
