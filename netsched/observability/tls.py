"""The serving certificate for HTTPS: the operator's files, else a self-signed pair made at start.

kube-scheduler serves 10259 over TLS even when nobody gave it a certificate:
it generates a self-signed one (SecureServingOptions.MaybeDefaultWithSelfSignedCerts),
written to --cert-dir when that is set (and reused from there on the next start)
or kept in memory otherwise.  Python's ssl module only loads certificates from
files, so without --cert-dir the pair goes to a private temporary directory
(mode 0700) that `ServingCert.close()` removes.  Generation uses `cryptography`
(a wheel on every platform pip serves; no openssl binary needed).

Probes and Prometheus skip verification of a self-signed certificate
(`scheme: HTTPS` probes never verify; Prometheus needs insecure_skip_verify or
the operator's own certificate via --tls-cert-file).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import logging
import os
import shutil
import socket
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

PAIR_NAME = "netsched"  # <cert-dir>/netsched.crt and netsched.key, as kube's "kube-scheduler" pair
VALIDITY_DAYS = 365
TLS_VERSIONS = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}


class CertificateError(Exception):
    """A certificate or key that cannot be read or generated; the message names the file."""


@dataclass
class ServingCert:
    cert_file: str
    key_file: str
    generated: bool = False
    _tmpdir: str | None = field(default=None, repr=False)

    def context(self, min_version: str = "VersionTLS12") -> ssl.SSLContext:
        """A server-side context with this pair loaded; CertificateError names a bad file."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = TLS_VERSIONS.get(min_version, ssl.TLSVersion.TLSv1_2)
        try:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as e:
            raise CertificateError(
                f"cannot load --tls-cert-file {self.cert_file!r} / --tls-private-key-file "
                f"{self.key_file!r}: {e}"
            ) from e
        return ctx

    def close(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


def serving_cert(
    cert_file: str = "",
    key_file: str = "",
    *,
    cert_dir: str = "",
    bind_address: str = "",
    alternate_names: Sequence[str] = (),
) -> ServingCert:
    """The operator's pair when given; else <cert-dir>/netsched.{crt,key} (reused when present,
    generated otherwise); else a generated pair in a private temporary directory."""
    if cert_file and key_file:
        return ServingCert(cert_file, key_file)
    if cert_dir:
        directory = Path(cert_dir)
        crt, key = directory / f"{PAIR_NAME}.crt", directory / f"{PAIR_NAME}.key"
        if crt.is_file() and key.is_file():
            log.info("Using the certificate in --cert-dir cert=%s", crt)
            return ServingCert(str(crt), str(key))
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CertificateError(f"cannot create --cert-dir {cert_dir!r}: {e}") from e
        tmpdir = None
    else:
        tmpdir = tempfile.mkdtemp(prefix="netsched-tls-")  # 0700
        directory = Path(tmpdir)
        crt, key = directory / f"{PAIR_NAME}.crt", directory / f"{PAIR_NAME}.key"
    cert_pem, key_pem = self_signed_pair(_names(bind_address, alternate_names))
    _write(key, key_pem, 0o600)
    _write(crt, cert_pem, 0o644)
    log.info("Generated a self-signed serving certificate cert=%s", crt)
    return ServingCert(str(crt), str(key), generated=True, _tmpdir=tmpdir)


def self_signed_pair(names: Sequence[str], now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM): ECDSA P-256, valid a year, SANs for every name/IP."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    dns: list[x509.GeneralName] = []
    ips: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            ips.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            dns.append(x509.DNSName(name))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{names[0]}@{int(now.timestamp())}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))  # tolerate clock skew
        .not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
        .add_extension(x509.SubjectAlternativeName(dns + ips), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _names(bind_address: str, extra: Sequence[str]) -> list[str]:
    names = ["localhost", "127.0.0.1", "::1", *extra]
    with contextlib.suppress(OSError):
        names.append(socket.gethostname())
    if bind_address and bind_address not in ("0.0.0.0", "::"):
        names.append(bind_address)
    return names


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
