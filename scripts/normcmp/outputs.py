"""How the scripts and the notebook package write files, with the binary's
promises (docs/outputs.md, "The Python scripts and the notebook package"):

- Nothing of the user's is deleted or replaced. An existing target is
  replaced only when a manifest the scripts wrote with it lists it: the
  file MANIFEST in the target's folder (for a file), or inside the target
  (for a folder of shards), naming each file with its inode, size and
  modification time. A name proves nothing. A target that is a link, a
  FIFO, a device or anything but a regular file (a folder for a folder
  target), or one of the run's inputs, is refused.
- One writer per target: the lock file `.<name>.lock` beside it, in the
  binary's format (src/util/outlock.c), taken without waiting.
- Each output is built in a staging folder `.<name>.tmp.<token>` beside it
  (mkdir: exclusive; the token is 12 random letters and digits), each file
  created exclusively (O_EXCL, O_NOFOLLOW) and flushed (fsync) before the
  rename that publishes it, then the folder flushed. What a killed writer
  left is removed by the next writer of the same target, proven by the
  token and the staging folder's inode its lock file recorded.

A Writer holds the outputs of one run and commits them together:

    with Writer(TOOL, inputs=[...]) as w:
        out = w.file("out/x.json", "-o")      # checked and locked now
        with create(out.staged) as f:         # exclusive, fsync'd on close
            f.write(b"...")
        w.commit()                            # renamed into place, manifest, fsyncs
"""
import contextlib
import ctypes
import errno
import fcntl
import json
import os
import secrets
import signal
import stat
import string
import threading
import time

from .common import Fail

HELP = """OUTPUTS: nothing of yours is replaced or deleted. An existing output name
is replaced only when the manifest .normcmp-scripts.json that the scripts
write with their files (in the output's folder, or inside a folder of
shards) lists it as it is now (inode, size, modification time): a file or
folder of yours, a model's checkpoint folder, a dump of an older version,
a link, a FIFO, a device or one of the run's inputs is refused (exit 2) and
left as it is. One run per output at a time (the lock .NAME.lock beside it,
as normcmp takes it); files are built in a staging folder .NAME.tmp.TOKEN
beside the output, flushed to disk and renamed into place, so an
interrupted run leaves the earlier output whole (docs/outputs.md)."""

MANIFEST = ".normcmp-scripts.json"
FORMAT = "normcmp scripts manifest"
VERSION = 1
MANIFEST_MAX = 16 << 20
NAME_MAX = 255
TOKEN_LEN = 12
LOCK_TEXT_MAX = 4096
_ALNUM = string.ascii_letters + string.digits

# ------------------------------------------------------------------ small helpers


def new_token():
    return "".join(secrets.choice(_ALNUM) for _ in range(TOKEN_LEN))


def _cut(name, nbytes):
    """name cut to at most nbytes bytes (file names are bytes to the kernel)."""
    b = os.fsencode(name)
    return name if len(b) <= nbytes else os.fsdecode(b[:nbytes])


def lock_name(base):
    return "." + _cut(base, NAME_MAX - 6) + ".lock"


def tmp_name(base, token):
    return "." + _cut(base, NAME_MAX - 6 - TOKEN_LEN) + ".tmp." + token


