"""The ``punctual`` command line: one module per subcommand, wired in ``main``.

Belongs here: argument parsing, output formatting and exit codes. Every decision is delegated
to the layers below, so the command line and the operator share one code path.
"""
