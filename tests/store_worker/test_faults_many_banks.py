"""Fault suite: many banks in one store (a fourth durability review).

Each bank's log keeps its descriptor open between appends. One held per bank ran a store
with as many banks as the process's descriptor limit out of them: from then on every write
to a bank not yet open was refused (``EMFILE``), and so was any write needing a new file.
The store runs here in a child process whose limit is low, so the test reaches it quickly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from store_worker.core import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 64  # descriptors: the interpreter, the lock and a few imports use a dozen or so

CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), int(sys.argv[2])))
from shared.contract.errors import MemoryServiceError
from store_worker.core import MemoryStore
store = MemoryStore(sys.argv[1])
acked, refused = {}, []
for round_ in range(2):  # the second round appends again to logs closed meanwhile
    for i in range(int(sys.argv[3])):
        bank = f"bank-{i:03d}"
        try:
            saved = store.save(f"fact {round_} of bank {i} about lanterns", bank=bank)
        except MemoryServiceError as e:
            refused.append(f"{bank}: {e.message}")
            continue
        acked.setdefault(bank, []).append(saved.memory.id)
try:
    store.rule_set("style", "spaces, not tabs")
    store.state_set("probe", "cursor", {"n": 1})
except MemoryServiceError as e:
    refused.append(f"rule or state: {e.message}")
print(json.dumps({"acked": acked, "refused": refused}))
store.close()
"""


def test_more_banks_than_descriptors_are_all_written_and_read_back(tmp_path: Path) -> None:
    # Given a store in a process allowed LIMIT descriptors
    data_dir = tmp_path / "data"
    banks = LIMIT * 2
    # When it writes to twice as many banks, twice each
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(data_dir), str(LIMIT), str(banks)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        check=True,
        timeout=300,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # Then no write was refused, and a reopen reads every acknowledged one, each whole
    assert result["refused"] == []
    assert len(result["acked"]) == banks
    store = MemoryStore(data_dir)
    try:
        for bank, ids in result["acked"].items():
            assert sorted(m.id for m in store.list(bank=bank).memories) == sorted(ids)
            assert store.banks[bank].stats.corrupt == 0
    finally:
        store.close()
