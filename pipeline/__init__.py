"""The clirmatrix library: dump formats, truncation, title matching, file I/O and the CLI."""
