"""Zip archives of NumPy arrays and JSON: the container of model files and checkpoints.

Layout of an archive::

    model.json          format name and version, the library version that
                        wrote it, the caller's metadata, and for each array
                        its dtype, shape and SHA-256
    arrays/<name>.npy   one array each, NumPy's .npy format

:func:`write_archive` writes one atomically; :class:`ArchiveReader` and
:func:`read_archive` read it without pickle and check every array against
its recorded checksum, dtype and shape.  :func:`plain` and
:func:`plain_array` turn values into what an archive can hold.  Model files
(:mod:`dask_streamsvm._persist`) and checkpoints (:mod:`.checkpoint`) are
both archives; what their metadata means is theirs to say.

Writing
    The archive is written to a temporary file created exclusively beside
    its path (``.<name>.tmp-<host>-<pid>-<random>``, by
    :func:`tempfile.mkstemp`: ``O_CREAT | O_EXCL | O_NOFOLLOW``, so a
    planted symlink is never followed and two writers in one process never
    share a file), flushed to disk, renamed over the path and the directory
    synced.  A crash leaves the previous file whole; the temporary files
    of writers on this machine whose process has died are removed by the
    next write to the same path.

Reading
    The checksums detect damage (a truncated copy, a flipped bit), not
    tampering: whoever can write the file can rewrite its checksums.
    Load only files you trust.  What a file can make the reader do is
    bounded all the same: only regular files are opened (never a FIFO or a
    device, so a read cannot block); ``model.json`` may hold at most
    :data:`META_MAX_BYTES` and nest at most :data:`MAX_DEPTH` deep; the
    members together may decompress to at most :func:`expansion_limit`
    bytes (``MAX_EXPANSION`` times the file's size, and never less than
    ``MIN_LIMIT_BYTES``), checked from the zip directory before a byte is
    inflated, and each array's ``.npy`` header must agree with the recorded
    dtype and shape and with its member's size before its data are read.
    Every way a file can be malformed raises :class:`ArchiveError`, a
    ValueError naming the file.
"""

import contextlib
import hashlib
import importlib.metadata
import json
import math
import os
import re
import reprlib
import socket
import stat
import struct
import tempfile
import zipfile
import zlib

import numpy as np

META = "model.json"
META_MAX_BYTES = 32 * 2**20  # model.json: parameters, attributes, history; 32 MiB is ~10^6 feature names
MAX_DEPTH = 64  # of model.json's nesting: ours is under 20 (nested feature maps)
MAX_EXPANSION = 64  # decompressed bytes per byte of the file ...
MIN_LIMIT_BYTES = 2**30  # ... but never less than 1 GiB (a sparse model of zeros compresses ~1000 times)
MAX_MEMBERS = 10_000
_CHUNK = 1 << 24  # bytes read at a time

try:  # the installed distribution's version, which hatch takes from dask_streamsvm.__version__
    LIBRARY_VERSION = importlib.metadata.version("dask-streamsvm")
except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
    LIBRARY_VERSION = None

# What the zip, zlib and .npy header readers raise on a malformed file, besides ValueError.
_DAMAGE = (
    zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, NotImplementedError,
    RuntimeError, struct.error, OverflowError, RecursionError, IndexError, KeyError, TypeError,
)  # fmt: skip
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


class ArchiveError(ValueError):
    """A file that is not a valid archive of the expected kind; the message names the file."""


def plain(value):
    """A value as plain JSON: NumPy scalars become Python numbers."""
    return value.item() if isinstance(value, np.generic) else value


def plain_array(name, array):
    """``array`` as a contiguous array of numbers or strings, which ``.npy`` holds without pickle.

    Object arrays of strings or of ints are converted; any other object
    array raises TypeError naming ``name``.
    """
    array = np.asarray(array)
    if array.dtype.kind == "O":
        values = array.ravel().tolist()
        if all(isinstance(v, str) for v in values):
            array = array.astype(str)
        elif all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
            array = array.astype(np.int64)
        else:
            raise TypeError(
                f"cannot save {name}: its values {values[:3]!r}... are Python objects; model files "
                "hold numbers and strings only. Use pickle for this model."
            )
    return np.ascontiguousarray(array)


