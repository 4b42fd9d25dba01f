"""``dask-streamsvm compile``: the kernels compiled ahead (:mod:`dask_streamsvm.precompile`).

Run it once where a warm cache pays: at an install, at a container image's build (see
docs/guide/compile.md), on each machine of a cluster whose workers do not share the install.
"""

import json
import os
import sys

from .text import PROG, one_line, printable


def cmd_compile(args):
    """Run the representative fits in ``--jobs`` child processes; print what each compiled, the
    totals and where the cache is.  Exit status 1 if a fit failed (the others' kernels are kept)."""
    from .. import precompile

    jobs = args.jobs or precompile.default_jobs()
    where = os.environ.get("NUMBA_CACHE_DIR") or "numba's default: beside the source, else the user's"
    if not args.json:
        print(f"{PROG}: compiling the kernels of {len(precompile.FITS)} fits in {jobs} processes ({where})")
        sys.stdout.flush()

    def progress(report):
        if not args.json:
            print("\n".join(precompile.unit_lines(report["units"])), flush=True)

    report = precompile.compile_kernels(jobs=jobs, progress=progress)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print("\n".join(precompile.total_lines(report)[:2]))
    for error in report["errors"]:
        print(f"{PROG}: error: {printable(one_line(error))}", file=sys.stderr)
    return 1 if report["errors"] else 0
