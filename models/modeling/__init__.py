"""The networks of MODELS.md: encoders, rankers and the DAP and CCP heads."""
