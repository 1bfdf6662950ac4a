"""Running the same read-only Python snippet in several processes at once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable


def outputs_under_hash_seeds(code: str, arg: str, seeds: Iterable[str], timeout: float) -> list[str]:
    """What ``python -c code arg`` prints under each ``PYTHONHASHSEED``, in the seeds' order. The
    processes start side by side (they only read), so a run costs one process's time on two
    cores; any still running when one fails is killed."""
    procs = [subprocess.Popen([sys.executable, "-c", code, arg], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed})
             for seed in seeds]
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, err[-2000:]
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs
