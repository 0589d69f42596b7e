"""Compile field tables into straight-line decoders, as Kafka's MessageDataGenerator does.

For each (message, version) this module writes Python source that reads the fields in wire
order with `struct.unpack_from`, coalescing runs of fixed-width reads into one call, and
compiles it once. Two variants come from the same generator:

* the *fast* one trusts Python to fail on short buffers (`struct.error`) and checks only
  what Python would not notice (negative or oversized lengths, array counts larger than
  the bytes left, trailing bytes);
* the *checked* one checks every read and tracks the field path and byte offset. It runs
  only after the fast one failed, to produce a precise `DecodeError`.

Wire rules (KIP-482 for flexible versions) follow `org.apache.kafka.common.protocol`
(`Readable`, `ByteUtils.readUnsignedVarint`, `MessageDataGenerator`).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from services.codec.errors import DecodeError
from services.codec.schema import Field, Message

Decoder = Callable[[bytes, int], tuple[dict[str, Any], int]]

_FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "bool": "?"}
_SIZES = {"b": 1, "h": 2, "H": 2, "i": 4, "q": 8, "?": 1}
_ARRAY_ELEMENT = {"int32": "i", "int16": "h", "int64": "q"}


class _Invalid(Exception):
    """Raised inside fast decoders; the checked decoder then says what was wrong."""


# What a fast decoder raises on bytes it cannot read: its own checks (`_Invalid`), a read
# past the end (`struct.error`, `IndexError`), bad UTF-8 (`UnicodeDecodeError`, a
# ValueError). Callers catch these and run the checked decoder, which names the field;
# anything else is a defect and propagates.
FAST_DECODE_ERRORS: tuple[type[Exception], ...] = (_Invalid, struct.error, IndexError, ValueError)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """`ByteUtils.readUnsignedVarint`: at most 5 bytes, 7 bits each, low group first."""
    value = shift = 0
    for i in range(5):
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + i + 1
        shift += 7
    raise _Invalid("varint longer than 5 bytes")


def uuid_to_str(raw: bytes) -> str:
    """Kafka's `Uuid.toString()`: URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class _Source:
    """Accumulates generated source lines with indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def var(self, stem: str) -> str:
        self.counter += 1
        return f"_{stem}{self.counter}"


class _StructWriter:
    """Writes the source of one struct's decoder (top level or nested)."""

    def __init__(
        self, compiler: _Compiler, fields: tuple[Field, ...], version: int, checked: bool
    ) -> None:
        self.c = compiler
        self.fields = fields
        self.version = version
        self.flexible = compiler.flexible
        self.checked = checked
        self.src = _Source()
        self.pending: list[tuple[str, str]] = []  # coalesced fixed reads: (target, format)

    # -- fixed-width reads -------------------------------------------------------------
    def fixed(self, target: str, fmt: str, field: str) -> None:
        if self.checked:
            self.track(field)
            size = _SIZES[fmt]
            self.need(str(size), f"{size} bytes needed")
            self.src(f"{target}, = _unpack('>{fmt}', b, p); p += {size}")
        else:
            self.pending.append((target, fmt))

    def flush(self) -> None:
        if not self.pending:
            return
        targets = ", ".join(t for t, _ in self.pending)
        fmt = "".join(f for _, f in self.pending)
        size = sum(_SIZES[f] for f in fmt)
        self.src(f"{targets}, = _S{self.c.struct_const(fmt)}(b, p); p += {size}")
        self.pending = []

    def track(self, field: str) -> None:
        self.src(f"_f = {field!r}; _o = p")

    def need(self, size: str, reason: str) -> None:
        self.src(
            f"if p + {size} > n: raise _Invalid('truncated: ' + {reason!r} + f', {{n - p}} left')"
        )

    def fail(self, condition: str, reason: str) -> None:
        """Fast mode raises _Invalid; checked mode raises a described DecodeError."""
        self.flush()
        if self.checked:
            self.src(f"if {condition}: raise _Invalid(f{reason!r})")
        else:
            self.src(f"if {condition}: raise _Invalid")

    # -- lengths and counts --------------------------------------------------------------
    def length(self, field: str, nullable: bool, width: str, unit: int = 1) -> str:
        """Read a string/bytes/array length and check it against the bytes left.

        Returns the variable holding it; -1 means null. `unit` is the least number of
        bytes one element takes, so that a count never promises more than is there.
        """
        var = self.src.var("n")
        if self.flexible:
            self.flush()
            if self.checked:
                self.track(field)
                self.need("1", "varint truncated")
            self.src(f"{var} = b[p]")
            self.src(f"if {var} < 0x80: p += 1")
            self.src(f"else: {var}, p = _uvarint(b, p)")
            self.src(f"{var} -= 1")
        else:
            self.fixed(var, width, field)
            self.flush()
        low = -1 if nullable else 0
        size = var if unit == 1 else f"{var} * {unit}"
        if self.checked:
            what = "negative length" if nullable else "null or negative length"
            self.src(f"if {var} < {low}: raise _Invalid(f'{what} {{{var}}}')")
            self.src(
                f"if {size} > n - p: raise _Invalid(f'length {{{var}}} exceeds the "
                f"{{n - p}} bytes left')"
            )
        else:
            self.src(f"if not {low} <= {size} <= n - p: raise _Invalid")
        return var

    # -- fields ----------------------------------------------------------------------------
    def field(self, f: Field, target: str, path: str) -> None:
        v = self.version
        nullable = f.nullable_in(v)
        if f.is_array:
            self.array(f, target, path, nullable)
        elif f.is_struct:
            self.struct(f, target, path, nullable)
        elif f.type in _FIXED:
            self.fixed(target, _FIXED[f.type], path)
        elif f.type == "uuid":
            self.flush()
            if self.checked:
                self.track(path)
            self.fail("p + 16 > n", "truncated: 16 bytes needed, {n - p} left")
            self.src(f"{target} = _uuid(b[p:p + 16]); p += 16")
        elif f.type in ("string", "bytes"):
            n = self.length(path, nullable, "h" if f.type == "string" else "i")
            value = f"b[p:p + {n}]" + (".decode()" if f.type == "string" else "")
            if nullable:
                self.src(f"{target} = None if {n} < 0 else {value}")
                self.src(f"if {n} > 0: p += {n}")
            else:
                self.src(f"{target} = {value}; p += {n}")
        else:
            raise TypeError(f"unsupported field type {f.type!r} in {path}")

    def array(self, f: Field, target: str, path: str, nullable: bool) -> None:
        element = f.element
        unit = _SIZES[_ARRAY_ELEMENT[element]] if element in _ARRAY_ELEMENT else 1
        n = self.length(path, nullable, "i", unit)
        if nullable:  # length -1: null (the tagged AssignmentEpochs, LastAssignmentConfigs)
            self.src(f"if {n} < 0: {target} = None")
            self.src("else:")
            self.src.depth += 1
            self.array_elements(f, target, path, n)
            self.flush()
            self.src.depth -= 1
        else:
            self.array_elements(f, target, path, n)

    def array_elements(self, f: Field, target: str, path: str, n: str) -> None:
        element = f.element
        if f.is_struct:
            sub = self.c.nested(f, self.version, self.checked)
            item = self.src.var("i")
            self.src(f"{target} = []")
            self.src(f"for {item} in range({n}):")
            self.src.depth += 1
            if self.checked:
                self.src(f"_f = f'{path}[{{{item}}}]'; _o = p")
            self.src(f"_e, p = {sub}(b, p)")
            self.src(f"{target}.append(_e)")
            self.src.depth -= 1
        elif element in _ARRAY_ELEMENT:
            code = _ARRAY_ELEMENT[element]
            size = _SIZES[code]
            self.src(f"{target} = list(_unpack(f'>{{{n}}}{code}', b, p)); p += {n} * {size}")
        elif element == "string":
            item = self.src.var("i")
            self.src(f"{target} = []")
            self.src(f"for {item} in range({n}):")
            self.src.depth += 1
            s = self.src.var("s")
            self.field(Field(f.name, "string", f.versions), s, f"{path}[]")
            self.flush()
            self.src(f"{target}.append({s})")
            self.src.depth -= 1
        else:
            raise TypeError(f"unsupported array element {element!r} in {path}")

    def struct(self, f: Field, target: str, path: str, nullable: bool) -> None:
        sub = self.c.nested(f, self.version, self.checked)
        self.flush()
        if nullable:
            # Nullable struct: INT8 -1 (null) or 1 (present) before it (MessageDataGenerator).
            marker = self.src.var("m")
            self.fixed(marker, "b", path)
            self.flush()
            self.src(f"if {marker} < 0: {target} = None")
            self.src(f"else: {target}, p = {sub}(b, p)")
        else:
            self.src(f"{target}, p = {sub}(b, p)")

    def tagged_section(self, tagged: list[Field]) -> None:
        """Read the tagged-field section; known tags are decoded, unknown ones kept raw."""
        self.flush()
        if self.checked:
            self.track("_tagged_fields")
        self.src("_c, p = _uvarint(b, p)")
        self.src("_u = None")
        self.src("for _ in range(_c):")
        self.src.depth += 1
        self.src("_t, p = _uvarint(b, p)")
        self.src("_z, p = _uvarint(b, p)")
        self.fail("p + _z > n", "tagged field {_t} of {_z} bytes exceeds the {n - p} bytes left")
        branch = "if"
        for f in tagged:
            self.src(f"{branch} _t == {f.tag}:")
            self.src.depth += 1
            if f.is_struct and not f.is_array:
                sub = self.c.nested(f, self.version, self.checked)
                # Inside a tagged field a nullable struct's marker is an UNSIGNED_VARINT.
                self.src(f"_r[{f.snake!r}] = None if b[p] in (0, 255) else {sub}(b, p + 1)[0]")
            else:  # a tagged int, uuid, string or array: its usual encoding, within _z bytes
                self.src("_q = p")
                self.field(f, f"_r[{f.snake!r}]", f.snake)
                self.flush()
                self.src("p = _q")
            self.src.depth -= 1
            branch = "elif"
        self.src(f"{'else' if tagged else 'if True'}:")
        self.src.depth += 1
        self.src("if _u is None: _u = _r['unknown_tagged_fields'] = {}")
        self.src("_u[_t] = b[p:p + _z]")
        self.src.depth -= 1
        self.src("p += _z")
        self.src.depth -= 1

    def write(self, name: str) -> str:
        """The full source of a function `name(b, p) -> (dict, p)`."""
        v = self.version
        regular = [f for f in self.fields if f.present_in(v) and not f.tagged_in(v)]
        tagged = [f for f in self.fields if f.tagged_in(v)]
        targets = {}
        for f in regular:
            target = f"v_{f.snake}"
            targets[f.snake] = target
            self.field(f, target, f.snake)
        self.flush()
        items = [
            f"{f.snake!r}: {targets.get(f.snake) or self.c.constant(f.default_value())}"
            for f in self.fields
        ]
        self.src(f"_r = {{{', '.join(items)}}}")
        if self.flexible:
            self.tagged_section(tagged)
        self.src("return _r, p")
        body = self.src.lines
        head = [f"def {name}(b, p):", "    n = len(b)"]
        if self.checked:
            head += ["    _f = ''; _o = p", "    try:"]
            body = ["    " + line for line in body]
            body += [
                "    except DecodeError as _x:",
                "        raise _x.within('', _f)",
                "    except (struct.error, IndexError):",
                "        raise DecodeError(_f, _o, f'truncated: only {n - _o} bytes left')",
                "    except UnicodeDecodeError as _x:",
                "        raise DecodeError(_f, _o, f'invalid UTF-8 ({_x.reason})')",
                "    except _Invalid as _x:",
                "        raise DecodeError(_f, _o, str(_x) or 'invalid')",
            ]
        return "\n".join(head + body)


