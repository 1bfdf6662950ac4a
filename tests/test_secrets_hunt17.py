"""Secret-detector defects found in round 17's hunt, each test failing before its fix.

Credentials are assembled at runtime so this file itself never trips a secret scanner. The public
keys below are real OpenSSH public keys (their private halves were deleted): public by design.
"""

from __future__ import annotations

import pytest

from context_keeper.errors import InvalidInput
from context_keeper.secrets import find_secret
from tests.conftest import snapshot_files

PASSWORD = "Zx9mQ2pLr7" + "Kd4fQw"
DJANGO_KEY = "k8#qz!p2@zv$9m^r&w*" + "t(u)y_1n3b5c7d0e"
SLACK_HOOK = "https://hooks.slack.com/services/" + "T024BE7LD/B01ABCDEF12/" + "aB3dE5fG7hI9jK1lM3nO5pQ7"
DISCORD_HOOK = "https://discord.com/api/webhooks/" + "123456789012345678/" + "Zx9mQ2pLr7Kd4fQw" * 4
ED25519_PUB = "ssh-ed25519 " + "AAAAC3NzaC1lZDI1NTE5AAAAIH0o5fyj+9ezHdC8HGwZYVv2QgD3hBXYNsyRWX2xZa8A dev@laptop"
ECDSA_PUB = ("ecdsa-sha2-nistp256 " + "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBM04FWGxnawSuiMrW2IPEueXJmiZ9F6o"
             "m6H3hpdWW3Beh4scFBxGbUxccczvvchRRzw9AmWK0AnFrpnchuvezeY= ops@bastion")
RSA_PUB = ("ssh-rsa " + "AAAAB3NzaC1yc2EAAAADAQABAAABAQCdA8s3peFxqscul/ZIeu7VgFh3ojUHxRdoRn130bRIB/cmQ37PmztwG7ATbnA/"
           "f0CKJwKqYzYP1WpyRSpgNxCjdyhtTn+ku7GPmAxYxkpJu9mDWPdIgvU+j4vZ0/c9p0r8KfEyuPvZT/POyy7vgI9yIzezKC4ZDrRbS27p"
           "cevbK1Ad4Xz9oCLrcVrq/T/S6K5M4VrbCX+SIx/xFWE5fZWsMCPUIBS/RkWBIWqkmmyVOQBlL+xPuaUJsgQkdiTh90ohVrtSupq/vYik"
           "VsDXLhZFd+FoifmVDoiOrLns7TGd7F8R9bhF2raJ6TBjNch7nYiMlJSenUMuC+X6jdLlKp+n ci@runner")


# ------------------------------------------------------------------ credential shapes that were missed

MISSED = [
    ("django secret key", f"settings.py has SECRET_KEY = '{DJANGO_KEY}' pinned so pods agree.", "secret"),
    ("short quoted secret key", f'SECRET_KEY = "{PASSWORD[:12]}"', "secret"),
    ("signing key in yaml", f'signing_key: "{PASSWORD[:12]}"', "secret"),
    ("short encryption key env line", f"ENCRYPTION_KEY={PASSWORD[:12]}", "secret"),
    ("prefixed secret key env line", f"DJANGO_SECRET_KEY='{DJANGO_KEY}'", "secret"),
    ("password glued to its prefix", f"The job exports PGPASSWORD={PASSWORD} before calling psql.", "password"),
    ("token glued to its prefix", f"NPMTOKEN={PASSWORD}", "secret"),
    ("url with an empty user", f"Sessions live at redis://:{PASSWORD}@cache.internal:6379/0 reachable from every pod.",
     "URL"),
    ("slack webhook", f"Alerts post to {SLACK_HOOK} from deploy.", "webhook"),
    ("discord webhook", f"Build results go to {DISCORD_HOOK}", "webhook"),
    ("spaced assignment", f"password= {PASSWORD}", "password"),
    ("url password that is not a sample", f"postgres://postgres:{PASSWORD}@localhost:5432/test", "URL"),
    ("fake public key prefix", "ssh-ed25519 " + "Zq8vT2mKp9XwL4nR7bY1cF6hJ3sD5gA0eU laptop", "high-entropy"),
    ("public key prefix on another key type", "ssh-rsa " + ED25519_PUB.split()[1], "high-entropy"),
]


@pytest.mark.parametrize("text,label", [(t, label) for _, t, label in MISSED], ids=[c[0] for c in MISSED])
def test_common_credential_shapes_are_recognised(text, label):
    found = find_secret(text)
    assert found is not None, text
    assert label.lower() in found.lower()


# ------------------------------------------------------------------ engineering text that was refused

NOT_SECRETS = [
    ("docker default credentials", "CI tests use postgres://postgres:postgres@localhost:5432/test"),
    ("rabbitmq default credentials", "amqp://guest:guest@localhost:5672/ in the compose file"),
    ("url shape placeholder", "URLs look like postgres://user:password@host:5432/db"),
    ("keyword naming a parameter", "the token= parameter is sent with every request"),
    ("ed25519 public key", f"Add {ED25519_PUB} to authorized_keys on the bastion"),
    ("ecdsa public key", ECDSA_PUB),
    ("rsa public key", f"deploy key: {RSA_PUB}"),
    ("signing key reference", "signing_key: kms://prod/release-signing"),
    ("slack webhook placeholder", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("secret key prose", "SECRET_KEY is read from the environment at start-up"),
    ("secret key from env", "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']"),
    ("capital token prose", "the GITHUB_TOKEN: provided by Actions"),
]


@pytest.mark.parametrize("text", [t for _, t in NOT_SECRETS], ids=[c[0] for c in NOT_SECRETS])
def test_ordinary_engineering_text_is_stored(text):
    assert find_secret(text) is None


# ------------------------------------------------------------------ through record

def _decision(why: str) -> dict:
    return {
        "summary": "Where the service keeps its credentials",
        "problem": "Every pod needs the same credentials, and they must survive a redeploy.",
        "why_chosen": f"Pinned once so every pod agrees on it after a redeploy. {why}",
    }


def test_record_refuses_a_missed_shape_and_writes_nothing(service, project):
    before = snapshot_files(project)
    for text in (f"The job exports PGPASSWORD={PASSWORD} before calling psql.", f"Alerts post to {SLACK_HOOK}."):
        with pytest.raises(InvalidInput) as info:
            service.record("decision", _decision(text))
        assert "why_chosen looks like it contains" in str(info.value) and "allow_secrets" in str(info.value)
    assert snapshot_files(project) == before


def test_record_stores_a_public_key_and_a_local_test_url(service, project):
    answer = service.record("decision", _decision(f"CI uses postgres://postgres:postgres@localhost:5432/test; {ED25519_PUB}"))
    assert answer["success"]
