"""What a build puts out and how it is read back: the release's layout, its JSONL lines and DOCS files, MULTI-8, the statistics tables."""
