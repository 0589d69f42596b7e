"""Types of the optional C accelerator (services/codec/_speedups.c)."""

from typing import Any

def decode_group_metadata_value(value: bytes, /) -> dict[str, Any] | None:
    """A GroupMetadataValue (version prefix included), or None where it cannot be sure."""
