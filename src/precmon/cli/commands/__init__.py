"""One module a command: each runs its subcommand from the parsed arguments (the argparse tree in
cli/parser.py imports them lazily, so `precmon --help` stays fast and a headless command never
loads textual)."""
