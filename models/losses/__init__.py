"""Training objectives of MODELS.md, one module per objective; pure functions of tensors."""