def short(value):
    """``repr(value)``, cut to a few dozen characters (for messages about values read from files)."""
    return _SHORT.repr(value)


def cut(text, limit=300):
    """``text`` cut to ``limit`` characters (for messages that may quote what a file holds)."""
    return text if len(text) <= limit else text[:limit] + "..."


# -- writing ------------------------------------------------------------------------------------

_HOST = f"{zlib.crc32(socket.gethostname().encode()):08x}"


def owned_prefix(stem, pid=None):
    """``stem``, this machine's tag and process ``pid`` (this one): how the names of the temporary
    files and directories that a process owns begin, so that :func:`stale_entries` finds them."""
    return f"{stem}{_HOST}-{os.getpid() if pid is None else pid}-"


def temp_prefix(path, pid=None):
    """Name prefix of the temporary files written beside ``path`` by process ``pid`` (this one)."""
    name = os.path.basename(os.fspath(path))
    return owned_prefix(f".{name}.tmp-", pid)


def temp_file(path):
    """``(fd, name)`` of a new file beside ``path``, created exclusively (a symlink is never followed)."""
    directory = os.path.dirname(os.fspath(path)) or "."
    fd, name = tempfile.mkstemp(prefix=temp_prefix(path), dir=directory)
    if hasattr(os, "fchmod"):  # mkstemp's 0600, widened to what open() would give
        os.fchmod(fd, 0o666 & ~_umask())
    return fd, name