def what_is(mode):
    """'a FIFO', 'a folder', ... for a file mode."""
    for test, word in ((stat.S_ISREG, "a file"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "not a regular file"


def identity(st):
    return {"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _same(entry, st):
    return (stat.S_ISREG(st.st_mode) and entry.get("ino") == st.st_ino
            and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns)


def lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def sync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def create(path, text=False):
    """A new file at path (O_EXCL, never through a link, mode 0666 less the
    umask), flushed to disk when the block ends without an error."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    f = os.fdopen(fd, "w", encoding="utf-8") if text else os.fdopen(fd, "wb", buffering=0)
    with f:
        yield f
        f.flush()
        os.fsync(f.fileno())


def read_input(path, limit, what):
    """The bytes of an input file: opened without blocking (a FIFO does not
    hang the open), a regular file (also through a link), at most limit
    bytes; else a one-line Fail naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise Fail(f"{path}: cannot read: {e.strerror or e} (expected {what})")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Fail(f"{path}: {what_is(st.st_mode)}, expected {what} (a regular file)")
        if st.st_size > limit:
            raise Fail(f"{path}: {st.st_size} bytes, more than the {limit} a file of {what} "
                       "may have")
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise Fail(f"{path}: cannot read: {e.strerror or e}", 1)
    if len(data) > limit:
        raise Fail(f"{path}: more than the {limit} bytes a file of {what} may have")
    return data


def _no_dups(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def parse_json(data, path):
    """Strict JSON of bytes: UTF-8, no duplicate keys, no NaN or Infinity,
    nesting Python can hold; else a one-line Fail naming the file."""
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_dups,
                          parse_constant=_no_constant)
    except UnicodeDecodeError as e:
        raise Fail(f"{path}: not UTF-8 (byte {e.start})")
    except RecursionError:
        raise Fail(f"{path}: nested too deeply")
    except ValueError as e:
        raise Fail(f"{path}: not JSON ({e})")


def read_json(path, limit, what):
    return parse_json(read_input(path, limit, what), path)


def _renameat2(src, dst, flags):
    """renameat2(2) through libc; False when the kernel, the file system or
    libc cannot (the caller falls back)."""
    fn = getattr(_LIBC, "renameat2", None) if _LIBC else None
    if fn is None:
        return False
    if fn(-100, os.fsencode(src), -100, os.fsencode(dst), flags) == 0:  # AT_FDCWD
        return True
    e = ctypes.get_errno()
    if e in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(e, os.strerror(e), dst)


try:
    _LIBC = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - no libc to load
    _LIBC = None
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2


@contextlib.contextmanager
def signals_deferred():
    """SIGINT, SIGTERM and SIGHUP wait until the block ends (the commit's
    renames run to their end); then the first one is delivered."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.getsignal(s) for s in sigs}
    for s in sigs:
        signal.signal(s, lambda n, _f: got.append(n))
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            signal.raise_signal(got[0])


# ------------------------------------------------------------------ manifests


def read_manifest(folder):
    """The manifest in folder: {"files": [{"name", "ino", "size", "mtime_ns",
    ...}], ...}, or None when there is none. One that is not ours (not a
    regular file, not JSON of our format, a newer version) is a Fail: it is
    neither used nor replaced."""
    path = os.path.join(folder, MANIFEST)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise Fail(f"{path}: cannot read the scripts' manifest: {e.strerror or e} (move it away)")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        data = f.read(MANIFEST_MAX + 1) if stat.S_ISREG(st.st_mode) else b""
    try:
        m = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        m = None
    if (not stat.S_ISREG(st.st_mode) or len(data) > MANIFEST_MAX or not isinstance(m, dict)
            or m.get("format") != FORMAT or not isinstance(m.get("version"), int)
            or not isinstance(m.get("files"), list)):
        raise Fail(f"{path}: exists and is not a manifest of normcmp's scripts (format "
                   f"{FORMAT!r}); the scripts neither use nor replace it: move it away")
    if m["version"] > VERSION:
        raise Fail(f"{path}: manifest version {m['version']}, written by a newer normcmp (this "
                   f"one reads version {VERSION})")
    m["files"] = [e for e in m["files"] if isinstance(e, dict) and isinstance(e.get("name"), str)]
    return m


def owned(manifest, name, st):
    """Whether the manifest lists name with the identity st has."""
    return manifest is not None and st is not None and any(
        e["name"] == name and _same(e, st) for e in manifest["files"])


def manifest_text(entries):
    m = {"format": FORMAT, "version": VERSION,
         "about": "files normcmp's scripts wrote here (docs/outputs.md); they replace or "
                  "remove only these, and only while inode, size and mtime_ns still match",
         "files": entries}
    return (json.dumps(m, indent=1, ensure_ascii=True) + "\n").encode("ascii")


def write_manifest(folder, entries, tmpdir):
    """Replaces folder's manifest by one listing entries: written in tmpdir
    (a staging folder of ours on the same file system, which a kill leaves
    for the next writer to remove), flushed, renamed into place (the caller
    flushes the folder)."""
    tmp = os.path.join(tmpdir, MANIFEST)
    with create(tmp) as f:
        f.write(manifest_text(entries))
    if tmpdir != folder:
        os.replace(tmp, os.path.join(folder, MANIFEST))


def entry(name, st, tool):
    e = {"name": name}
    e.update(identity(st))
    e.update({"tool": tool, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return e


@contextlib.contextmanager
def folder_locked(folder):
    """An exclusive flock on the folder itself, for a manifest's
    read-modify-write (held for milliseconds; waits)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ------------------------------------------------------------------ locks


def parse_lock(text):
    """(ours, pid, token, stage (dev, ino) or None, [(token, stage)]) of a
    lock file's bytes, as src/util/outlock.c reads them."""
    if not text:
        return True, 0, None, None, []
    t = text.decode("ascii", "replace")
    if t[:-1].isdigit() and t.endswith("\n"):
        return True, int(t[:-1]), None, None, []
    if not t.startswith("normcmp lock\n") or (len(text) >= LOCK_TEXT_MAX and "\nend\n" not in t):
        return False, 0, None, None, []
    pid, tok, stage, stale = 0, None, None, []

    def tok_ok(w):
        return len(w) == TOKEN_LEN and all(c in _ALNUM for c in w)

    def devino(words):
        return (int(words[0]), int(words[1])) if len(words) == 2 and all(
            w.isdigit() for w in words) else None
    for line in t.split("\n")[1:]:
        w = line.split(" ")
        if line == "end":
            break
        if w[0] == "pid" and len(w) == 2 and w[1].isdigit():
            pid = int(w[1])
        elif w[0] == "token" and len(w) == 2 and tok_ok(w[1]):
            tok = w[1]
        elif w[0] == "stage":
            stage = devino(w[1:])
        elif w[0] == "stale" and len(w) >= 2 and tok_ok(w[1]) and len(stale) < 8:
            stale.append((w[1], devino(w[2:])))
    return True, pid, tok, stage, stale


class Lock:
    """The lock file `.<base>.lock` beside a target, as the binary takes it."""

    def __init__(self, folder, base, label):
        self.path = os.path.join(folder, lock_name(base))
        self.label, self.fd, self.token, self.stage = label, -1, None, None

    def take(self):
        """Takes the lock without waiting; returns the killed holders'
        records ([(token, stage)]) for the caller to clean up."""
        for _ in range(1000):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
                             | os.O_NONBLOCK, 0o666)
            except OSError as e:
                raise Fail(f"{self.label}: cannot create lock file {self.path}: "
                           f"{e.strerror or e}", 1 if e.errno in (errno.ENOSPC, errno.EIO) else 2)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                raise Fail(f"{self.label}: lock file {self.path} is {what_is(st.st_mode)}, "
                           "expected a regular file (move it away or choose another output)")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = parse_lock(os.pread(fd, LOCK_TEXT_MAX, 0))[1]
                os.close(fd)
                who = f"process {pid} holds {self.path}" if pid else f"it holds {self.path}"
                raise Fail(f"{self.label}: in use by another normcmp run ({who}); wait for it "
                           "to finish or choose another output", 1)
            now = lstat(self.path)
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                break
            os.close(fd)  # the holder before us removed it after we opened it
        else:
            raise Fail(f"{self.label}: cannot take lock {self.path} (it keeps changing)", 1)
        ours, _, tok, stage, stale = parse_lock(os.pread(fd, LOCK_TEXT_MAX, 0))
        if not ours:
            os.close(fd)
            raise Fail(f"{self.label}: {self.path} exists and is not a normcmp lock file (move "
                       "it away or choose another output)")
        self.fd, self.token = fd, new_token()
        held = ([(tok, stage)] if tok else []) + stale
        self.write(held)
        return held

    def write(self, stale=()):
        s = f"normcmp lock\npid {os.getpid()}\ntoken {self.token}\n"
        if self.stage:
            s += f"stage {self.stage[0]} {self.stage[1]}\n"
        for tok, st in stale:
            s += f"stale {tok}" + (f" {st[0]} {st[1]}" if st else "") + "\n"
        b = (s + "end\n").encode("ascii")
        with contextlib.suppress(OSError):  # a record for the next run only
            os.pwrite(self.fd, b, 0)
            os.ftruncate(self.fd, len(b))

    def release(self):
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.unlink(self.path)  # while held: see take()
            os.close(self.fd)
            self.fd = -1


def remove_flat(path):
    """A staging folder of ours: its regular files and links, then itself
    (a sub-folder is never removed, and keeps the folder)."""
    with contextlib.suppress(OSError):
        for e in os.scandir(path):
            if not e.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(e.path)
        os.rmdir(path)


def empty_old(old, new):
    """The old folder a replacement left under the staging name: the files
    its manifest lists (same identity) are removed; anything else (which
    appeared during the swap) is moved into the new folder where its name
    is free; then the folder goes, unless something stays in it. Returns
    the path when something stayed, else None."""
    try:
        m = read_manifest(old)
    except Fail:
        m = None
    with contextlib.suppress(OSError):
        for e in os.scandir(old):
            st = e.stat(follow_symlinks=False)
            if e.name == MANIFEST or owned(m, e.name, st):
                os.unlink(e.path)
            elif new and lstat(os.path.join(new, e.name)) is None:
                os.rename(e.path, os.path.join(new, e.name))
    try:
        os.rmdir(old)
        return None
    except OSError:
        return old


def clean_stale(folder, base, target, held):
    """Removes what killed writers of folder/base left: their staging
    folders (the recorded inode, or none recorded yet: killed right after
    mkdir), or, when the target folder now has the recorded inode, the old
    folder of a replacement they had not finished emptying."""
    me = os.geteuid()
    for tok, stage in held:
        p = os.path.join(folder, tmp_name(base, tok))
        st = lstat(p)
        if st is None or st.st_uid != me:
            continue
        if stat.S_ISREG(st.st_mode):
            with contextlib.suppress(OSError):
                os.unlink(p)
        elif stat.S_ISDIR(st.st_mode):
            tst = lstat(target)
            if stage is None or (st.st_dev, st.st_ino) == stage:
                remove_flat(p)
            elif tst is not None and (tst.st_dev, tst.st_ino) == stage:
                empty_old(p, target)


# ------------------------------------------------------------------ outputs


class Output:
    """One target of a Writer: a file or a folder, its lock and staging
    folder. A file's content goes to .staged; a folder's files into .stage."""

    def __init__(self, writer, path, is_folder, label):
        self.writer, self.label, self.is_folder = writer, label, is_folder
        self.shown = path
        self.path = os.path.abspath(path.rstrip("/") or path)
        self.folder, self.base = os.path.split(self.path)
        self.lock = Lock(self.folder, self.base, f"{label}: {path}")
        self.stage = self.staged = None
        self.scratch = []

    def fail(self, msg, code=2):
        raise Fail(f"{self.label}: {self.shown}: {msg}", code)

    def check(self):
        """The target may be written: absent, or ours to replace, and no
        input of the run. Returns its lstat (or None)."""
        st = lstat(self.path)
        # a manifest beside a file output that is not ours is refused now,
        # not when the outputs are committed
        m = read_manifest(self.folder) if not self.is_folder and os.path.isdir(self.folder) \
            else None
        for p, ist in self.writer.inputs:
            if st is not None and (st.st_dev, st.st_ino) == (ist.st_dev, ist.st_ino):
                self.fail(f"is an input of this run ({p}) and would be replaced by its output; "
                          "choose another output")
            if self.is_folder and os.path.realpath(p).startswith(os.path.realpath(self.path) + "/"):
                self.fail(f"holds {p}, an input of this run; choose another output")
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            self.fail("is a symbolic link; the scripts neither write through a link nor replace "
                      "it: give the path it points to, or another name")
        if not self.is_folder:
            if not stat.S_ISREG(st.st_mode):
                self.fail(f"is {what_is(st.st_mode)}, not a regular file: the scripts write and "
                          "replace regular files only")
            if not owned(m, self.base, st):
                self.fail("exists and was not written by normcmp's scripts (the manifest "
                          f"{os.path.join(self.folder, MANIFEST)} does not list it as it is now); "
                          "it is left as it is: remove it yourself or choose another name")
            return st
        return self.check_folder(st)

    def check_folder(self, st):
        if not stat.S_ISDIR(st.st_mode):
            self.fail(f"is {what_is(st.st_mode)} (a folder of shards was asked for: a name "
                      "ending in .safetensors writes one file)")
        pst = os.stat(self.folder)
        if pst.st_dev != st.st_dev:
            self.fail("is a mount point; the scripts replace a folder by renaming: choose a "
                      "folder inside it")
        try:
            here = os.path.realpath(os.getcwd())
        except OSError:  # the current folder was removed
            here = ""
        real = os.path.realpath(self.path)
        if here == real or here.startswith(real + "/"):
            self.fail("is the current folder or holds it; run from elsewhere or choose another "
                      "folder")
        m = read_manifest(self.path)
        for e in os.scandir(self.path):
            if e.name == MANIFEST:
                continue
            est = e.stat(follow_symlinks=False)
            if not owned(m, e.name, est):
                self.fail(f"holds {e.name}, which normcmp's scripts did not write (expected a new "
                          "or empty folder, or one the dump script wrote, with the manifest "
                          f"{MANIFEST} listing its files); the folder is left as it is")
        return st

    def make_stage(self):
        self.lock.stage = None
        self.stage = os.path.join(self.folder, tmp_name(self.base, self.lock.token))
        try:
            os.mkdir(self.stage, 0o777)
        except OSError as e:
            self.stage = None
            self.fail(f"cannot create a staging folder in {self.folder}: {e.strerror or e}", 1)
        st = os.lstat(self.stage)
        self.lock.stage = (st.st_dev, st.st_ino)
        self.lock.write()
        self.staged = self.stage if self.is_folder else os.path.join(self.stage, self.base)

    def scratch_path(self, name):
        """A scratch file in the staging folder, removed before the commit."""
        self.scratch.append(name)
        return os.path.join(self.stage, name)

    def publish(self, old):
        """Renames the staged output into place (old: the target's lstat at
        the last check, or None). Returns the old folder to empty, or None."""
        if not self.is_folder:
            if old is not None or not _renameat2(self.staged, self.path, RENAME_NOREPLACE):
                os.rename(self.staged, self.path)
            return None
        stage = self.stage
        if old is None:
            if not _renameat2(stage, self.path, RENAME_NOREPLACE):
                os.rename(stage, self.path)
            self.stage = None  # it is the output now
            return None
        os.chmod(stage, stat.S_IMODE(old.st_mode))  # the folder keeps its permissions
        if _renameat2(stage, self.path, RENAME_EXCHANGE):
            self.stage = None  # the old folder is there now
            return stage
        aside = os.path.join(self.folder, tmp_name(self.base, new_token()))
        os.rename(self.path, aside)
        os.rename(stage, self.path)
        self.stage = None
        return aside

    def close(self):
        if self.stage:
            remove_flat(self.stage)
        self.stage = None
        self.lock.release()


class Writer:
    """The outputs of one run: planned (checked, locked, staged) before the
    work, committed together after it, or all removed on any failure."""

    def __init__(self, tool, inputs=(), log=None):
        self.tool, self.log, self.outs, self.made, self.inputs = tool, log, [], [], []
        for p in inputs:
            with contextlib.suppress(OSError):
                self.inputs.append((p, os.stat(p)))
        self.done = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.abort()
        return False

    def file(self, path, label):
        return self._plan(path, False, label)

    def folder(self, path, label):
        return self._plan(path, True, label)

    def _plan(self, path, is_folder, label):
        if not path or not (path.rstrip("/") or is_folder):
            raise Fail(f"{label}: expected a file name")
        out = Output(self, path, is_folder, label)
        if not out.base or out.base in (".", ".."):
            out.fail("expected a name, not a folder" if not is_folder else "expected a folder name")
        if len(os.fsencode(out.base)) > NAME_MAX:
            out.fail(f"file name longer than {NAME_MAX} bytes")
        if any(o.path == out.path for o in self.outs):
            out.fail("named twice as an output of this run")
        if os.path.isdir(out.folder):
            out.check()
        self._mkdirs(out)
        self.outs.append(out)
        clean_stale(out.folder, out.base, out.path, out.lock.take())
        out.check()
        out.make_stage()
        return out

    def _mkdirs(self, out):
        missing, d = [], out.folder
        while not os.path.lexists(d):
            missing.append(d)
            d = os.path.dirname(d)
        for d in reversed(missing):
            try:
                os.mkdir(d, 0o777)
            except FileExistsError:
                continue
            except OSError as e:
                code = 2 if e.errno in (errno.EACCES, errno.EPERM, errno.ENOTDIR,
                                        errno.ENAMETOOLONG, errno.EROFS) else 1
                out.fail(f"cannot create the folder {d}: {e.strerror or e}", code)
            self.made.append(d)
        if not os.path.isdir(out.folder):
            out.fail(f"cannot create its folder: {d} is {what_is(os.lstat(d).st_mode)}"
                     if not os.path.isdir(d) else f"{out.folder} is not a folder")

    def commit(self):
        """Every output into place: checked again, the manifests written
        (before the renames, so that a kill leaves every file of ours
        listed), the renames with signals deferred, the folders flushed."""
        try:
            for o in self.outs:
                for name in o.scratch:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(o.stage, name))
            olds = [o.check() for o in self.outs]
            for o in self.outs:
                if o.is_folder:
                    self._folder_manifest(o)
                else:
                    os.stat(o.staged)  # written: missing is a bug, not a user's error
            with signals_deferred():
                self._file_manifests()
                left = [o.publish(old) for o, old in zip(self.outs, olds)]
                for o, old in zip(self.outs, left):
                    if old:
                        stayed = empty_old(old, o.path)
                        if stayed and self.log:
                            self.log.warn(f"{stayed}: files appeared in {o.shown} while it was "
                                          "replaced; they are kept here")
                for d in sorted({o.folder for o in self.outs} | {os.path.dirname(m) for m in
                                                                  self.made}):
                    sync_dir(d)
                self.done = True  # before a held-back signal is delivered
        except OSError as e:
            raise Fail(f"cannot write {e.filename or 'the outputs'}: {e.strerror or e}", 1)
        self.abort()  # the staging folders (now empty) and the locks

    def _folder_manifest(self, o):
        entries = []
        for e in sorted(os.scandir(o.stage), key=lambda e: e.name):
            st = e.stat(follow_symlinks=False)
            if e.name != MANIFEST and stat.S_ISREG(st.st_mode):
                entries.append(entry(e.name, st, self.tool))
        write_manifest(o.stage, entries, o.stage)
        sync_dir(o.stage)

    def _file_manifests(self):
        by_folder = {}
        for o in self.outs:
            if not o.is_folder:
                by_folder.setdefault(o.folder, []).append(o)
        for folder, outs in by_folder.items():
            with folder_locked(folder):
                m = read_manifest(folder)
                keep = []
                for e in (m["files"] if m else []):
                    st = lstat(os.path.join(folder, e["name"]))
                    if st is not None and _same(e, st):
                        keep.append(e)  # still ours (the old files until the renames)
                keep += [entry(o.base, os.stat(o.staged), self.tool) for o in outs]
                write_manifest(folder, keep, outs[0].stage)

    def abort(self):
        """Removes the staging folders, releases the locks and, on failure,
        the folders this writer created (when empty)."""
        for o in reversed(self.outs):
            o.close()
        if not self.done:
            for d in reversed(self.made):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
        self.outs = []


def check_target(path, label, inputs=(), is_folder=False):
    """Writer.file's (or .folder's) checks alone: no lock, nothing made."""
    Output(Writer("", inputs), path, is_folder, label).check()


def adopt(src, out):
    """Makes the finished file src (of ours, flushed) out's staged content:
    renamed on one file system, else copied (exclusively, flushed)."""
    try:
        os.rename(src, out.staged)
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    with open(src, "rb") as fin, create(out.staged) as fout:
        while True:
            chunk = fin.read(1 << 20)
            if not chunk:
                break
            fout.write(chunk)


def forget(folder, names):
    """Removes names from folder's manifest (after the files went), and the
    manifest itself when it lists nothing more."""
    with folder_locked(folder):
        m = read_manifest(folder)
        if m is None:
            return
        keep = [e for e in m["files"] if e["name"] not in names
                and (lambda st: st is not None and _same(e, st))(lstat(os.path.join(folder,
                                                                                      e["name"])))]
        if keep:
            tmp = os.path.join(folder, tmp_name(MANIFEST, new_token()))
            os.mkdir(tmp)
            try:
                write_manifest(folder, keep, tmp)
            finally:
                remove_flat(tmp)
        else:
            os.unlink(os.path.join(folder, MANIFEST))
        sync_dir(folder)


def remove_owned(folder, name):
    """Removes folder/name if the manifest there lists it as it is (a file
    the scripts wrote); returns whether it did."""
    path = os.path.join(folder, name)
    st = lstat(path)
    if st is None or not owned(read_manifest(folder), name, st):
        return False
    os.unlink(path)
    forget(folder, [name])
    return True
