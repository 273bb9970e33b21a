"""A trivial entry point the bridge's tests call."""
import json
import sys


def echo(arg: str) -> str:
    data = json.loads(arg)
    return json.dumps({"echo": data, "python": sys.version.split()[0]})


def fail(arg: str) -> str:
    raise ValueError("requested failure: " + arg)
