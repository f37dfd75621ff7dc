"""The semantic arm's storage: ``vectors.jsonl``, a derived, rebuildable sidecar.

Each line is ``{"id", "fp", "model", "v"}``; the last line per id wins. A vector is *stale*
when its ``fp`` no longer matches what the record embeds (``bank.vector_key``: the text's
fingerprint, and the title's and entities' when it has them) or its model is not the configured
one; stale and missing vectors are re-embedded (in batches) on load and on first need. The
sidecar is rewritten whole (atomically) when a rebuild happens, appended otherwise. A failing
embedder never fails a write: the memory is saved, the vector is left missing, and recall
reports ``retrieval="lexical"`` until it can embed again.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from shared.contract import errors
from shared.contract.models import Memory
from shared.redact import redact, strip_placeholders
from shared.text import fingerprint
from store_worker.recall.spelling import respelt
from store_worker.storage import validate as v
from store_worker.storage.bank import Bank, searchable_text, vector_key
from store_worker.storage.files import VECTORS, atomic_write
from store_worker.storage.log import AppendLog

if TYPE_CHECKING:
    from store_worker.recall.embed import Embedder
    from store_worker.recall.scoring import RecallParams

log = logging.getLogger(__name__)
BATCH = 64
QUERY_CACHE = 512


class Vectors:
    """The configured embedder (or none), each bank's sidecar, and a small query-vector LRU."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        self._query_vectors: OrderedDict[tuple[str, str], list[float]] = OrderedDict()

    def load(self, bank: Bank) -> None:
        """Read the bank's sidecar for this embedder and embed what is missing or stale."""
        if self.embedder is None:
            return
        bank.vectors = {}
        bank.vector_model = self.embedder.name
        try:
            rows = list(AppendLog(bank.files.dir / VECTORS).read_lines())
        except OSError as e:
            # derived data that cannot be read (an I/O error, a folder in its place) must
            # not make the bank unreadable: every record is embedded again, and the rewrite
            # below puts a whole sidecar back where it can (best effort, as its appends)
            log.warning("bank %s: cannot read its vectors, embedding again: %s", bank.name, e)
            rows = []
        for _, raw, _ in rows:
            try:
                row = json.loads(raw)
                if row.get("model") == self.embedder.name:
                    vec = v.finite_vector(row["v"])
                    bank.vectors[str(row["id"])] = (
                        _legacy(bank, str(row["id"]), str(row["fp"])),
                        vec,
                    )
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                continue  # derived data: a bad line is simply re-embedded
        for mem in bank.records.values():  # attach the fresh ones read from disk to the index
            bank.on_indexed(mem)
        self.fill(bank, rewrite=True)

    def _stale(self, bank: Bank) -> list[Memory]:
        """Live records whose vector is missing or was made for another text
        (``bank.unembedded``, kept up to date as records are indexed)."""
        out = []
        for mem_id in sorted(bank.unembedded):
            m = bank.records.get(mem_id)
            known = bank.vectors.get(mem_id)
            if m is None or m.invalid_at is not None or (known and known[0] == vector_key(m)):
                bank.unembedded.discard(mem_id)  # retired, or attached since
            else:
                out.append(m)
        return out

    def fill(self, bank: Bank, *, rewrite: bool = False) -> int:
        """Embed every live record lacking a fresh vector; returns how many were embedded."""
        if self.embedder is None:
            return 0
        if bank.vector_model != self.embedder.name:  # a bank first met with this embedder
            bank.vector_model = self.embedder.name
            for mem in bank.records.values():
                bank.on_indexed(mem)
        todo = self._stale(bank)
        done = 0
        for start in range(0, len(todo), BATCH):
            chunk = todo[start : start + BATCH]
            try:
                vectors = self.embedder.embed([searchable_text(m) for m in chunk])
            except errors.MemoryServiceError as e:
                log.warning("bank %s: embedding unavailable: %s", bank.name, e)
                break
            for mem, vec in zip(chunk, vectors, strict=True):
                bank.vectors[mem.id] = (vector_key(mem), vec)
                bank.on_indexed(mem)
                done += 1
        if done and rewrite:
            self._rewrite_sidecar(bank)
        elif done:
            self._append_sidecar(bank, todo[:done])
        return done

    def _rewrite_sidecar(self, bank: Bank) -> None:
        """Rewrite the sidecar from RAM. A refusal (a full disk) leaves the old file, whose
        lines are checked against each record's text and model when read: loading a bank
        (after a refused write, too) must not fail for a derived file."""
        lines = [
            json.dumps({"id": i, "fp": fp, "model": bank.vector_model, "v": vec})
            for i, (fp, vec) in sorted(bank.vectors.items())
            if i in bank.records and bank.records[i].invalid_at is None
        ]
        try:
            atomic_write(bank.files.dir / VECTORS, ("\n".join(lines) + "\n").encode("utf-8"))
        except errors.SourceUnavailableError as e:  # derived data: written again next load
            log.warning("bank %s: cannot rewrite vectors: %s", bank.name, e)

    def _append_sidecar(self, bank: Bank, mems: Sequence[Memory]) -> None:
        sidecar = AppendLog(bank.files.dir / VECTORS)
        try:
            sidecar.append_many(
                [
                    json.dumps(
                        {
                            "id": m.id,
                            "fp": bank.vectors[m.id][0],
                            "model": bank.vector_model,
                            "v": bank.vectors[m.id][1],
                        }
                    )
                    for m in mems
                ]
            )
        except errors.SourceUnavailableError as e:  # derived data: recomputed next boot
            log.warning("bank %s: cannot append vectors: %s", bank.name, e)
        finally:
            sidecar.close()

    def embed_one(self, bank: Bank, mem: Memory) -> None:
        if self.embedder is not None and mem.invalid_at is None:
            self.fill(bank)

    def _known_vector(self, bank: Bank, query: str) -> list[float] | None:
        """A semantic query that is the very text of a live memory of this bank (the
        consolidator asks each memory's text for its neighbours) reuses that memory's stored
        vector (of its title, text and entities) instead of another embedding call: a pass
        over N memories embeds nothing."""
        held = bank.by_fp.get(fingerprint(query))
        mem = bank.records.get(held) if held is not None else None
        found = bank.vectors.get(held) if held is not None else None
        return found[1] if mem is not None and found and found[0] == vector_key(mem) else None

    def _embed_query(self, query: str) -> list[float]:
        """The query's embedding, from a small LRU cache keyed by model and text (a harness
        recalls the same message for ``preview`` and ``pre_generate``; a remote model costs
        a round trip each time)."""
        assert self.embedder is not None
        # A recall query is a user's raw prompt: a remote embedder is a third party, so what
        # it is sent (and what the cache keeps) is the redacted text, placeholders blanked.
        query = strip_placeholders(redact(query).text)
        key = (self.embedder.name, query)
        cache = self._query_vectors
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        vector = self.embedder.embed([query])[0]
        cache[key] = vector
        while len(cache) > QUERY_CACHE:
            cache.popitem(last=False)
        return vector

    def query_vector(
        self, bank: Bank, params: RecallParams, read: str
    ) -> tuple[list[float] | None, str]:
        """The embedding of ``read`` (the query as recall read it, ``as_read``) and the
        retrieval mode that will really run."""
        if params.mode == "lexical":
            return None, "lexical"
        if self.embedder is None:
            if params.mode == "semantic":
                raise errors.SourceUnavailableError(
                    "semantic recall needs an embedding model "
                    "(set MEMORY_EMBEDDINGS_ENABLED=true and MEMORY_EMBEDDING_MODEL)",
                    retryable=False,
                )
            return None, "lexical"
        try:
            self.fill(bank)
            # Only the raw semantic arm reuses a memory's vector (the consolidator's neighbour
            # queries): a hybrid recall embeds exactly what it was asked.
            known = self._known_vector(bank, params.query) if params.mode == "semantic" else None
            vector = known or self._embed_query(read)
        except errors.MemoryServiceError:
            if params.mode == "semantic":
                raise
            return None, "lexical"  # degraded, and said so: hybrid ran without its cosine
        return vector, params.mode


def as_read(bank: Bank, params: RecallParams) -> str:
    """The query as the lexical arm reads it: a misspelt word the bank knows spelt right
    (``spelling.respelt``), as the model would otherwise embed its meaningless pieces."""
    if params.synonyms is None or params.tuning.w_spelling <= 0:
        return params.query
    return respelt(bank, params.query, params.synonyms)


def _legacy(bank: Bank, mem_id: str, key: str) -> str:
    """A sidecar line written before titles and entities were part of the key (its ``fp``
    the text's fingerprint alone) is taken as made for the record as it stands, as it was
    then; from the next update of its title or entities on, the key tells."""
    if "+" in key:
        return key
    mem = bank.records.get(mem_id)
    return vector_key(mem) if mem is not None and mem.fingerprint == key else key
