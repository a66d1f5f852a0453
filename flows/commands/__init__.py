"""One module per ``dorylus`` subcommand."""
