"""Helpers for Python agents on Wharf: read the request head and build
response header lists (MessagePack) without a MessagePack library."""

import struct

_MALFORMED = "malformed MessagePack"


def _read_len(buf, pos, family):
    """Reads a map (family 0x80) or array (family 0x90) length."""
    tag = buf[pos]
    wide = 0xDE if family == 0x80 else 0xDC
    if tag & 0xF0 == family:
        return tag & 0x0F, pos + 1
    if tag == wide:
        return struct.unpack_from(">H", buf, pos + 1)[0], pos + 3
    if tag == wide + 1:
        return struct.unpack_from(">I", buf, pos + 1)[0], pos + 5
    raise ValueError(_MALFORMED)


def _read_str(buf, pos):
    tag = buf[pos]
    if tag & 0xE0 == 0xA0:
        n, pos = tag & 0x1F, pos + 1
    elif tag == 0xD9:
        n, pos = buf[pos + 1], pos + 2
    elif tag == 0xDA:
        n, pos = struct.unpack_from(">H", buf, pos + 1)[0], pos + 3
    elif tag == 0xDB:
        n, pos = struct.unpack_from(">I", buf, pos + 1)[0], pos + 5
    else:
        raise ValueError(_MALFORMED)
    if pos + n > len(buf):
        raise ValueError(_MALFORMED)
    return bytes(buf[pos : pos + n]).decode("utf-8"), pos + n


def decode_head(head):
    """The request head as a dict: method, path, query, id, client, affinity.
    Raises ValueError when it is malformed."""
    try:
        fields, pos = _read_len(head, 0, 0x80)
        out = {}
        for _ in range(fields):
            key, pos = _read_str(head, pos)
            out[key], pos = _read_str(head, pos)
        return out
    except (IndexError, struct.error, UnicodeDecodeError) as err:
        raise ValueError(_MALFORMED) from err


def _put_str(out, text):
    data = text.encode("utf-8")
    n = len(data)
    if n < 32:
        out.append(0xA0 | n)
    elif n < 0x100:
        out += bytes((0xD9, n))
    elif n < 0x10000:
        out += b"\xda" + struct.pack(">H", n)
    else:
        out += b"\xdb" + struct.pack(">I", n)
    out += data


def headers(request_headers=b"", *extra):
    """A response header list: the pairs of `request_headers` (possibly
    empty) followed by `extra` (name, value) string pairs."""
    pairs, pos = 0, 0
    if request_headers:
        try:
            pairs, pos = _read_len(request_headers, 0, 0x90)
        except (IndexError, struct.error) as err:
            raise ValueError(_MALFORMED) from err
    n = pairs + len(extra)
    out = bytearray()
    if n < 16:
        out.append(0x90 | n)
    elif n < 0x10000:
        out += b"\xdc" + struct.pack(">H", n)
    else:
        out += b"\xdd" + struct.pack(">I", n)
    out += request_headers[pos:]
    for name, value in extra:
        out.append(0x92)
        _put_str(out, name)
        _put_str(out, value)
    return bytes(out)
