"""One round put together from the phases, decided without touching the cluster: what it makes of
its observation (`roundreview`), the ledger change it commits (`roundchange`), and its writes and
events (`roundwrites` over `writeplan` and `bindingwrites`). Only the cycle (reconcile.py) imports
this folder."""
