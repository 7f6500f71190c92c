"""The throwaway PKI of one local cluster, written as PEM files into its run directory.

A CA; a serving certificate for 127.0.0.1/localhost (and the in-cluster names of the
``kubernetes`` service, so in-cluster style clients verify too); an admin client certificate in
``system:masters``; the RSA key pair that signs and verifies service-account tokens; and the
client certificate the API server presents to admission webhooks, from a CA of its own (the
cluster's CA signs every user's: a webhook trusting it would trust them all).
"""

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=7)
# The certificates are valid from slightly in the past so that a clock a little behind on another
# component never sees them as "not yet valid".
BACKDATE = datetime.timedelta(hours=1)

SERVING_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class ClusterCerts:
    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def webhook_client_ca_cert(self) -> Path:
        """The CA of the API server's client certificate for webhooks, and of nothing else."""
        return self.directory / "webhook-client-ca.crt"

    @property
    def webhook_client_cert(self) -> Path:
        return self.directory / "webhook-client.crt"

    @property
    def webhook_client_key(self) -> Path:
        return self.directory / "webhook-client.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "sa.pub"


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization is not None:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _new_key() -> ec.EllipticCurvePrivateKey:
    # P-256 rather than RSA: generating it is instant, and every Kubernetes component accepts it.
    return ec.generate_private_key(ec.SECP256R1())


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + VALIDITY)
    )


def _leaf_usage(
    builder: x509.CertificateBuilder, usage: x509.ObjectIdentifier
) -> x509.CertificateBuilder:
    return (
        builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )


def _new_ca(ca_name: x509.Name) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    ca_key = _new_key()
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ca_key, ca_cert


def generate(directory: Path, *, serving_addresses: Sequence[str] = ()) -> ClusterCerts:
    """Creates a fresh CA and everything signed by it in ``directory``; the API server's
    certificate is valid for 127.0.0.1 and ``serving_addresses`` (a real node's link and the
    ``kubernetes`` Service)."""
    directory.mkdir(parents=True, exist_ok=True)
    certs = ClusterCerts(directory)

    ca_name = _name("punctual-local-ca")
    ca_key, ca_cert = _new_ca(ca_name)
    _write_key(certs.ca_key, ca_key)
    _write_cert(certs.ca_cert, ca_cert)
    authority_key_id = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())

    serving_key = _new_key()
    serving_names: list[x509.GeneralName] = [
        *(x509.IPAddress(ipaddress.IPv4Address(a)) for a in ("127.0.0.1", *serving_addresses)),
        *(x509.DNSName(name) for name in SERVING_DNS_NAMES),
    ]
    serving_cert = (
        _leaf_usage(
            _builder(_name("kube-apiserver"), ca_name, serving_key.public_key()),
            ExtendedKeyUsageOID.SERVER_AUTH,
        )
        .add_extension(x509.SubjectAlternativeName(serving_names), critical=False)
        .add_extension(authority_key_id, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(certs.serving_key, serving_key)
    _write_cert(certs.serving_cert, serving_cert)

    admin_key = _new_key()
    admin_cert = (
        _leaf_usage(
            _builder(_name("admin", "system:masters"), ca_name, admin_key.public_key()),
            ExtendedKeyUsageOID.CLIENT_AUTH,
        )
        .add_extension(authority_key_id, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(certs.admin_key, admin_key)
    _write_cert(certs.admin_cert, admin_cert)

    webhook_ca_name = _name("punctual-local-webhook-client-ca")
    webhook_ca_key, webhook_ca_cert = _new_ca(webhook_ca_name)
    _write_cert(certs.webhook_client_ca_cert, webhook_ca_cert)
    webhook_client_key = _new_key()
    webhook_client_cert = (
        _leaf_usage(
            _builder(
                _name("kube-apiserver-webhook-client"),
                webhook_ca_name,
                webhook_client_key.public_key(),
            ),
            ExtendedKeyUsageOID.CLIENT_AUTH,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(webhook_ca_key.public_key()),
            critical=False,
        )
        .sign(webhook_ca_key, hashes.SHA256())
    )
    _write_key(certs.webhook_client_key, webhook_client_key)
    _write_cert(certs.webhook_client_cert, webhook_client_cert)

    service_account_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(certs.service_account_key, service_account_key)
    certs.service_account_public_key.write_bytes(
        service_account_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return certs


@dataclass(frozen=True)
class ServingPair:
    """A CA of its own and a serving certificate for 127.0.0.1 signed by it (PEM files)."""

    ca_cert: Path
    cert: Path
    key: Path


def serving_pair(directory: Path, *, common_name: str) -> ServingPair:
    """A fresh CA and a certificate for 127.0.0.1 it signed, in ``directory`` as ``ca.crt``,
    ``tls.crt`` and ``tls.key`` (the file names of a kubernetes.io/tls Secret): for a server on
    the host that the API server calls, such as an admission webhook."""
    directory.mkdir(parents=True, exist_ok=True)
    pair = ServingPair(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    ca_name = _name(f"{common_name}-ca")
    ca_key, ca_cert = _new_ca(ca_name)
    key = _new_key()
    cert = (
        _leaf_usage(
            _builder(_name(common_name), ca_name, key.public_key()),
            ExtendedKeyUsageOID.SERVER_AUTH,
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_cert(pair.ca_cert, ca_cert)
    _write_cert(pair.cert, cert)
    _write_key(pair.key, key)
    return pair
