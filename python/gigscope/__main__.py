"""The ``gigscope`` command of the Python package (and ``python -m gigscope``): the command line compiled into
the native extension, the same code as the ``gigscope`` binary that ``cargo install`` builds."""

import signal
import sys


def main() -> None:
    from gigscope import _native

    # Python turns Ctrl-C into an exception it can only raise once the command returns; the command line
    # expects the default (the process ends, as the binary's does), and sets its own handler where it
    # wants one (training).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.main(sys.argv))


if __name__ == "__main__":
    main()
