"""Fault suite: SIGKILL at random moments of every kind of write at once (session 8 review).

``test_crash.py`` kills saving processes at chosen points; here one child runs eight threads
over every writing path together: single saves, ``save_many`` bursts over two banks (so group
commits carry several writes and several banks), rule writes, drafts approved and rejected,
outbox jobs dead-lettered, requeued and acked, purges (the log's rewrite) and reloads (each
writes an index snapshot in the background). A thread says ``<verb>-begin`` before a call and
its acknowledgement after the call returned. The parent kills the child after a random number
of lines, opens the store on what it left and checks, round after round on one data dir:

- every acknowledged write is there (a save, both banks of a burst, an approval, a rule's
  content, a job's state); an acknowledged purge or reject stays gone; a call in flight may
  have happened or not;
- no line was torn or corrupt (at most one torn tail, set aside), no temp file is left, and
  doctor finds RAM and index equal to the files.

A burst over two banks that was never acknowledged may be found in one bank only (the kill
fell between the two banks' fsyncs): all or nothing holds for what a caller was told, not
across a crash (the extractor and the consolidator replay a call whose outcome is unknown).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from shared.contract.config import StoreSettings
from shared.contract.errors import NotFoundError
from store_worker.core import MemoryStore

pytestmark = pytest.mark.slow  # six child processes: ~10 s here

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 6

CHILD = """
import sys, threading
from shared.contract.config import StoreSettings
from store_worker.storage import bank as bank_mod
from store_worker.core import MemoryStore

bank_mod.SNAPSHOT_MIN_LINES = 40  # every reload writes an index snapshot in the background
data_dir, run = sys.argv[1], sys.argv[2]
store = MemoryStore(settings=StoreSettings(data_dir=data_dir, ratification=True))
out = threading.Lock()
pad = " lorem ipsum dolor sit amet" * 8

def say(*words):
    with out:
        sys.stdout.write(" ".join(words) + "\\n")
        sys.stdout.flush()

def single(t):
    for i in range(10**6):
        say("save", store.save(f"single {run} {t} {i}{pad}", id=f"s{run}-{t}-{i}").memory.id)

def burst(t):
    for i in range(10**6):
        n = f"m{run}-{t}-{i}"
        items = [{"text": f"burst {n} {b}{pad}", "id": n, "bank": b} for b in ("main", "work")]
        store.save_many(items)
        say("burst", n)

def rules_and_drafts():
    for i in range(10**6):
        name, content = f"r{i % 3}", f"rule-{run}-{i}"
        say("rule-begin", name, content)
        store.rule_set(name, content)
        say("rule", name, content)
        draft = f"d{run}-{i}"
        say("draft", store.save(f"draft {draft}{pad}", id=draft, status="pending").memory.id)
        verb = "approve" if i % 2 else "reject"
        say(verb + "-begin", draft)
        getattr(store, verb)(draft)
        say(verb, draft)

def outbox_purge_reload():
    for i in range(10**6):
        job = store.turn_completed(f"t{run}-{i}", messages=[{"role": "user", "content": "hi"}])
        say("job", job.job_id)
        for j in store.outbox_claim(8):
            for verb, call in (
                ("dead", lambda: store.outbox_fail(j.job_id, "boom", dead_letter=True)),
                ("queued", lambda: store.outbox_requeue(j.job_id)),
                ("acked", lambda: store.outbox_ack(j.job_id)),
            ):
                say(verb + "-begin", j.job_id)
                call()
                say(verb, j.job_id)
        doomed = f"p{run}-{i}"
        say("doomed", store.save(f"to be purged {doomed}{pad}", id=doomed).memory.id)
        say("purge-begin", doomed)
        store.purge(doomed)
        say("purge", doomed)
        if i % 4 == 0:
            store.reload()

