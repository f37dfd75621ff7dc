"""A scoped principal's injection over a sharded store: its session linked below the admin's,
on a bank the second shard serves (the session owners are kept by the first), it is given
none of the admin's session records, and the admin's own session still is."""

from __future__ import annotations

from typing import Any

from shared.client.scoped import ADMIN, Scoped, SessionOwners
from shared.client.sharded import ShardedStoreClient
from shared.contract.principal import Principal

QUERY = "deploy rollout checklist"
MINE, KERNEL = "sess-agent", "sess-kernel"


def _ids(answer: Any) -> set[str]:
    return {m.memory.id for m in answer.memories}


def test_the_agent_reads_none_of_the_admins_session_records(shards: ShardedStoreClient) -> None:
    bank = next(f"team-{i}" for i in range(64) if shards.owner(f"team-{i}") == 1)
    owners = SessionOwners(shards)
    admin = Scoped(shards, ADMIN, owners)
    agent = Scoped(shards, Principal("agent", banks=(bank,)), owners)
    admin.bank_create(bank)
    turn = {"metadata": {"memory_bank": bank}}
    agent.pre_generate(MINE, **turn)  # its first use makes it the agent's
    admin.pre_generate(KERNEL, **turn)
    admin.link_session(MINE, KERNEL)
    hidden = {
        admin.save(f"Deploy rollout checklist {i}", bank=bank, scope="session", session_id=KERNEL)
        .memory.id
        for i in range(6)
    }  # fmt: skip
    own = agent.save("Deploy rollout checklist paused", scope="session", session_id=MINE)
    assert len(_ids(admin.preview(QUERY, bank=bank, session_id=KERNEL)) & hidden) == 6
    shown = agent.preview(QUERY, bank=bank, session_id=MINE)
    assert _ids(shown) & hidden == set()
    assert own.memory.id in _ids(shown)
    given = agent.pre_generate(
        MINE, messages=[{"role": "user", "content": QUERY}], metadata={"memory_bank": bank}
    )
    assert _ids(given) & hidden == set()
    assert own.memory.id in _ids(given)
