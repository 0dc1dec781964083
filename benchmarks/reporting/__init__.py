"""Measuring a run and reporting it: wall time and memory of one call and the machine
(`measure`), what a plan achieved (`metrics`), progress, plots, and issue 21's targets judged
over one or several seeds. Never imports a simulation or an entry point.
"""