threads = [threading.Thread(target=single, args=(t,)) for t in range(4)]
threads += [threading.Thread(target=burst, args=(t,)) for t in range(2)]
threads += [threading.Thread(target=rules_and_drafts), threading.Thread(target=outbox_purge_reload)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


@dataclass
class Acks:
    """What the children said, over every round: the last acknowledged state of each thing,
    and what was in flight when a child died (either outcome is allowed for those)."""

    saved: set[str] = field(default_factory=set)
    bursts: set[str] = field(default_factory=set)
    purged: set[str] = field(default_factory=set)
    purging: set[str] = field(default_factory=set)  # purges in flight at a kill
    rules: dict[str, set[str]] = field(default_factory=dict)  # name -> allowed contents
    drafts: dict[str, set[str]] = field(default_factory=dict)  # id -> allowed states
    jobs: dict[str, set[str]] = field(default_factory=dict)  # job id -> allowed states

    def read(self, line: str) -> None:
        verb, *args = line.split()
        if verb in ("save", "doomed"):
            self.saved.add(args[0])
        elif verb == "burst":
            self.bursts.add(args[0])
        elif verb == "purge-begin":
            self.purging.add(args[0])
        elif verb == "purge":
            self.purged.add(args[0])
        elif verb == "rule-begin":
            self.rules.setdefault(args[0], set()).add(args[1])
        elif verb == "rule":
            self.rules[args[0]] = {args[1]}
        elif verb == "draft":
            self.drafts[args[0]] = {"pending"}
        elif verb in ("approve-begin", "reject-begin"):
            self.drafts[args[0]].add(verb.removesuffix("-begin"))
        elif verb in ("approve", "reject"):
            self.drafts[args[0]] = {verb}
        elif verb == "job":
            self.jobs[args[0]] = {"queued"}
        elif verb.endswith("-begin"):  # an outbox move
            self.jobs[args[0]].add(verb.removesuffix("-begin"))
        elif verb in ("dead", "queued", "acked"):
            self.jobs[args[0]] = {verb}


def kill_at_random(data_dir: Path, run: int, lines: int, acks: Acks) -> None:
    """Run the child until it printed ``lines`` lines, SIGKILL it, read every whole line."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir), str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None and child.stderr is not None
    said: list[str] = []
    try:
        while len(said) < lines and (line := child.stdout.readline()):
            said.append(line)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        said += child.stdout.readlines()
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL, err
    assert len(said) >= lines, f"child died early: {err}"
    for line in said:
        if line.endswith("\n"):  # a line the kill cut short was never said whole
            acks.read(line)


def live(store: MemoryStore, mem_id: str, bank: str = "main") -> bool:
    try:
        return store.get(mem_id, bank=bank).memory.invalid_at is None
    except NotFoundError:
        return False


def draft_state(store: MemoryStore, draft: str) -> str:
    mem = store.banks["main"].records.get(draft)
    if mem is None:
        return "reject"
    return "pending" if mem.status == "pending" else "approve"


def job_state(store: MemoryStore, job: str) -> str:
    if job in store.outbox._jobs:
        return "queued"
    return "dead" if job in store.outbox._dead else "acked"


def assert_acknowledged(store: MemoryStore, acks: Acks) -> None:
    lost = [i for i in acks.saved - acks.purged - acks.purging if not live(store, i)]
    lost += [f"{b}/{i}" for i in acks.bursts for b in ("main", "work") if not live(store, i, b)]
    assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {lost[:3]}"
    log = (store.root / "main" / "memories.jsonl").read_bytes()
    back = [i for i in acks.purged if live(store, i) or f'"id":"{i}"'.encode() in log]
    assert not back, f"purged memories back: {back[:3]}"
    rules = store.banks["main"].rules
    wrong = {n: rules.get(n) for n, ok in acks.rules.items() if rules.get(n) not in ok}
    assert not wrong, f"rules not as acknowledged: {wrong}"
    drafts = {d: draft_state(store, d) for d in acks.drafts}
    assert not {d: s for d, s in drafts.items() if s not in acks.drafts[d]}, drafts
    jobs = {j: job_state(store, j) for j in acks.jobs}
    assert not {j: s for j, s in jobs.items() if s not in acks.jobs[j]}, jobs


def assert_clean(store: MemoryStore) -> None:
    for bank in store.banks.values():
        assert bank.stats.corrupt == 0 and bank.stats.torn <= 1, (bank.name, bank.stats)
    assert not list(store.root.rglob("*.tmp")), "a temp file of a killed write is left"
    assert not list(store.root.rglob("*.bad")), "a job file was torn"
    checks = {c.name: c for c in store.doctor().checks}
    for name in ("data_dir_writable", "roundtrip", "index_consistent"):
        assert checks[name].ok, checks[name].detail


@pytest.mark.parametrize("seed", [1, 2])
def test_sigkill_at_random_moments_loses_no_acknowledged_write(tmp_path: Path, seed: int) -> None:
    data_dir = tmp_path / "data"
    rng = random.Random(seed)
    acks = Acks()
    for run in range(ROUNDS // 2):
        # Given a child writing on every path at once, killed after a random number of lines
        kill_at_random(data_dir, run, rng.randint(30, 500), acks)
        # When a store opens on what it left
        store = MemoryStore(settings=StoreSettings(data_dir=str(data_dir), ratification=True))
        try:
            # Then every acknowledged write is there, nothing is torn, nothing is left over
            assert_acknowledged(store, acks)
            assert_clean(store)
        finally:
            store.close()
    assert len(acks.saved) > 50 and len(acks.bursts) > 5 and acks.purged and acks.jobs
