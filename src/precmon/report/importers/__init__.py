"""Other tools' result files read as precmon results documents, for `precmon compare`:
llama-bench `-o json` (llama_bench), llama-benchy's report (llama_benchy); `dispatch.load_any` picks by shape."""
