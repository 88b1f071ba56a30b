# SPDX-License-Identifier: Apache-2.0
"""peerauth.py — the instances' credential (src/peerauth.h), written again
from its description for the tests that speak it: 0502 asks a non-owner
as another instance would, 0507 forges credentials and checks what a
listener posing as a member receives.

  request_header(secret, method, path, to, frm, ts_ms=None, nonce=None,
                 body=b"") -> (header value, nonce)
  answer_ok(secret, header value or None, nonce, status, answered_by,
            retry_after, body) -> bool
"""
import hashlib
import hmac
import os
import struct
import time


def _fields(*fs):
    out = b""
    for f in fs:
        if f is None:
            f = b""
        if isinstance(f, str):
            f = f.encode()
        out += struct.pack(">Q", len(f)) + f
    return out


def request_header(secret, method, path, to, frm, ts_ms=None, nonce=None,
                   body=b""):
    ts_ms = int(time.time() * 1000) if ts_ms is None else ts_ms
    nonce = os.urandom(16).hex() if nonce is None else nonce
    mac = hmac.new(secret.encode(),
                   _fields("sluice-peer-request-v1", method, path, to, frm,
                           str(ts_ms), nonce, body),
                   hashlib.sha256).hexdigest()
    return f"v1 ts={ts_ms} nonce={nonce} mac={mac}", nonce


def answer_ok(secret, header, nonce, status, answered_by, retry_after, body):
    if not header or not header.startswith("v1 mac="):
        return False
    mac = hmac.new(secret.encode(),
                   _fields("sluice-peer-answer-v1", nonce, str(status),
                           answered_by, retry_after, body),
                   hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, header[7:])
