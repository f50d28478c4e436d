"""`--record` to a full disk (a real 64 KiB tmpfs, tests/support/full_disk.py): the answer the
model gave (paid for, with a real model) is still printed, then the error says the recording was
not saved and why; an earlier recording there is left as it was."""

from __future__ import annotations

import json

from tests.support.full_disk import full_disk

EARLIER = '{"turns": [{"text": "an earlier recording"}]}\n'


def test_a_finished_run_is_printed_when_its_recording_cannot_be_saved(agentic, tmp_path):
    agentic.skill("hi", [{"text": "Hello from the model."}])
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "run.json").write_text(EARLIER)
    with full_disk(tmp_path / "rec") as folder:
        result = agentic.run("--record", str(folder / "run.json"), "hi")
        assert result.returncode == 1
        assert result.stdout == "Hello from the model.\n"
        last = result.stderr.splitlines()[-1]
        assert last == (f"error: {folder / 'run.json'}: The recording was not saved: No space left on device; "
                        "a file already there is left as it was. Free some disk space (or fix the folder's "
                        "permissions) and record again.")
        as_json = agentic.run("--json", "--record", str(folder / "run.json"), "hi")
        out = json.loads(as_json.stdout)
        assert as_json.returncode == 1 and out["ok"] is False
        assert out["result"] == "Hello from the model." and out["turns"] == 1
        assert out["error"]["type"] == "StoreWriteError" and "No space left" in out["error"]["message"]
        assert (folder / "run.json").read_text() == EARLIER


def test_a_failed_run_keeps_its_own_error_and_warns_of_the_recording(agentic, tmp_path):
    count = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    agentic.skill("strict", [{"text": "two"}] * 4, returns=count)
    with full_disk(tmp_path / "rec") as folder:
        result = agentic.run("--record", str(folder / "run.json"), "strict")
        assert result.returncode == 1
        lines = result.stderr.splitlines()
        assert "did not return a value matching `returns`" in lines[-1]
        assert lines[-2].startswith("warning: --record: ") and "No space left on device" in lines[-2]
