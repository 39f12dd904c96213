"""locus tools: run locus-bench sweeps, draw the seeds' figures on this machine, report.

The seeds measured on machines with 24 to 56 hardware threads; these tools map each
figure's setup onto the machine at hand (its CPU count and cache sizes) so that the shape
of a result, not its absolute numbers, can be compared.
"""
