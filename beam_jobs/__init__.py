"""Apache Beam pipelines, one module per job; each has ``run(argv)`` like Beam's examples."""
