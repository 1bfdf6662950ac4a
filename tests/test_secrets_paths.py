"""A password-style keyword set to a file system path names where a value lives, not the value."""

from __future__ import annotations

import pytest

from context_keeper.secrets import find_secret

PASSWORD = "Zx9mQ2pLr7" + "Kd4fQw"  # assembled so this file never trips a secret scanner


@pytest.mark.parametrize("text", [
    "run the tool with PWD=/srv/app so the relative paths resolve",
    "export PWD=/home/dev/proj before make",
    "DB_PASSWD=/etc/app/db.pass is mounted read-only",
    "PASSWORD_FILE=/run/secrets/db_password (docker secrets)",
    "pwd=~/work/checkout",
    r"password=C:\Users\dev\secrets\pw.txt",
    "secret=./config/secret.env",
])
def test_a_path_is_stored(text):
    assert find_secret(text) is None


@pytest.mark.parametrize("text", [
    f"PASSWORD={PASSWORD}",
    f"password=/{PASSWORD}",        # a generated password may start with a slash
    f"token=/srv/{PASSWORD}",
    'password="/srv/app"',          # quoted: a literal, whatever it looks like
])
def test_a_credential_that_looks_like_a_path_is_still_refused(text):
    assert find_secret(text) is not None
