"""One module per CLI verb; each exposes add_parser(subparsers) and run(args) -> exit code."""
