"""The terminal: the spec's lines (or JSON) on stdout, problems on stderr, a status line."""

from axe.adapters.console.output import ConsoleOutput as ConsoleOutput
