"""What is written to disk: model files (archives) and checkpoints."""
