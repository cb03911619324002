"""The ``pfslayout`` command line: one typer app, one module per command.

Every command takes ``--json`` and prints exactly one JSON document with it. Bad input never produces a
traceback: it is one line on stderr naming the field, and exit code 2.
"""

from __future__ import annotations

import sys

import typer

from pfslayout.cli import calibrate, cost, costmap, plan, render, summarise
from pfslayout.errors import InputError

app = typer.Typer(
    name="pfslayout",
    help="Cost-model-driven data layouts for OrangeFS: cost, plan, calibrate, cost-map, render.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

@app.callback()
def _root() -> None:
    """Cost-model-driven data layouts for OrangeFS."""


for module in (cost, plan, calibrate, costmap, render, summarise):
    module.register(app)


@app.command()
def version() -> None:
    """Print the pfslayout version."""
    from pfslayout import __version__

    print(__version__)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the app, turning InputError (and OSError on input files) into one line + exit 2."""
    try:
        app(args=argv, standalone_mode=False)
    except InputError as err:
        print(f"pfslayout: error: {err}", file=sys.stderr)
        sys.exit(2)
    except OSError as err:
        print(f"pfslayout: error: {err.filename or ''}: {err.strerror or err}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as exit_:
        sys.exit(exit_.exit_code)
    except typer.Abort:
        print("pfslayout: aborted", file=sys.stderr)
        sys.exit(1)
    except Exception as err:
        # Usage errors of typer's (vendored) click arrive here in non-standalone mode; matched by
        # duck type because typer does not export its click exception classes publicly.
        if hasattr(err, "format_message") and hasattr(err, "exit_code"):
            print(f"pfslayout: error: {err.format_message()}", file=sys.stderr)
            sys.exit(2)
        raise