class _Compiler:
    """Compiles one message version (and its nested structs) into decoder functions."""

    def __init__(self, message: Message, version: int) -> None:
        self.message = message
        self.version = version
        self.flexible = message.is_flexible(version)
        self.sources: list[str] = []
        self.namespace: dict[str, Any] = {
            "struct": struct,
            "_unpack": struct.unpack_from,
            "_uvarint": read_uvarint,
            "_uuid": uuid_to_str,
            "_Invalid": _Invalid,
            "DecodeError": DecodeError,
        }
        self.names = 0

    def struct_const(self, fmt: str) -> str:
        name = f"_{fmt}"
        if f"_S{name}" not in self.namespace:
            self.namespace[f"_S{name}"] = struct.Struct(">" + fmt).unpack_from
        return name

    def constant(self, value: Any) -> str:
        if isinstance(value, list):
            return "[]"  # a fresh list per record
        return repr(value)

    def nested(self, f: Field, version: int, checked: bool) -> str:
        self.names += 1
        name = f"_struct{self.names}_{f.snake}"
        self.sources.append(_StructWriter(self, f.fields, version, checked).write(name))
        return name

    def source(self, checked: bool) -> str:
        top = _StructWriter(self, self.message.fields, self.version, checked).write("_decode")
        return "\n\n".join([*self.sources, top])

    def compile(self, checked: bool) -> Decoder:
        code = compile(self.source(checked), f"<{self.message.name} v{self.version}>", "exec")
        exec(code, self.namespace)
        decode: Decoder = self.namespace["_decode"]
        return decode


def compile_decoder(message: Message, version: int, checked: bool = False) -> Decoder:
    """A function `(buf, pos) -> (fields, end)` for `message` at `version`."""
    return _Compiler(message, version).compile(checked)


_DECODERS: dict[tuple[int, int, bool], Decoder] = {}


def decoder(message: Message, version: int, checked: bool = False) -> Decoder:
    """`compile_decoder`, memoized per (message, version, variant).

    Keyed by the message's identity: an older layout kept as a fallback has the same spec
    name as the current one.
    """
    key = (id(message), version, checked)
    found = _DECODERS.get(key)
    if found is None:
        found = _DECODERS[key] = compile_decoder(message, version, checked)
    return found


def generated_source(message: Message, version: int, checked: bool = False) -> str:
    """The Python source the compiler writes, for debugging and review."""
    return _Compiler(message, version).source(checked)
