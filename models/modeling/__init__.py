"""The networks of docs/models.md: encoders, rankers and the DAP and CCP heads."""
