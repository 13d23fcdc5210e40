"""Task packages: a catalog operator rendered in the FlashInfer Trace schema for the evaluator."""
