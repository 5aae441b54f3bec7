"""The TUI's workers: each blocking thing (power sampling, server polling, measuring) on a daemon
thread, posting messages to the app.
"""
