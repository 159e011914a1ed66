"""The paper's method, stage by stage (docs/method.md): dumps found, text extracted and truncated, entities linked, titles searched, labels given and carried."""
