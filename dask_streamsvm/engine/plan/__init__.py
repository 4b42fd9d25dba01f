"""The plan of a fit: the problem, losses, certificates, results, calibration, sizes, row layouts."""
