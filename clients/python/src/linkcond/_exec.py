"""``linkcond exec``: one program run whole on the conditioned link."""

from __future__ import annotations

import signal
import subprocess
from typing import Mapping, NamedTuple, Optional, Sequence, Union

from ._binary import child_environment, find_binary, new_token
from .errors import LinkcondError


class ExecResult(NamedTuple):
    """The program's exit status (128+N when signal N ended it, 127 not found, 126 cannot run; 1 or 2 when
    linkcond itself could not start it, as its stderr says), its stdout, and its stderr, which also carries
    linkcond's own lines (``ready control URL`` and notices)."""

    status: int
    stdout: str
    stderr: str


def exec(profile: str, argv: Sequence[str], *, forward: Sequence[int] = (), mode: Optional[str] = None,
         scenario: Optional[str] = None, args: Sequence[str] = (), input: Union[str, None] = None,
         timeout: Optional[float] = None, binary: Optional[str] = None,
         env: Optional[Mapping[str, str]] = None) -> ExecResult:
    """Runs ``argv`` under ``linkcond exec --profile PROFILE`` and waits for it.

    forward: ports whose 127.0.0.1:PORT inside reaches 127.0.0.1:PORT on the host, through the link.
    mode: ``"auto"``, ``"tun"`` or ``"proxy"``. scenario: a shipped scenario's name or a file's path.
    args: more ``linkcond exec`` options. input: the program's standard input (default: none).
    timeout: seconds before linkcond is sent SIGTERM (then SIGKILL 10 s later) and LinkcondError is raised.
    """
    if isinstance(argv, str):
        raise TypeError("argv is a list: the program and its arguments")
    if not argv:
        raise ValueError("exec needs a program to run")
    command = [find_binary(binary, env), "exec", "--profile", profile]
    if forward:
        command += ["--forward", ",".join(str(port) for port in forward)]
    if mode is not None:
        command += ["--mode", mode]
    if scenario is not None:
        command += ["--scenario", scenario]
    command += list(args) + ["--"] + list(argv)
    process = subprocess.Popen(command, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=child_environment(new_token(), env))
    data = None if input is None else input.encode("utf-8")
    try:
        out, err = process.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        raise LinkcondError(f"linkcond exec {' '.join(argv)} did not end within {timeout:g} s and was stopped; "
                            "its stderr:\n" + err.decode("utf-8", errors="replace").rstrip()) from None
    status = process.returncode
    return ExecResult(status if status >= 0 else 128 - status, out.decode("utf-8", errors="replace"),
                      err.decode("utf-8", errors="replace"))
