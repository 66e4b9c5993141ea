"""AWS credentials: read by the files adapter, used by the HTTP adapter to sign.

A value both adapters share, so it lives here; it holds secrets, so its ``repr`` does not.
"""

from __future__ import annotations

from attrs import field, frozen


@frozen(kw_only=True)
class AwsCredentials:
    """An access key pair (and session token) and where it came from, for messages.

    ``repr`` (and so ``str``) leaves out the secret key and the token: only the key id,
    which AWS itself sends in the clear in every ``Authorization`` header, may be shown.
    ``source`` says where they were found (``AWS_ACCESS_KEY_ID``, ``profile "dev" in
    /home/u/.aws/credentials``).
    """

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str = field(default="", repr=False)
    source: str

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values a message must never show (the secret key, the token when set)."""
        return tuple(secret for secret in (self.secret_access_key, self.session_token) if secret)
