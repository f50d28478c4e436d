"""A real full disk for a test: a 64 KiB tmpfs mounted over a folder and filled to the last byte.

Mounting needs root; the test is skipped otherwise. Whatever the folder held before is copied in
first, so earlier good data sits on the full disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def full_disk(folder: Path, size: str = "64k") -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    with tempfile.TemporaryDirectory() as saved:
        shutil.copytree(folder, saved, dirs_exist_ok=True)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, check=False).returncode != 0:
            pytest.skip("mounting a tmpfs needs root")
        try:
            shutil.copytree(saved, folder, dirs_exist_ok=True)
            with open(folder / ".filler", "wb", buffering=0) as filler:  # to the last byte
                for chunk in (4096, 1):
                    try:
                        while True:
                            filler.write(b"\0" * chunk)
                    except OSError:
                        pass
            yield folder
        finally:
            subprocess.run(["umount", "-l", str(folder)], check=False)
