"""The disk compile cache: where it lives, when it may be used, and the files it keeps.

    <root>/key                           32 random bytes, mode 0600: the secret entries are
                                         authenticated with (runtime/cache_entry.py)
    <root>/v2/<key[:2]>/<key>.onnxc      one entry, mode 0600

The secret lives in the root because it needs exactly the protection the entries get (a
directory only this user can write) and so each cache stays self-contained: a per-project
`cache_dir` or `rm -rf` carries or resets its own trust, and nothing is written outside the
directory the user chose (docs/robustness.md, "The compile cache: threat model").

Location: the `cache_dir` argument, else `$ONNXC_CACHE_DIR`, else `$XDG_CACHE_HOME/onnxc`
(`~/.cache/onnxc`); `cache_dir=False` or `ONNXC_CACHE=0` turns it off. The key of an entry
is runtime/cache_key.py's digest of the model's bytes, the options and the toolchain.

A directory is used only if this user owns it and neither group nor others may write it
(the root, `v2` and the entry's shard); otherwise a `CacheWarning` names it and says why,
and the model is compiled without the cache (nothing read, nothing written). The same goes
for a key file this user does not own or that others may read. onnxc creates its
directories 0700 and its files 0600, fixing the mode afterwards when the umask took bits
away. All work below the root goes through directory file descriptors (`dir_fd`, no
symlinks followed), so a path component swapped after it was checked is never used.

A hit opens the entry (a regular file this user owns, not writable by others), maps it,
checks its MAC (one pass over the bytes) and only then reads its header; anything that
fails is a miss and the file is deleted. Entries are written to a temporary file and
`os.replace`d into place, so processes sharing a cache never see a torn entry. The cache
keeps at most `$ONNXC_CACHE_MAX_MB` megabytes (default 2048): after each store the least
recently used entries (by access time, which a hit refreshes) go until it fits.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import re
import secrets
import stat
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from onnxc.errors import CacheWarning, InvalidArgumentError, ResourceLimitError
from onnxc.runtime import cache_entry
from onnxc.runtime.cache_entry import FORMAT_VERSION, BadEntry, Entry
from onnxc.runtime.cache_key import (
    cache_key,
    compile_key,
    snapshot,
    snapshot_parsed,
    toolchain_fingerprint,
    unchanged,
)
from onnxc.runtime.compiled_model import CompiledModel

__all__ = [
    "FORMAT_VERSION",
    "DiskCache",
    "cache_key",
    "cache_root",
    "compile_key",
    "load",
    "max_bytes",
    "open_cache",
    "snapshot",
    "snapshot_parsed",
    "toolchain_fingerprint",
    "unchanged",
]

DEFAULT_MAX_MB = 2048
KEY_FILE = "key"
SECRET_BYTES = 32
VERSION_DIR = f"v{FORMAT_VERSION}"
_SUFFIX = ".onnxc"
_IS_KEY = re.compile(r"[0-9a-f]{64}")
_DIR_FLAGS = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW


class _Refused(Exception):
    """The cache cannot be used safely; the message names the file or directory and why."""


def cache_root(cache_dir: str | os.PathLike | bool | None = None) -> Path | None:
    """The cache directory to use, or None when caching is off."""
    if cache_dir is False or os.environ.get("ONNXC_CACHE", "1").strip().lower() in (
        "0", "false", "no", "off",
    ):
        return None
    if cache_dir is not None and cache_dir is not True:
        return Path(cache_dir)
    return default_root()


def default_root() -> Path:
    """$ONNXC_CACHE_DIR, else $XDG_CACHE_HOME/onnxc (~/.cache/onnxc), on or off."""
    if os.environ.get("ONNXC_CACHE_DIR"):
        return Path(os.environ["ONNXC_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "onnxc"


def max_bytes() -> int:
    """The cache's size bound, from `$ONNXC_CACHE_MAX_MB` (a finite number >= 0)."""
    text = os.environ.get("ONNXC_CACHE_MAX_MB", "").strip()
    if not text:
        return DEFAULT_MAX_MB * 2**20
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = math.nan
    if not math.isfinite(megabytes) or megabytes < 0:
        raise InvalidArgumentError(
            f"ONNXC_CACHE_MAX_MB must be a finite number of megabytes >= 0, got {text!r}")
    return int(megabytes * 2**20)


