"""``python -m mcmpart.distributed compare [--address ADDR] [--num-cpus N]
[--max-retries N] FILES... [compare's flags]``: ``mcmpart compare`` with its
runs as Ray tasks (see ``mcmpart.distributed.compare``)."""

from __future__ import annotations

import sys

USAGE = """usage: python -m mcmpart.distributed compare [--address ADDR] [--num-cpus N] [--max-retries N] FILES... [FLAGS]

Runs `mcmpart compare FILES... FLAGS` (the same flags: see `--help`) with
its runs as Ray tasks, and writes the same journal, summaries and figures.
  --address ADDR     the Ray cluster to join (ray.init(address=ADDR));
                     a local one when not given
  --num-cpus N       CPUs of the local cluster (default: all)
  --max-retries N    times a task whose worker died is run again (default 3)
"""


def _take(words, flag, convert):
    """Removes `flag VALUE` / `flag=VALUE` from words; gives VALUE."""
    for i, w in enumerate(words):
        if w == flag:
            if i + 1 >= len(words):
                raise SystemExit(f"error: {flag} needs a value\n\n{USAGE}")
            value = words[i + 1]
            del words[i : i + 2]
        elif w.startswith(flag + "="):
            value = w[len(flag) + 1 :]
            del words[i]
        else:
            continue
        try:
            return convert(value)
        except ValueError:
            raise SystemExit(f"error: {flag} {value!r} is not valid\n\n{USAGE}") from None
    return None


def main(argv=None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if not words or words[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if words else 2
    if words[0] != "compare":
        sys.stderr.write(f"error: unknown command {words[0]!r}\n\n{USAGE}")
        return 2
    words = words[1:]
    address = _take(words, "--address", str)
    num_cpus = _take(words, "--num-cpus", int)
    retries = _take(words, "--max-retries", int)
    from .. import MCMError
    from . import RayMissing, compare

    try:
        compare(words, address=address, num_cpus=num_cpus, max_retries=3 if retries is None else retries)
    except RayMissing as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    except MCMError as e:
        sys.stderr.write(f"{e}\n")
        return {"usage": 2, "timeout": 3, "interrupted": 130}.get(getattr(e, "kind", ""), 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
