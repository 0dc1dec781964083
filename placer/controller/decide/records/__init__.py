"""What placer keeps in the cluster and sends to it, as plain data: the placement ledger
(`ledger`) and the bounds it and each JobSet's record must fit (`ledgersize`, `recordsize`), the
objects a binding becomes (`bindings`), and the writes a cycle decided on (`writes`). The bottom
of `decide/`: it imports nothing of the controller, so every phase above can read and build these.
"""
