"""One widget per file; each renders what the app hands it and computes nothing itself."""
