"""helixbench: reproducible benchmarks of tool-augmented language models on genomics questions."""

__version__ = "0.1.0"
