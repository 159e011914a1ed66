"""Plumbing every stage shares: files local or on object stores, Parquet, huge compressed dumps read in ranges, bad-input counts, stage reports."""
