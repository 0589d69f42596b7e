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


class EncodeError(ValueError):
    """A value that cannot be written in the requested schema version."""
