"""The compose cluster's credentials, generated once (the one-shot ``kafka-credentials``
service, like the signing key): a CA, a TLS key and certificate per broker, a SASL password per
principal, the brokers' login file and each principal's client settings.

    python deploy/kafka/credentials.py [DIR]        # default /kafka-secrets

Existing files are left alone (a second run changes nothing); run with an empty DIR to start
over, then restart the brokers. Each file is readable by its user only: the brokers' (uid
1000, the apache/kafka image's ``appuser``) their keystore, their login file and the admin's
settings; the workers' (uid 10001, the baton image's) the worker's password; the rest stays
root's, for the operator to hand to the desk, the consumers, the publishers and the operators.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

BROKERS = ("kafka-1", "kafka-2", "kafka-3")
# The principals of the ACLs (deploy/kafka/acls.txt); admin is the brokers' own and a super user.
PRINCIPALS = ("admin", "worker", "desk", "consumer", "publisher", "operator")
BROKER_UID, BATON_UID = 1000, 10001
OWNERS = {"worker": BATON_UID, "admin": BROKER_UID}
DAYS = "3650"


def _write(path: Path, text: str, owner: int | None = None, mode: int = 0o400) -> None:
    """Create ``path`` with ``text`` (never over an existing file), ``mode``, ``owner``."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "w") as f:
        f.write(text)
    _own(path, owner)


def _own(path: Path, owner: int | None) -> None:
    if owner is not None and os.geteuid() == 0:
        os.chown(path, owner, owner)


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=120)


def ca(folder: Path) -> None:
    """The CA that signs every broker's certificate; its key never leaves this folder."""
    if (folder / "ca.pem").exists():
        return
    key = folder / "ca.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:3072", "-nodes", "-days", DAYS,
        "-subj", "/CN=baton-kafka-ca", "-keyout", key, "-out", folder / "ca.pem",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    key.chmod(0o400)
    (folder / "ca.pem").chmod(0o444)


def broker(folder: Path, name: str) -> None:
    """``<name>.pem``: the broker's key and certificate (names it is reached by: its service
    name inside the network, localhost and 127.0.0.1 from the host)."""
    bundle = folder / f"{name}.pem"
    if bundle.exists():
        return
    key, csr, cert, ext = (folder / f"{name}.{x}" for x in ("key", "csr", "crt", "ext"))
    ext.write_text(
        f"subjectAltName=DNS:{name},DNS:localhost,IP:127.0.0.1\n"
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
    )
    _openssl(
        "req", "-newkey", "rsa:3072", "-nodes", "-subj", f"/CN={name}", "-keyout", key, "-out", csr
    )
    _openssl(
        "x509", "-req", "-in", csr, "-CA", folder / "ca.pem", "-CAkey", folder / "ca.key",
        "-CAcreateserial", "-days", DAYS, "-extfile", ext, "-out", cert,
    )  # fmt: skip
    _write(bundle, key.read_text() + cert.read_text(), BROKER_UID)
    for part in (key, csr, cert, ext):
        part.unlink()


def password(folder: Path, principal: str) -> str:
    """The principal's SASL password, made once (``password.<principal>``)."""
    path = folder / f"password.{principal}"
    if not path.exists():
        _write(path, secrets.token_hex(32), OWNERS.get(principal))
    return path.read_text()


def client_properties(folder: Path, principal: str, secret: str) -> None:
    """``<principal>.properties``: the Java tools' settings to log in as the principal."""
    path = folder / f"{principal}.properties"
    if path.exists():
        return
    _write(
        path,
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{principal}" password="{secret}";\n'
        "ssl.truststore.type=PEM\nssl.truststore.location=/kafka-secrets/ca.pem\n",
        OWNERS.get(principal),
    )


def broker_login(folder: Path, passwords: dict[str, str]) -> None:
    """``broker-jaas.conf``: who may log in (PLAIN, over TLS only) and the brokers' own login."""
    path = folder / "broker-jaas.conf"
    if path.exists():
        return
    users = " ".join(f'user_{p}="{s}"' for p, s in passwords.items())
    _write(
        path,
        "KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        f'  username="admin" password="{passwords["admin"]}" {users};\n}};\n',
        BROKER_UID,
    )


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    ca(folder)
    for name in BROKERS:
        broker(folder, name)
    passwords = {p: password(folder, p) for p in PRINCIPALS}
    for principal, secret in passwords.items():
        client_properties(folder, principal, secret)
    broker_login(folder, passwords)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/kafka-secrets"))