def open_cache(cache_dir: str | os.PathLike | bool | None = None) -> DiskCache | None:
    """The cache to use for one compile: None when caching is off, or when its directory or
    key file is unsafe (then a CacheWarning says which and why)."""
    root = cache_root(cache_dir)
    if root is None:
        return None
    limit = max_bytes()
    try:
        _make_dirs(root)
        fd = os.open(root, _DIR_FLAGS)
    except OSError as error:
        return _warn(f"cannot use the cache directory {root}: {error.strerror or error}")
    try:
        st = os.fstat(fd)
        _check_dir(st, root)
        secret = _secret(fd, root)
    except _Refused as refusal:
        return _warn(str(refusal))
    except OSError as error:
        return _warn(f"cannot use the cache directory {root}: {error.strerror or error}")
    finally:
        os.close(fd)
    return DiskCache(root, secret, (st.st_dev, st.st_ino), limit)


def load(root: str | os.PathLike, key: str) -> CompiledModel | None:
    """The model stored under `key` in the cache at `root`, or None (a miss)."""
    disk = open_cache(root)
    return None if disk is None else disk.load(key)


class DiskCache:
    """An opened, checked cache directory and its secret."""

    def __init__(self, root: Path, secret: bytes, identity: tuple[int, int], limit: int):
        self.root = root
        self._secret = secret
        self._identity = identity
        """(st_dev, st_ino) of the root that was checked: a replaced root is refused"""
        self.max_bytes = limit
        self.refused = False
        """set when a directory below the root was unsafe: no more reads or writes"""

    def entry_path(self, key: str) -> Path:
        return self.root / VERSION_DIR / key[:2] / f"{key}{_SUFFIX}"

    def load(self, key: str) -> CompiledModel | None:
        """The model stored under `key`, or None (a miss; a bad entry is deleted)."""
        if self.refused or not _IS_KEY.fullmatch(key):
            return None
        try:
            with self._shard(key, create=False) as shard:
                return None if shard is None else self._load(shard, key)
        except _Refused as refusal:
            self._refuse(refusal)
        except OSError:
            pass
        return None

    def _load(self, shard: int, key: str) -> CompiledModel | None:
        name = f"{key}{_SUFFIX}"
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=shard)
        except FileNotFoundError:
            return None
        except OSError:  # a symlink, a FIFO, ...: not something this cache wrote
            _discard(shard, name, None)
            return None
        try:
            st = os.fstat(fd)
            # a file others could write may change under the mapping after its MAC is checked
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() \
                    or st.st_mode & 0o022 or st.st_size == 0:
                raise BadEntry("not a private regular file")
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)
            compiled = cache_entry.read(mapped, key, self._secret).compiled_model()
            os.utime(fd)  # a hit makes the entry the most recently used
            return compiled
        except ResourceLimitError:  # a good entry, but less memory free than at compile time
            raise
        except Exception:  # noqa: BLE001 - forged, edited, truncated, unloadable: a miss
            _discard(shard, name, os.fstat(fd))
            return None
        finally:
            os.close(fd)

    def store(self, key: str, compiled: CompiledModel, object_code: bytes,
              constant_names: Sequence[str], entry_symbol: str) -> Path | None:
        """Write the entry for `key` atomically; None (and no entry) if it cannot be written."""
        if self.refused or not _IS_KEY.fullmatch(key):
            return None
        try:
            entry = Entry.of(compiled, object_code, constant_names, entry_symbol)
            with self._shard(key, create=True) as shard:
                assert shard is not None
                tmp = f".{key[:16]}.{secrets.token_hex(8)}.tmp"
                fd = os.open(tmp, _CREATE_FLAGS, 0o600, dir_fd=shard)
                try:
                    with os.fdopen(fd, "wb") as out:
                        _private_mode(out.fileno(), 0o600)
                        cache_entry.write(out, key, self._secret, entry)
                    os.replace(tmp, f"{key}{_SUFFIX}", src_dir_fd=shard, dst_dir_fd=shard)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp, dir_fd=shard)
                    raise
            self.evict(keep=key)
        except _Refused as refusal:
            self._refuse(refusal)
            return None
        except Exception:  # noqa: BLE001 - full disk, an unencodable model: no entry, and
            return None  # the compile it would have saved still succeeds
        return self.entry_path(key)

    def evict(self, keep: str | None = None, limit: int | None = None) -> None:
        """Delete least recently used entries until the cache holds at most `limit` bytes
        (default: the bound it was opened with); the entry `keep` stays."""
        limit = self.max_bytes if limit is None else limit
        entries = []
        with self._version_dir(create=False) as version:
            if version is None:
                return
            for shard in _subdirs(version):
                # an entry or shard another process removes meanwhile is skipped
                with contextlib.suppress(OSError), _opened(shard, version) as fd, \
                        os.scandir(fd) as files:
                    for file in files:
                        if file.name.endswith(_SUFFIX) and file.is_file(follow_symlinks=False):
                            with contextlib.suppress(OSError):
                                st = file.stat(follow_symlinks=False)
                                entries.append((max(st.st_atime, st.st_mtime), st.st_size,
                                                shard, file.name))
            total = sum(size for _, size, _, _ in entries)
            for _, size, shard, name in sorted(entries):
                if total <= limit:
                    break
                if name == f"{keep}{_SUFFIX}":
                    continue
                with contextlib.suppress(OSError), _opened(shard, version) as fd:
                    os.unlink(name, dir_fd=fd)
                total -= size

    @contextlib.contextmanager
    def _version_dir(self, create: bool) -> Iterator[int | None]:
        """The `v2` directory's fd, after checking that the root is still the one opened."""
        root = os.open(self.root, _DIR_FLAGS)
        try:
            st = os.fstat(root)
            if (st.st_dev, st.st_ino) != self._identity:
                raise _Refused(f"the cache directory {self.root} was replaced while in use")
            _check_dir(st, self.root)
            version = _subdir(root, VERSION_DIR, self.root / VERSION_DIR, create)
        finally:
            os.close(root)
        try:
            yield version
        finally:
            if version is not None:
                os.close(version)

    @contextlib.contextmanager
    def _shard(self, key: str, create: bool) -> Iterator[int | None]:
        """The fd of the directory that holds `key`'s entry (None: absent, not created)."""
        with self._version_dir(create) as version:
            shard = None if version is None else _subdir(
                version, key[:2], self.root / VERSION_DIR / key[:2], create)
            try:
                yield shard
            finally:
                if shard is not None:
                    os.close(shard)

    def _refuse(self, refusal: _Refused) -> None:
        self.refused = True
        _warn(str(refusal))


