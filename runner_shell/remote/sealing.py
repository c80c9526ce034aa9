"""Sealed payloads (docs/temporal.md): every request and result that crosses Temporal is
encrypted and authenticated with the key only the loop and its workers hold.

Decides how a payload is sealed and opened (AES-256-GCM, as temporalio's encryption sample
does) and how the SDK is told to use it and TLS. Never connects to a server.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    PayloadCodec,
)
from temporalio.converter import default as default_converter
from temporalio.service import TLSConfig

from runner_shell.remote.keys import JobKey, TLSFiles

SEALED_ENCODING = b"binary/runner-sealed"
KEY_ID_FIELD = "runner-key-id"
NONCE_BYTES = 12
# Bound into every seal: a payload sealed by this codec for another purpose does not open.
SEAL_CONTEXT = b"runner-job-payload-v1"


class SealError(ValueError):
    """A payload this codec will not open: not sealed, sealed with another key, or altered."""


class SealingCodec(PayloadCodec):
    """Every payload sealed with AES-256-GCM under the loop's and its workers' key (as
    temporalio's encryption sample does), and every payload opened only when it is sealed with
    that key and unaltered: the server, and anything that reaches it, sees ciphertext, and a
    request or result made without the key is refused. Without a key (`runner workers`, which
    moves no payload) nothing is sealed or opened."""

    def __init__(self, key: JobKey | None) -> None:
        super().__init__()
        self._key = key
        self._aead = None if key is None else AESGCM(key.secret)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.seal(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.open(payload) for payload in payloads]

    def seal(self, payload: Payload) -> Payload:
        if self._key is None or self._aead is None:
            raise SealError("no job key: nothing is sent unsealed")
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, payload.SerializeToString(), SEAL_CONTEXT)
        metadata = {"encoding": SEALED_ENCODING, KEY_ID_FIELD: self._key.key_id.encode()}
        return Payload(metadata=metadata, data=nonce + sealed)

    def open(self, payload: Payload) -> Payload:
        if self._key is None or self._aead is None:
            raise SealError("no job key to open a payload with")
        if payload.metadata.get("encoding") != SEALED_ENCODING:
            raise SealError("not sealed with a job key")
        key_id = payload.metadata.get(KEY_ID_FIELD, b"").decode("ascii", errors="replace")
        if key_id != self._key.key_id:
            raise SealError(f"sealed with another key ({key_id[:16]!r}, not {self._key.key_id})")
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            return Payload.FromString(self._aead.decrypt(nonce, sealed, SEAL_CONTEXT))
        except InvalidTag:
            raise SealError("altered since it was sealed") from None


def sealing_converter(key: JobKey | None) -> DataConverter:
    """The SDK's converter with every payload sealed, failures' messages and stacks too."""
    return dataclasses.replace(
        default_converter(),
        payload_codec=SealingCodec(key),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


def tls_config(files: TLSFiles) -> TLSConfig:
    """The SDK's TLS settings: the root to check the server's certificate against (None: the
    system's), a client certificate with its key for mTLS."""
    return TLSConfig(
        server_root_ca_cert=files.ca, client_cert=files.cert, client_private_key=files.key
    )
