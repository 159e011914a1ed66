"""What a user runs beside the build: download a release, load or validate it, read it with ir_datasets, its HTML report, sample dumps, the Elasticsearch compose file."""
