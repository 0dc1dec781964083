"""Helpers every test folder shares: `cli` runs the CLI in process, `builders` makes Kubernetes
objects as files hold them. (Model objects and hypothesis strategies: `tests.strategies`.)"""
