"""The console's settings: ``MEMORY_CONSOLE_<FIELD>`` variables (``ConsoleSettings.from_env``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from shared.contract.config import EnvSettings
from web_console.spec import DEFAULT_PORT, ENV_PREFIX

__all__ = ["DEFAULT_PORT", "ENV_PREFIX", "ConsoleSettings"]


class ConsoleSettings(EnvSettings):
    """Where the console listens and the token it asks for."""

    env_prefix: ClassVar[str] = ENV_PREFIX
    error_label: ClassVar[str] = "console setting"
    error_root: ClassVar[str] = "console"

    host: str = Field("127.0.0.1", description="Interface to listen on (loopback only).")
    port: int = Field(DEFAULT_PORT, ge=0, le=65535, description="TCP port; 0 picks a free one.")
    token: str | None = Field(
        None,
        description="The token a browser signs in with; default the gateway's bearer token "
        "(MEMORY_GRPC_TOKEN), else a fresh random one each start.",
    )
    page_size: int = Field(50, ge=1, le=500, description="Memories listed per page.")
    dashboard_url: str | None = Field(
        None, description="The Ray dashboard every page links (`memory up` passes its own)."
    )
