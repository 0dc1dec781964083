"""The review phase: which records still hold and what is left to plan (`review`), what the cycle
holds from the ledger and commits into it (`ledgerplan`), placements released before planning
(`releases`), and hold tokens named by their JobSets for what users read (`holder_names`)."""
