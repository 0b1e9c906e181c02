"""A missing module is one line on stderr naming what installs it, and exit 2.

    from require import require
    require("numpy", "torch")      # before `import numpy`, `import torch`

require(*modules) returns when every module imports. Otherwise it prints, for
the first that does not,
    <script> needs <module>: <how to install it>
and exits 2. Debian's modules (numpy, matplotlib, torch) are named by their
package, which scripts/setup.sh installs for /usr/bin/python3; a script run by
another interpreter is told to run under /usr/bin/python3. In a venv (the
newest peers in bench/.venv, per bench/README.md), or for a module only PyPI
has, the line names the venv's pip instead.
"""
import importlib
import os
import sys

DEBIAN = {"numpy": "python3-numpy", "matplotlib": "python3-matplotlib", "torch": "python3-torch"}
PYPI = {"numpy": "numpy", "matplotlib": "matplotlib", "torch": "torch",
        "tensorflow": "tensorflow-cpu", "onnxruntime": "onnxruntime"}
SYSTEM_PYTHON = "/usr/bin/python3"


def how_to_install(module):
    in_venv = sys.prefix != sys.base_prefix
    if module in DEBIAN and not in_venv:
        how = f"sudo apt install {DEBIAN[module]} (or scripts/setup.sh)"
        if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON):
            how += f", then run it with {SYSTEM_PYTHON} (this is {sys.executable})"
        return how
    return (f"{sys.executable} -m pip install {PYPI.get(module, module)}"
            " (bench/compare_pytorch.sh installs the newest peers into bench/.venv)")


def require(*modules):
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            script = os.path.basename(sys.argv[0]) or "python"
            print(f"{script} needs {module}: {how_to_install(module)}", file=sys.stderr)
            sys.exit(2)
