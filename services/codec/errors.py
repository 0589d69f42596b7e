"""Errors raised by the codec."""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes that do not decode. Names the field (a dotted path) and the byte offset.

    The caller counts it, keeps the raw bytes and goes on; it never stops a stream.
    """

    def __init__(self, field: str, offset: int, reason: str, message: str = "") -> None:
        self.field = field
        self.offset = offset
        self.reason = reason
        self.message = message
        where = f"{message}: " if message else ""
        super().__init__(f"{where}{field or 'record'} at byte {offset}: {reason}")

    def within(self, message: str, prefix: str = "") -> DecodeError:
        """The same error seen from an enclosing message or struct field."""
        field = f"{prefix}.{self.field}" if prefix and self.field else prefix or self.field
        return DecodeError(field, self.offset, self.reason, message or self.message)


def codec_defect(fast: Exception, message: str) -> DecodeError:
    """The fast decoder failed on bytes the checked decoder reads: our defect, not the
    record's. It still becomes a DecodeError, so the record is kept with its bytes and
    the stream goes on, but its reason says so (counted as "codec defect") rather than
    passing for bad bytes."""
    reason = (
        f"codec defect: the fast decoder raised {type(fast).__name__} ({fast}) on bytes "
        "the checked decoder reads; please report it with the record's bytes"
    )
    return DecodeError("", 2, reason, message)


class EncodeError(ValueError):
    """A value that cannot be written in the requested schema version."""
