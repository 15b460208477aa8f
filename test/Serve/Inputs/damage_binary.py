#!/usr/bin/env python3
"""Writes a damaged copy of a model binary (tools/common/ModelBinary.h).

Usage: damage_binary.py MODE IN OUT, MODE one of
  cut-end      the last 1000 bytes dropped
  cut-header   cut inside the payload header
  append       16 bytes appended
  tokenizer    one byte of the embedded tokenizer flipped
  weights      one byte of the plan's last weight flipped
"""
import os
import struct
import sys

mode, src, dst = sys.argv[1:4]
data = bytearray(open(src, "rb").read())
payload = struct.unpack_from("<Q", data, len(data) - 16)[0]
assert data[-8:] == b"FOLIOEND" and data[payload:payload + 8] == b"FOLIOBIN"
plan_at, plan_bytes = struct.unpack_from("<QQ", data, payload + 32)
tok_at = struct.unpack_from("<Q", data, payload + 56)[0]
if mode == "cut-end":
    data = data[:-1000]
elif mode == "cut-header":
    data = data[:payload + 50]
elif mode == "append":
    data += b"\0" * 16
elif mode == "tokenizer":
    data[tok_at + 10] ^= 0x20
elif mode == "weights":
    data[plan_at + plan_bytes - 1] ^= 0x10
else:
    sys.exit("unknown mode " + mode)
open(dst, "wb").write(data)
os.chmod(dst, 0o755)