def _warn(reason: str) -> None:
    warnings.warn(f"onnxc: not using the compile cache: {reason}; compiling without it",
                  CacheWarning, stacklevel=4)


def _check_owner(st: os.stat_result, what: str) -> None:
    """_Refused unless this user owns `what` (described by `st`)."""
    if st.st_uid != os.geteuid():
        raise _Refused(f"{what} is owned by uid {st.st_uid}, not by this user "
                       f"(uid {os.geteuid()})")


def _check_dir(st: os.stat_result, path: Path) -> None:
    """_Refused unless `st` is a directory this user owns that no one else may write."""
    if not stat.S_ISDIR(st.st_mode):
        raise _Refused(f"{path} is not a directory")
    _check_owner(st, f"the directory {path}")
    if st.st_mode & 0o022:
        who = " and ".join(w for bit, w in ((0o020, "group"), (0o002, "others"))
                           if st.st_mode & bit)
        raise _Refused(f"the directory {path} is writable by {who} "
                       f"(mode {stat.S_IMODE(st.st_mode):04o})")


def _make_dirs(path: Path) -> None:
    """Create `path` and its missing parents, each with mode 0700 whatever the umask."""
    missing = []
    while True:
        try:
            os.stat(path)
            break
        except FileNotFoundError:
            missing.append(path)
            if path.parent == path:
                break
            path = path.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            continue  # made by another process meanwhile: checked like any other
        fd = os.open(directory, _DIR_FLAGS | _NOFOLLOW)
        try:
            _private_mode(fd, 0o700)
        finally:
            os.close(fd)


