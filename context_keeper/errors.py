"""The one exception family of context-keeper.

    ContextKeeperError            base; ``str(err)`` is a message a person or agent can act on
    ├── InvalidInput              a parameter or field is wrong (names the field and the fix)
    ├── NotFound                  an id that no entry has
    ├── NoProject                 no ``.context/`` directory could be resolved
    ├── UnsafePath                a path that would leave the project root
    └── StoreError                the store on disk cannot be used as asked
        └── CorruptStoreFile      a store file that does not parse (names file and position)
            ├── NotAStoreFile     a directory, or a link to nothing, where a store file belongs
            └── MisencodedStoreFile  a store file saved in UTF-16, UTF-32 or a legacy 8-bit encoding

Adapters translate at the edge: the MCP server into ``ToolError`` (``isError: true``), the CLI
into exit codes, hooks into silence plus a log line.
"""

from __future__ import annotations


class ContextKeeperError(Exception):
    """Base of every error context-keeper raises on purpose."""

    exit_code = 1


class InvalidInput(ContextKeeperError):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    exit_code = 2


class NotFound(ContextKeeperError):
    exit_code = 3


class NoProject(ContextKeeperError):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field  # the parameter that named the directory, when one did

    exit_code = 4


class UnsafePath(InvalidInput):
    pass


class StoreError(ContextKeeperError):
    exit_code = 5


class CorruptStoreFile(StoreError):
    """``str()`` speaks of a read; ``for_write()`` is the same error worded for a refused write."""

    remedy: str | None = None  # the subclasses below set their own wording
    mendable = False
    crashed = False

    def __init__(self, path: str, line: int, column: int, detail: str, *, writing: bool = False,
                 conflict: bool = False, remedy: str | None = None, mendable: bool = False,
                 crashed: bool = False) -> None:
        self.path = path
        self.line = line
        self.column = column
        self.detail = _without_trailing_at(detail)
        self.writing = writing
        self.conflict = conflict  # git conflict markers at ``line``: a merge to finish, not a typo
        # A known hand-edit slip (a comment, a trailing or missing comma, a lone entry): what to
        # do about it, and whether `doctor --fix` can do that without losing anything.
        self.remedy = remedy
        self.mendable = mendable
        # Bytes a crash left (all NUL: the disk kept the file's size, not its data): no position
        # in them is worth fixing, the last good copy is the way back.
        self.crashed = crashed
        if crashed:
            where = f"{path} does not parse ({self.detail})"
            name = path.replace("\\", "/").rsplit("/", 1)[-1]
            remedy = ("run `context-keeper doctor --fix`, which puts back its last good copy from .context/.last-good/ "
                      f"when there is one, or restore the file from version control (git checkout -- .context/{name})")
        elif conflict:
            # Not `doctor --fix`: putting the last good copy back would throw the merge away.
            where = f"{path} has unresolved git merge conflict markers ({detail}, the first at line {line})"
            remedy = ("resolve the merge conflict (keep each side's entries as separate objects, each with its own "
                      "id, and delete the marker lines), then run `context-keeper doctor`")
        elif remedy is not None:
            where = f"{path} does not parse ({detail} at line {line}, column {column})"
            if mendable:
                remedy += " (or run `context-keeper doctor --fix`, which does that and keeps the rest as written)"
        else:
            where = f"{path} does not parse ({self.detail} at line {line}, column {column})"
            # Not told whether a last good copy exists: a file never written through context-keeper
            # has none, and --fix then has nothing to put back.
            remedy = ("fix that position by hand, or restore the file from version control (`context-keeper "
                      "doctor --fix` puts back its last good copy from .context/.last-good/ when there is one and "
                      "that loses nothing; without one it cannot repair the file)")
        if writing:
            super().__init__(f"{where}. Nothing was written to it; {remedy} and try again.")
        else:
            super().__init__(f"{where}, so its entries cannot be read; {remedy}.")

    def for_write(self) -> CorruptStoreFile:
        return CorruptStoreFile(self.path, self.line, self.column, self.detail, writing=True, conflict=self.conflict,
                                remedy=self.remedy, mendable=self.mendable, crashed=self.crashed)


class NotAStoreFile(CorruptStoreFile):
    """A store file's path holds a directory, or a symbolic link whose target is gone: there is
    nothing to parse, and neither a position to fix nor a last good copy to put over it."""

    def __init__(self, path: str, what: str, remedy: str, *, writing: bool = False) -> None:
        self.what, self.remedy = what, remedy
        self.path, self.line, self.column, self.detail = path, 1, 1, what
        self.writing, self.conflict = writing, False
        if writing:
            StoreError.__init__(self, f"{path} {what}. Nothing was written to it; {remedy}, then try again.")
        else:
            StoreError.__init__(self, f"{path} {what}, so its entries cannot be read; {remedy}.")

    def for_write(self) -> NotAStoreFile:
        return NotAStoreFile(self.path, self.what, self.remedy, writing=True)


class MisencodedStoreFile(CorruptStoreFile):
    """A store file saved in an encoding other than UTF-8: UTF-16 (Windows PowerShell 5.1's ``>``
    and ``Out-File``), UTF-32, or a legacy 8-bit one such as Windows-1252 (an old editor). The
    remedy is to re-save the whole file, not to fix a position; nothing converts it behind the
    person's back. ``line``/``column``: the first byte that is not UTF-8, for a legacy encoding."""

    LEGACY = "a legacy 8-bit encoding such as Windows-1252"

    def __init__(self, path: str, encoding: str, line: int = 1, column: int = 1, *, writing: bool = False) -> None:
        self.encoding = encoding
        self.path, self.line, self.column = path, line, column
        self.writing, self.conflict = writing, False
        legacy = encoding == self.LEGACY
        where = f" (the first byte that is not UTF-8 is at line {line}, column {column})" if legacy else ""
        self.detail = f"saved {self.saved_as}, not UTF-8{where}"
        remedy = "re-save it as UTF-8 (in an editor: save with encoding UTF-8)"
        if legacy:  # one byte above ASCII in an ASCII file may as well be a stray one
            remedy += ", or delete that byte if it is a stray one"
        if writing:
            StoreError.__init__(self, f"{path} is {self.detail}. Nothing was written to it; {remedy} and try again.")
        else:
            StoreError.__init__(self, f"{path} is {self.detail}, so its entries cannot be read; {remedy}.")

    @property
    def saved_as(self) -> str:
        return f"in {self.encoding}" if self.encoding == self.LEGACY else f"as {self.encoding}"

    def for_write(self) -> MisencodedStoreFile:
        return MisencodedStoreFile(self.path, self.encoding, self.line, self.column, writing=True)


def json_mistake(exc: ValueError) -> str:
    """A ``json.JSONDecodeError`` as "what at line L, column C", for a message about a file."""
    return f"{_without_trailing_at(exc.msg)} at line {exc.lineno}, column {exc.colno}"  # type: ignore[attr-defined]


def _without_trailing_at(detail: str) -> str:
    # Python's json ends some messages on the position's own "at" ("Invalid control character
    # at", "Unterminated string starting at"); the messages here add "at line ..." themselves.
    return detail.removesuffix(" at")
