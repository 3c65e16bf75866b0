"""An LLM as one more annotator: ``prompt`` builds and reads the prompts, ``client`` talks to an
OpenAI-compatible chat-completions server, ``judge`` grades the pool and keeps an audit row
per request.
"""
