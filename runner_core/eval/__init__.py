"""`runner eval`: outcomes of runs, their statistics and the summary documents (pure)."""
