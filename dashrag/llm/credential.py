"""EnvCredential: a reference to a secret (the *name* of an environment variable), never the secret.

Why a reference: a retriever tree is JSON that is saved to disk, shown in a UI,
exported as a schema, copied into traces and bug reports. If the tree held the API
key, every one of those would leak it. So the tree holds only ``var`` (say
``OPENAI_API_KEY``); the value is read from the process environment at the moment a
request needs it (:meth:`EnvCredential.resolve`) and handed straight to the call,
which masks it in any error the backend sends back (:mod:`dashrag.llm.redaction`).
Nothing here stores the value: not in the params, not in an attribute, not in a
cache; reading it again on every call also means a rotated key takes effect at once.

A missing or empty variable is a :class:`~dashrag.errors.CredentialError` that names
the *variable*, so the user knows what to set; it cannot name the value, there is none.

**Whitespace and control characters.** A value read from a CRLF ``.env`` file or a
mounted secret often ends in ``\r\n`` or a tab; sent as is, the HTTP library refuses
the header and prints the whole key in its "Illegal header value" error. So surrounding
whitespace is stripped, and a value that still holds a control character is refused
with an error naming the variable and the character's position, never the value.
"""

from __future__ import annotations

import os
import unicodedata

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams, ParamKind, kind_field
from dashrag.core.registry import register
from dashrag.errors import CredentialError

ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class EnvCredentialParams(ComponentParams):
    var: str = kind_field(
        ParamKind.CREDENTIAL_NAME, "OPENAI_API_KEY", pattern=ENV_VAR_PATTERN, max_length=200,
        description="Name of the environment variable that holds the secret (never the secret itself).")


@register(
    kind="credential",
    icon="KeyRound",
    category="llm",
    en=("Environment variable", "Reads an API key from an environment variable when a request needs it."),
    es=("Variable de entorno", "Lee una clave de API de una variable de entorno cuando una petición la necesita."),
    representation={"en": "${var}", "es": "${var}"},
)
class EnvCredential(ConfigObject[EnvCredentialParams]):
    @property
    def var(self) -> str:
        return self.params.var

    def is_set(self) -> bool:
        """Whether the variable holds a non-empty value now (surrounding whitespace aside)."""
        return bool((os.environ.get(self.var) or "").strip())

    def _read(self) -> str | None:
        """The value without surrounding whitespace; None when unset or blank; an error for a control character."""
        value = os.environ.get(self.var)
        if value is None:
            return None
        value = value.strip()
        for position, char in enumerate(value):
            if unicodedata.category(char) == "Cc":
                raise CredentialError(f"the environment variable {self.var} holds a control character "
                                      f"(U+{ord(char):04X} at position {position}); an API key is printable text")
        return value or None

    def resolve(self) -> str:
        """The secret, read now; an unset or empty variable raises CredentialError naming it."""
        value = self._read()
        if value is None:
            state = "is empty" if os.environ.get(self.var) is not None else "is not set"
            raise CredentialError(f"the environment variable {self.var} {state}; set it to the API key")
        return value

    def resolve_or_none(self) -> str | None:
        """The secret, or None when the variable is unset or empty (for servers that need no key)."""
        return self._read()

    def __repr__(self) -> str:
        return f"EnvCredential(var={self.var!r})"