def _umask():
    """The process's umask, read without changing it (Linux), else the common 022."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    return 0o022


def _alive(pid):
    """Whether process ``pid`` of this machine may still be running (True when it cannot be told)."""
    if pid <= 0 or pid == os.getpid() or os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process, or not a pid
        return True
    return True


def stale_entries(directory, stem):
    """The entries of ``directory`` named by :func:`owned_prefix` from ``stem`` (then a random part)
    whose process, on this machine, no longer runs; none if the directory cannot be read."""
    pattern = re.compile(re.escape(f"{stem}{_HOST}-") + r"(\d{1,10})-[a-z0-9_]+\Z")
    try:
        with os.scandir(directory or ".") as entries:
            return [e for e in entries if (match := pattern.match(e.name)) and not _alive(int(match[1]))]
    except OSError:
        return []


def remove_stale_temp_files(path):
    """Remove the temporary files a crashed writer on this machine left beside ``path``.

    Only names of :func:`temp_prefix`'s form are touched, and only those of
    a process that no longer runs; the clean-up is best effort.
    """
    directory, name = os.path.split(os.fspath(path))
    for entry in stale_entries(directory, f".{name}.tmp-"):
        with contextlib.suppress(OSError):
            os.remove(entry.path)


def _sync_directory(directory):
    """fsync ``directory``, so that a rename in it survives a power cut (where the OS allows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # Windows opens no directories
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def prepare_directory(directory, name, file_name):
    """``directory`` as a str, created if missing and proven a place where ``file_name`` can be written.

    The proof is a temporary file of ``file_name``'s, created and removed.
    Raises ValueError naming the parameter ``name``, the path and what is
    wrong (TypeError if ``directory`` is not a path at all), so that a fit
    fails before it reads rather than at its first write.  Both
    ``checkpoint_dir`` and ``spill_dir`` are checked here.
    """
    try:
        where = os.fsdecode(os.fspath(directory))
    except TypeError:
        raise TypeError(
            f"{name} must be a path (a str or os.PathLike) or None, got {short(directory)} "
            f"of type {type(directory).__name__}. Give the directory's path."
        ) from None
    problem = None
    try:
        os.makedirs(where, exist_ok=True)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        if isinstance(exc, ValueError):
            problem = f"it is not a valid path ({exc})"
        elif os.path.lexists(where) and not os.path.isdir(where):
            problem = "it exists and is not a directory"
        elif isinstance(exc, NotADirectoryError):
            problem = "a part of its path is a file, not a directory"
        else:
            problem = f"it cannot be created ({exc.strerror or exc})"
    if problem is None:
        try:
            fd, probe = temp_file(os.path.join(where, file_name))
        except OSError as exc:
            problem = f"no file can be created in it ({exc.strerror or exc})"
        else:
            os.close(fd)
            os.remove(probe)
    if problem is not None:
        raise ValueError(
            f"{name}={where!r} cannot be used: {problem}. Give a directory this process can write to."
        )
    return where


class _Hashing:
    """A write-only file object that hashes what passes through it."""

    def __init__(self, target):
        self.target, self.sha = target, hashlib.sha256()

    def write(self, data):
        self.sha.update(data)
        return self.target.write(data)


def _write_members(raw, meta, arrays, compression):
    with zipfile.ZipFile(raw, "w", compression=compression) as archive:
        for key, array in arrays.items():
            array = np.ascontiguousarray(array)
            with archive.open(f"arrays/{key}.npy", "w", force_zip64=True) as member:
                sink = _Hashing(member)
                np.lib.format.write_array(sink, array, allow_pickle=False)
            meta["arrays"][key] = {
                "dtype": array.dtype.str,
                "shape": list(array.shape),
                "sha256": sink.sha.hexdigest(),
            }
        archive.writestr(META, json.dumps(meta, indent=1, allow_nan=True))


def write_archive(path, fmt, version, meta, arrays, *, compress=True):
    """Write ``meta`` (JSON) and ``arrays`` to a zip file at ``path``, as format ``fmt`` ``version``.

    The metadata written is ``format``, ``version`` and ``library_version``
    (:data:`LIBRARY_VERSION`), then ``meta``, then the ``arrays`` table.
    Each array is streamed into the archive in NumPy's ``.npy`` format with
    its SHA-256 recorded in that table, so large arrays are not copied in
    memory.  The file appears at ``path`` only once complete (see the
    module docstring): a crash mid-write leaves the previous file, never
    half of one.  An existing ``path`` that is not a regular file (a FIFO,
    a device, a socket, a directory) is refused (ValueError) before anything
    is written: the rename would replace it, ``/dev/null`` included.  A
    symbolic link is replaced by the file, never written through.
    """
    meta = {"format": fmt, "version": version, "library_version": LIBRARY_VERSION, **meta, "arrays": {}}
    path = os.fspath(path)
    if os.path.lexists(path):
        mode = os.lstat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise ValueError(
                f"{path} exists and is not a regular file (a directory, FIFO, device or socket): a model "
                "or checkpoint file replaces only a regular file or a symbolic link. Give another path."
            )
    remove_stale_temp_files(path)
    fd, tmp = temp_file(path)
    try:
        with os.fdopen(fd, "wb") as raw:
            _write_members(raw, meta, arrays, zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _sync_directory(os.path.dirname(path) or ".")


# -- reading ------------------------------------------------------------------------------------


def expansion_limit(file_bytes):
    """The most bytes an archive of ``file_bytes`` bytes on disk may decompress to."""
    return max(MIN_LIMIT_BYTES, MAX_EXPANSION * file_bytes)


def _open_regular(where, what):
    """``(file, size)`` of the regular file ``where``; anything else raises ArchiveError.

    The file is opened non-blocking and checked again once open, so that a
    FIFO put in its place between the two checks cannot block the reader.
    """
    not_regular = f"{where} is not a {what}: it is not a regular file (a directory, FIFO or device)."
    if not stat.S_ISREG(os.stat(where).st_mode):
        raise ArchiveError(not_regular)
    fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ArchiveError(not_regular)
    return os.fdopen(fd, "rb"), info.st_size


class _HashingReader:
    """A read-only file object that hashes and counts what is read through it."""

    def __init__(self, source):
        self.source, self.sha, self.count = source, hashlib.sha256(), 0

    def read(self, size):
        data = self.source.read(size)
        self.sha.update(data)
        self.count += len(data)
        return data


def _nesting(text):
    """The deepest nesting of lists and objects in the JSON ``text`` (bytes), strings skipped.

    Counted with array operations before the text is parsed, so that a
    crafted file never drives the parser into a RecursionError.
    """
    raw = np.frombuffer(text.replace(b"\\\\", b"").replace(b'\\"', b""), dtype=np.uint8)
    outside = np.cumsum(raw == ord('"')) % 2 == 0
    opens, closes = np.isin(raw, (ord("["), ord("{"))), np.isin(raw, (ord("]"), ord("}")))
    step = (opens.astype(np.int64) - closes) * outside
    return int(np.cumsum(step).max(initial=0))


def _array_dtype(text):
    """The dtype a table entry names: plain numbers or strings only (no objects, records or sub-arrays)."""
    dtype = np.dtype(text)
    if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None or dtype.itemsize == 0:
        raise ValueError(f"dtype {text!r} cannot be read without pickle")
    if dtype.str != text:
        raise ValueError(f"dtype {text!r} is not in NumPy's form {dtype.str!r}")
    return dtype


class ArchiveReader:
    """An archive open for reading: its checked metadata first, its arrays on request.

    ``what`` names the kind of file in messages.  Opening reads and checks
    the zip directory and ``model.json`` only, so a caller can check the
    metadata (and the shapes it declares) before any array is read::

        with ArchiveReader(path, "model file") as archive:
            archive.expect(FORMAT, VERSION)
            ...  # archive.meta
            arrays = archive.arrays()

    Anything malformed raises :class:`ArchiveError` (a ValueError); a
    missing or unreadable path raises the OSError of ``os.stat``.
    """

    def __init__(self, path, what):
        self.where, self.what = os.fspath(path), what
        self._file, size = _open_regular(self.where, what)
        try:
            try:
                self._zip = zipfile.ZipFile(self._file)
            except (ValueError, *_DAMAGE) as exc:
                raise ArchiveError(
                    f"{self.where} is not a {what} (not a zip archive: {cut(str(exc))})."
                ) from None
            with self._damage_is_an_error():
                self._members = self._check_directory(expansion_limit(size))
                self.meta = self._read_meta()
        except BaseException:
            self._file.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        self._zip.close()
        self._file.close()

    def _error(self, problem):
        return ArchiveError(f"{self.where}: {problem}")

    @contextlib.contextmanager
    def _damage_is_an_error(self):
        """Turn what the zip, zlib and .npy readers raise on a malformed file into an ArchiveError."""
        try:
            yield
        except ArchiveError:
            raise
        except (ValueError, *_DAMAGE) as exc:
            raise ArchiveError(
                f"{self.where} is not a readable {self.what} ({type(exc).__name__}: {cut(str(exc))}); "
                "the file is damaged, truncated or of another kind."
            ) from None

    def _check_directory(self, limit):
        """``{name: ZipInfo}`` of the members, after the checks that need no decompression."""
        infos = self._zip.infolist()
        names = [info.filename for info in infos]
        if len(names) > MAX_MEMBERS or len(set(names)) != len(names):
            raise self._error("the zip directory has duplicated or too many members; the file was modified.")
        if META not in names:
            raise ArchiveError(f"{self.where} is not a {self.what} (no {META} inside).")
        for info in infos:
            if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise self._error(f"member {info.filename!r} is encrypted or compressed as never written.")
        total = sum(info.file_size for info in infos)
        if total > limit:
            raise self._error(
                f"its members would decompress to {total} bytes, more than the {limit} allowed for a file "
                f"of this size (MAX_EXPANSION={MAX_EXPANSION} times its size, at least {MIN_LIMIT_BYTES}); "
                "it is damaged or a zip bomb. If you trust it, raise dask_streamsvm.engine.store.archive."
                "MAX_EXPANSION."
            )
        return dict(zip(names, infos, strict=True))

    def _read_meta(self):
        too_large = f"{META} is larger than {META_MAX_BYTES} bytes; the file is damaged or modified."
        if self._members[META].file_size > META_MAX_BYTES:
            raise self._error(too_large)
        with self._zip.open(self._members[META]) as member:
            text = member.read(META_MAX_BYTES + 1)  # the zip's sizes may lie: never read more
        if len(text) > META_MAX_BYTES:
            raise self._error(too_large)
        if _nesting(text) > MAX_DEPTH:
            raise self._error(f"{META} nests deeper than {MAX_DEPTH} levels; the file was modified.")
        try:
            meta = json.loads(text.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise self._error(f"{META} is not valid JSON ({cut(str(exc))}); the file is damaged.") from None
        if not isinstance(meta, dict):
            raise ArchiveError(f"{self.where} is not a {self.what} ({META} is not a JSON object).")
        return meta

    def expect(self, fmt, version):
        """Check that the file is format ``fmt`` at ``version`` and has a valid array table."""
        meta = self.meta
        if meta.get("format") != fmt:
            raise ArchiveError(f"{self.where} is not a {self.what} (format is not {fmt!r}).")
        if meta.get("version") != version:
            raise ArchiveError(
                f"{self.where} has format version {short(meta.get('version'))}; this dask_streamsvm "
                f"reads version {version}. Load it with the library version that wrote it "
                f"({short(meta.get('library_version'))}) or start again."
            )
        self._check_table(meta.get("arrays"))

    def _check_table(self, table):
        """The ``arrays`` table: a dtype, shape and SHA-256 per array member, and no other member."""
        if not isinstance(table, dict):
            raise self._error(f"{META} lacks its 'arrays' table.")
        for key, info in table.items():
            shape = info.get("shape") if isinstance(info, dict) else None
            if not (
                isinstance(shape, list)
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
                and isinstance(info.get("dtype"), str)
                and isinstance(info.get("sha256"), str)
            ):
                raise self._error(f"the entry of array {key!r} in {META} is not a dtype, shape and sha256.")
            try:
                _array_dtype(info["dtype"])
            except (TypeError, ValueError) as exc:
                raise self._error(f"array {key!r}: {cut(str(exc))}.") from None
            if f"arrays/{key}.npy" not in self._members:
                raise self._error(f"array {key!r} is missing from the file.")
        extra = set(self._members) - {META} - {f"arrays/{key}.npy" for key in table}
        if extra:
            raise self._error(f"unexpected members {sorted(extra)[:5]}; the file was modified.")

    def arrays(self):
        """``{name: array}``, each checked against its entry in the table (call :meth:`expect` first)."""
        with self._damage_is_an_error():
            return {key: self._read_array(key, info) for key, info in self.meta["arrays"].items()}

    def _read_array(self, key, info):
        """One array, its header checked against the table and its member's size before its data are read."""
        dtype = _array_dtype(info["dtype"])  # checked by expect()
        shape = tuple(info["shape"])
        nbytes = math.prod(shape) * dtype.itemsize
        member = self._members[f"arrays/{key}.npy"]
        if not nbytes <= member.file_size <= nbytes + 65_536:
            raise self._error(
                f"array {key!r} takes {member.file_size} bytes, not the {nbytes} its shape needs."
            )
        with self._zip.open(member) as raw:
            source = _HashingReader(raw)
            header = self._read_header(key, source)
            if header != (shape, dtype.str) or source.count + nbytes != member.file_size:
                raise self._error(f"array {key!r} has dtype/shape other than recorded.")
            array = np.empty(shape, dtype=dtype)
            flat, filled = array.reshape(-1).view(np.uint8), 0
            while filled < nbytes:
                data = source.read(min(_CHUNK, nbytes - filled))
                if not data:
                    raise self._error(f"array {key!r} is truncated.")
                flat[filled : filled + len(data)] = np.frombuffer(data, dtype=np.uint8)
                filled += len(data)
            if source.read(1) or source.count != member.file_size:
                raise self._error(f"array {key!r} is truncated or has trailing bytes.")
        if source.sha.hexdigest() != info["sha256"]:
            raise self._error(f"array {key!r} does not match its checksum; the file was modified or damaged.")
        return array

    def _read_header(self, key, source):
        """``(shape, dtype.str)`` of a ``.npy`` header (C order; versions 1 and 2)."""
        version = np.lib.format.read_magic(source)
        if version not in ((1, 0), (2, 0)):
            raise self._error(f"array {key!r} has .npy format version {version}, never written.")
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        shape, fortran_order, dtype = read[version](source)
        if fortran_order:
            raise self._error(f"array {key!r} is in Fortran order, never written.")
        if dtype.hasobject:
            raise self._error(f"array {key!r} cannot be read without pickle (dtype {dtype.str}).")
        return tuple(shape), dtype.str


def read_archive(path, fmt, version, what):
    """``(meta, arrays)`` of an archive written by :func:`write_archive`, every array checked.

    ``fmt`` and ``version`` are the expected format name and version; ``what``
    names the kind of file in messages.  Anything else raises ValueError
    (an :class:`ArchiveError`); a missing file raises FileNotFoundError.
    """
    with ArchiveReader(path, what) as archive:
        archive.expect(fmt, version)
        return archive.meta, archive.arrays()
