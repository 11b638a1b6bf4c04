"""nsvqa, laid out as the flow: generation (data) → artifacts (one owner per file) → models (the one interface, NS-VQA / P-NSVQA) → evaluation → training (one engine) → experiment."""
