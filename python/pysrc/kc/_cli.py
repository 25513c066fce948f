"""The `kc` command installed with the Python package: the same command line as the Rust
binary (kc's own argument parser, run in this process)."""
import sys

from . import _native


def main():
    # `kc exec --ranks all` starts each rank with this same entry point.
    _native.init_cli([sys.executable, "-m", "kc._cli"])
    sys.exit(_native.run_cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
