"""One protocol class per server kind (OpenAI-compatible, llama.cpp, vLLM, Ollama, SGLang, LM
Studio, TGI) on the shared HTTP client.
"""
