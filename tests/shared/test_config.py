"""shared/contract/config.py: explicit settings, read once from MEMORY_* variables, validated."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from shared.contract.config import DEFAULT_DATA_DIR, StoreSettings
from shared.contract.errors import InvalidArgumentError


def test_defaults() -> None:
    s = StoreSettings()
    assert s.data_dir == DEFAULT_DATA_DIR == "./data/memory"
    assert s.default_bank == "main"
    assert s.decay_half_life_days == 60.0
    assert s.embeddings_enabled is False
    assert s.embedding_model is None


def test_from_env_reads_memory_variables_only_from_the_given_mapping() -> None:
    env = {
        "MEMORY_DATA_DIR": "/srv/memory",
        "MEMORY_RECALL_LIMIT": "25",
        "MEMORY_EMBEDDINGS_ENABLED": "true",
        "MEMORY_DECAY_HALF_LIFE_DAYS": "30.5",
        "MEMORY_TOKEN_MODEL": "",  # empty means unset
        "OTHER_RECALL_LIMIT": "3",
    }
    s = StoreSettings.from_env(env)
    assert s.data_dir == "/srv/memory"
    assert s.recall_limit == 25
    assert s.embeddings_enabled is True
    assert s.decay_half_life_days == 30.5
    assert s.token_model is None


def test_from_env_overrides_win_and_none_is_ignored() -> None:
    s = StoreSettings.from_env({"MEMORY_RECALL_LIMIT": "25"}, recall_limit=7, default_bank=None)
    assert s.recall_limit == 7
    assert s.default_bank == "main"


def test_from_env_does_not_read_process_env_when_given_a_mapping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_RECALL_LIMIT", "99")
    assert StoreSettings.from_env({}).recall_limit == 10
    assert StoreSettings.from_env().recall_limit == 99


@pytest.mark.parametrize(
    "env",
    [
        {"MEMORY_RECALL_LIMIT": "zero"},
        {"MEMORY_RECALL_LIMIT": "0"},
        {"MEMORY_RECALL_LIMIT": "501"},
        {"MEMORY_DECAY_HALF_LIFE_DAYS": "0"},
        {"MEMORY_MAX_TEXT_CHARS": "-1"},
        {"MEMORY_EMBEDDINGS_ENABLED": "perhaps"},
    ],
)
def test_invalid_values_are_invalid_argument(env: dict[str, str]) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid setting"):
        StoreSettings.from_env(env)


def test_merged_validates_and_leaves_the_original_unchanged() -> None:
    s = StoreSettings()
    t = s.merged({"recall_limit": 3})
    assert t.recall_limit == 3 and s.recall_limit == 10
    with pytest.raises(InvalidArgumentError):
        s.merged({"no_such_setting": 1})
    with pytest.raises(InvalidArgumentError):
        s.merged({"recall_limit": -4})
    assert s == StoreSettings()


def test_settings_are_frozen() -> None:
    s = StoreSettings()
    with pytest.raises(pydantic.ValidationError):
        s.recall_limit = 3  # type: ignore[misc]


def test_data_path_resolves_home_and_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert StoreSettings(data_dir="~/mem").data_path == (tmp_path / "mem").resolve()
    monkeypatch.chdir(tmp_path)
    assert StoreSettings(data_dir="rel/dir").data_path == (tmp_path / "rel" / "dir").resolve()
    assert StoreSettings(data_dir="rel/dir").data_path.is_absolute()


def test_every_field_is_documented() -> None:
    for name, field in StoreSettings.model_fields.items():
        assert field.description, f"{name} needs a description (it feeds capabilities())"


def test_a_remote_configure_never_points_the_store_at_its_hosts_files() -> None:
    from shared.contract.config import refused_remotely

    assert refused_remotely({"data_dir": "/x"}) == "data_dir cannot be configured over gRPC"
    for folder in ("local:/models/x", "local:./x", "local:~/m", "local:all-MiniLM-L6-v2x"):
        why = refused_remotely({"embedding_model": folder})
        assert why is not None and "local model folder" in why, folder
    # a packaged model by name, a provider's model and the rest stay configurable
    for fine in (
        {"embedding_model": "local:all-MiniLM-L6-v2"},
        {"embedding_model": "local: ALL-MINILM-L6-V2 "},
        {"embedding_model": "openai/text-embedding-3-small", "embeddings_enabled": True},
        {"embedding_model": None},
        {"recall_limit": 5},
    ):
        assert refused_remotely(fine) is None, fine
