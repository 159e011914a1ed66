"""One reader per dump format; each yields plain records and knows no URLs or stages."""
