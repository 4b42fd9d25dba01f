"""The drivers of the one-pass SVM (streaming balls) and the budgeted kernel SVM (BSGD)."""
