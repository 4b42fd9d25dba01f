"""Drivers between the estimators and the kernels: schedules and certificates."""
