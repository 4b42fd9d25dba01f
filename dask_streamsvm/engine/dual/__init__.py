"""The dual solvers: coordinate descent in memory and streamed (StreamSVM, SBM, BM), their row cache."""