def _private_mode(fd: int, mode: int) -> None:
    """Give a file or directory this process just created exactly `mode` (the umask may have
    taken the owner's bits, or a permissive one left others')."""
    if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
        os.fchmod(fd, mode)


def _subdir(parent: int, name: str, path: Path, create: bool) -> int | None:
    """The checked fd of directory `name` in `parent` (created 0700 if asked); None if it
    does not exist and `create` is false. Never follows a symlink."""
    try:
        fd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            return None
        try:
            os.mkdir(name, 0o700, dir_fd=parent)
            made = True
        except FileExistsError:
            made = False
        fd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent)
        if made:
            _private_mode(fd, 0o700)
    except OSError as error:  # ELOOP (a symlink), ENOTDIR
        raise _Refused(f"{path} is not a directory ({error.strerror})") from None
    try:
        _check_dir(os.fstat(fd), path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _subdirs(parent: int) -> list[str]:
    with os.scandir(parent) as entries:
        return [e.name for e in entries if e.is_dir(follow_symlinks=False)]


@contextlib.contextmanager
def _opened(name: str, parent: int) -> Iterator[int]:
    fd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent)
    try:
        yield fd
    finally:
        os.close(fd)


def _discard(directory: int, name: str, seen: os.stat_result | None) -> None:
    """Delete the bad entry `name`, unless another process has meanwhile replaced it (with
    a good one) by a different file than the one that was `seen`."""
    with contextlib.suppress(OSError):
        now = os.stat(name, dir_fd=directory, follow_symlinks=False)
        if seen is None or (now.st_dev, now.st_ino) == (seen.st_dev, seen.st_ino):
            os.unlink(name, dir_fd=directory)


def _secret(root: int, path: Path) -> bytes:
    """The cache's secret from `<root>/key`, made on first use; _Refused if the file is not
    a private one of this user's (others may have read or chosen it)."""
    key_path = path / KEY_FILE
    try:
        fd = os.open(KEY_FILE, _READ_FLAGS, dir_fd=root)
    except FileNotFoundError:
        _make_secret(root)
        fd = os.open(KEY_FILE, _READ_FLAGS, dir_fd=root)
    except OSError as error:
        raise _Refused(f"cannot read the key file {key_path} ({error.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Refused(f"the key file {key_path} is not a regular file")
        _check_owner(st, f"the key file {key_path}")
        if st.st_mode & 0o077:
            raise _Refused(
                f"the key file {key_path} has mode {stat.S_IMODE(st.st_mode):04o}, not 0600: "
                "others may have read it, so entries authenticated with it prove nothing "
                "(delete it, and onnxc makes a new one)")
        data = os.read(fd, SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        raise _Refused(f"the key file {key_path} does not hold a {SECRET_BYTES}-byte key "
                       "(delete it, and onnxc makes a new one)")
    return data


def _make_secret(root: int) -> None:
    """Create `<root>/key` atomically: written in full to a new 0600 file (O_CREAT|O_EXCL),
    then hard-linked into place, which fails if another process made one first (then both
    use that one). Without hard links, O_EXCL on the key file itself."""
    tmp = f".{KEY_FILE}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, _CREATE_FLAGS, 0o600, dir_fd=root)
    try:
        try:
            _private_mode(fd, 0o600)
            os.write(fd, secrets.token_bytes(SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, KEY_FILE, src_dir_fd=root, dst_dir_fd=root, follow_symlinks=False)
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links
            with contextlib.suppress(FileExistsError):
                fd = os.open(KEY_FILE, _CREATE_FLAGS, 0o600, dir_fd=root)
                try:
                    _private_mode(fd, 0o600)
                    os.write(fd, secrets.token_bytes(SECRET_BYTES))
                finally:
                    os.close(fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=root)
