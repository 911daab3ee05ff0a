"""What the benchmark scripts share: a command run to its end and its wall clock."""
import os
import subprocess
import sys
import time


def timed(command):
    """Runs `command` (a list), returns (seconds of wall clock, its stdout); a failure ends the
    calling script with the command and its stderr."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        script = os.path.basename(sys.argv[0])
        sys.exit(f"{script}: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return seconds, done.stdout
