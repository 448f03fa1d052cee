"""benchweb's command-line client (`benchweb`): see docs/user-guide/cli.md in the benchweb repository."""

__version__ = "0.1.0"
