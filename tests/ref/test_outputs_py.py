"""The Python side's one module for what it writes (scripts/normcmp/outputs.py,
docs/outputs.md "The Python scripts and the notebook package"), on hostile
targets, without PyTorch (issue 24, "Done means"):

- a new file appears whole, with the umask's mode, listed in the folder's
  manifest; a file the manifest lists as it is now is replaced; one it
  does not list (a user's file, a file of ours edited since, any file
  beside a manifest that is not ours) is refused (exit status 2) and kept
  byte for byte;
- a target that is a symbolic link, a FIFO (refused at once, no hang), a
  character device, a folder, or one of the run's inputs (also through a
  link or a hard link) is refused and left as it is;
- folder targets: a Hugging Face checkpoint folder, a home-like folder, a
  folder of ours with a user's file added, the current folder are refused;
  an empty folder is taken (its mode kept); a folder of ours is replaced,
  its files that the new set lacks removed;
- temporaries: staging folders `.NAME.tmp.TOKEN` with 12 random letters and
  digits, new for every writer; files created exclusively (an existing path
  or a link there is refused, never followed); the order of flushes is the
  binary's: the file before the rename that publishes it, the folder after;
- one writer per target (the second fails at once, naming the holder's
  process, also across processes); a writer killed by SIGKILL leaves the
  old file whole, and the next writer removes exactly its staging folder;
  ^C, SIGTERM and SIGHUP remove the staging folder and the lock (exit 130,
  143, 129); a failed run removes the folders it created;
- names: a 256-byte name is refused; a 250-byte one works (lock and staging
  names cut to fit); a target on another file system (tmpfs) works.
"""
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "scripts"))
from normcmp import outputs  # noqa: E402
from normcmp.common import Fail  # noqa: E402

C = Checker("test_outputs_py")
PY = sys.executable or "/usr/bin/python3"


def write(path, data, inputs=(), folder=False, files=None):
    """One Writer run: a file target gets data; a folder target gets files
    {name: bytes}. Returns None, or the Fail's (code, message)."""
    try:
        with outputs.Writer("test", inputs=inputs) as w:
            out = w.folder(path, "-o") if folder else w.file(path, "-o")
            if folder:
                for name, b in (files or {}).items():
                    with outputs.create(os.path.join(out.stage, name)) as f:
                        f.write(b)
            else:
                with outputs.create(out.staged) as f:
                    f.write(data)
            w.commit()
    except Fail as e:
        return e.code, str(e)
    return None


def read(path):
    with open(path, "rb") as f:
        return f.read()


def leftovers(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp." in n or n.endswith(".lock"))


def refused(res, what, *words):
    C.ok(res is not None and res[0] == 2 and all(w in res[1] for w in words)
         and "\n" not in res[1], f"{what}: refused with exit 2 naming {words}: {res}")


def files_and_replacement(d):
    p = os.path.join(d, "r.json")
    C.ok(write(p, b"one") is None and read(p) == b"one", "a new file")
    umask = os.umask(0o22)
    os.umask(umask)
    C.ok(stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~umask, "with the umask's mode")
    m = outputs.read_manifest(d)
    C.ok(m and outputs.owned(m, "r.json", os.stat(p)), "listed in the manifest as it is")
    C.ok(write(p, b"two") is None and read(p) == b"two", "a file of ours is replaced")
    C.ok(not leftovers(d), f"nothing left beside it: {leftovers(d)}")
    user = os.path.join(d, "user.json")
    with open(user, "wb") as f:
        f.write(b"the user's")
    refused(write(user, b"x"), "a user's file", "not written by normcmp's scripts")
    C.ok(read(user) == b"the user's", "the user's file kept byte for byte")
    with open(p, "ab") as f:  # edited in place: no longer what we wrote
        f.write(b" edited")
    refused(write(p, b"three"), "a file of ours edited since", "not written")
    C.ok(read(p) == b"two edited", "the edited file kept")
    # two writers of different files in one folder at once: both listed
    with outputs.Writer("a") as wa, outputs.Writer("b") as wb:
        oa, ob = wa.file(os.path.join(d, "a.json"), "-o"), wb.file(os.path.join(d, "b.json"), "-o")
        for o in (oa, ob):
            with outputs.create(o.staged) as f:
                f.write(b"x")
        wa.commit()
        wb.commit()
    m = outputs.read_manifest(d)
    C.ok(all(outputs.owned(m, n, os.stat(os.path.join(d, n))) for n in ("a.json", "b.json"))
         and not outputs.owned(m, "r.json", os.stat(os.path.join(d, "r.json"))),
         "two writers in one folder: the manifest lists both (not the file edited since)")
    # a manifest that is not ours: neither used nor replaced
    d2 = os.path.join(d, "foreign")
    os.mkdir(d2)
    with open(os.path.join(d2, outputs.MANIFEST), "w") as f:
        f.write('{"format": "something else", "files": []}')
    refused(write(os.path.join(d2, "new.json"), b"x"), "a foreign manifest",
            "not a manifest of normcmp's scripts")
    C.ok(read(os.path.join(d2, outputs.MANIFEST)) == b'{"format": "something else", "files": []}'
         and not os.path.exists(os.path.join(d2, "new.json")), "the foreign manifest kept")
    # a forged entry for a file with another identity does not make it ours
    with open(user, "rb") as f:
        pass
    forged = {"name": "user.json", "ino": os.stat(user).st_ino + 1, "size": 10, "mtime_ns": 1}
    m = outputs.read_manifest(d)
    tmp = os.path.join(d, ".forge")
    os.mkdir(tmp)
    outputs.write_manifest(d, m["files"] + [forged], tmp)
    os.rmdir(tmp)
    refused(write(user, b"x"), "a manifest entry of another identity", "not written")


def hostile_targets(d, dev_ok):
    target = os.path.join(d, "victim.json")
    with open(target, "wb") as f:
        f.write(b"victim")
    link = os.path.join(d, "link.json")
    os.symlink(target, link)
    refused(write(link, b"x"), "a symbolic link", "symbolic link")
    C.ok(os.path.islink(link) and read(target) == b"victim", "the link and its target kept")
    fifo = os.path.join(d, "fifo.json")
    os.mkfifo(fifo)
    t0 = time.monotonic()
    refused(write(fifo, b"x"), "a FIFO", "a FIFO")
    C.ok(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is still a FIFO")
    C.ok(time.monotonic() - t0 < 60, "the FIFO refused without blocking")
    if dev_ok:
        dev = os.path.join(d, "null")
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        refused(write(dev, b"x"), "a character device", "a character device")
        C.ok(stat.S_ISCHR(os.lstat(dev).st_mode), "the device node kept")
    refused(write("/dev/null", b"x"), "/dev/null", "character device")
    C.ok(stat.S_ISCHR(os.lstat("/dev/null").st_mode), "/dev/null kept")
    sub = os.path.join(d, "sub.json")
    os.mkdir(sub)
    refused(write(sub, b"x"), "a folder as a file target", "a folder")
    # inputs: the file itself, through a link, through a hard link
    ours = os.path.join(d, "ours.json")
    write(ours, b"ours")
    refused(write(ours, b"x", inputs=[ours]), "an input", "is an input of this run")
    os.symlink(ours, os.path.join(d, "in-link"))
    refused(write(ours, b"x", inputs=[os.path.join(d, "in-link")]), "an input through a link",
            "is an input")
    os.link(ours, os.path.join(d, "hard"))
    refused(write(os.path.join(d, "hard"), b"x", inputs=[ours]), "an input's hard link",
            "is an input")
    C.ok(read(ours) == b"ours", "the input kept")
    refused(write(os.path.join(d, "n" * 256), b"x"), "a 256-byte name", "longer than 255")
    long = os.path.join(d, "n" * 250)
    C.ok(write(long, b"long") is None and read(long) == b"long" and not leftovers(d),
         "a 250-byte name: written, lock and staging names cut to fit")


def folder_targets(d):
    hf = os.path.join(d, "hf")
    os.makedirs(os.path.join(hf, "sub"))
    for n in ("model.safetensors.index.json", "config.json", "tokenizer.json",
              "model-00001-of-00002.safetensors"):
        with open(os.path.join(hf, n), "w") as f:
            f.write(n)
    before = sorted(os.walk(hf))
    refused(write(hf, None, folder=True, files={"a": b"a"}), "a checkpoint folder",
            "which normcmp's scripts did not write")
    C.ok(sorted(os.walk(hf)) == before, "the checkpoint folder kept, every file")
    home = os.path.join(d, "home")
    os.makedirs(os.path.join(home, ".config"))
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write("x")
    refused(write(home, None, folder=True), "a home-like folder", ".")
    C.ok(os.path.exists(os.path.join(home, ".bashrc")), "the home folder kept")
    empty = os.path.join(d, "empty")
    os.mkdir(empty, 0o750)
    os.chmod(empty, 0o750)
    C.ok(write(empty, None, folder=True, files={"a": b"1", "b": b"2"}) is None
         and sorted(os.listdir(empty)) == [outputs.MANIFEST, "a", "b"]
         and stat.S_IMODE(os.stat(empty).st_mode) == 0o750, "an empty folder taken, its mode kept")
    C.ok(write(empty, None, folder=True, files={"a": b"3"}) is None
         and sorted(os.listdir(empty)) == [outputs.MANIFEST, "a"] and read(os.path.join(empty, "a"))
         == b"3", "a folder of ours replaced: b, which the new set lacks, is gone")
    C.ok(not leftovers(d), f"no staging folder or lock left: {leftovers(d)}")
    with open(os.path.join(empty, "notes.txt"), "w") as f:
        f.write("mine")
    refused(write(empty, None, folder=True, files={"a": b"4"}), "a folder of ours with a note",
            "holds notes.txt")
    C.ok(read(os.path.join(empty, "a")) == b"3", "the folder kept as it was")
    here = os.getcwd()
    os.chdir(empty)
    try:
        refused(write(empty, None, folder=True), "the current folder", "the current folder")
    finally:
        os.chdir(here)


def staging_and_flushes(d):
    p = os.path.join(d, "s.json")
    names = []
    for _ in range(2):
        with outputs.Writer("test") as w:
            out = w.file(p, "-o")
            names.append(os.path.basename(out.stage))
    C.ok(all(re.fullmatch(r"\.s\.json\.tmp\.[A-Za-z0-9]{12}", n) for n in names)
         and names[0] != names[1], f"staging names random per writer: {names}")
    C.ok(not leftovers(d), "a writer that commits nothing leaves nothing")
    trap = os.path.join(d, "trap")
    os.symlink(os.path.join(d, "victim2"), trap)
    try:
        with outputs.create(trap) as f:
            f.write(b"x")
        ok = False
    except FileExistsError:
        ok = True
    C.ok(ok and not os.path.exists(os.path.join(d, "victim2")), "create() never follows a link")
    # the order of flushes and renames (docs/outputs.md "Durability")
    log, real = [], {k: getattr(os, k) for k in ("fsync", "rename", "replace")}

    def fsync(fd):
        log.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real["fsync"](fd)

    def ren(kind):
        return lambda a, b: (log.append((kind, os.path.abspath(b))), real[kind](a, b))[1]
    r2 = outputs._renameat2

    def renameat2(a, b, flags):
        done = r2(a, b, flags)
        if done:
            log.append(("rename", os.path.abspath(b)))
        return done
    os.fsync, os.rename, os.replace = fsync, ren("rename"), ren("replace")
    outputs._renameat2 = renameat2
    try:
        write(p, b"durable")
        write(p, b"again")  # replacing: os.rename
    finally:
        os.fsync, os.rename, os.replace = real["fsync"], real["rename"], real["replace"]
        outputs._renameat2 = r2
    ops = [(k, os.path.basename(x) if os.path.dirname(x) != d else x) for k, x in log]
    staged = [i for i, (k, x) in enumerate(ops) if k == "fsync" and x == "s.json"]
    pub = [i for i, (k, x) in enumerate(log) if k == "rename" and x == p]
    dirsync = [i for i, (k, x) in enumerate(log) if k == "fsync" and x == d]
    C.ok(len(staged) == 2 and len(pub) == 2 and len(dirsync) == 2
         and all(staged[k] < pub[k] < dirsync[k] for k in range(2))
         and staged[1] > dirsync[0], f"fsync(file) < rename into place < fsync(folder), for a new "
         f"file and a replaced one: {log}")
    C.ok(read(p) == b"again", "the replaced file")


HOLD = r'''
import os, sys, time
sys.path.insert(0, sys.argv[1])
from normcmp import common, outputs
def main():
    with outputs.Writer("test") as w:
        out = w.file(sys.argv[2], "-o")
        with outputs.create(out.staged) as f:
            f.write(b"half")
        print(out.stage, flush=True)
        time.sleep(600)
        w.commit()
common.run_main(main, "hold")
'''


def held(path):
    p = subprocess.Popen([PY, "-c", HOLD, os.path.join(TOP, "scripts"), path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stage = p.stdout.readline().strip()
    return p, stage


def processes(d):
    p = os.path.join(d, "busy.json")
    write(p, b"old")
    child, stage = held(p)
    C.ok(os.path.isdir(stage), f"the holder staged its file ({stage})")
    res = write(p, b"second")
    C.ok(res is not None and res[0] == 1 and f"in use by another normcmp run (process {child.pid}"
         in res[1], f"a second writer fails at once, naming the holder: {res}")
    child.kill()
    child.wait()
    C.ok(read(p) == b"old" and os.path.isdir(stage), "SIGKILL: the old file whole, the stage left")
    C.ok(write(p, b"next") is None and read(p) == b"next" and not os.path.exists(stage)
         and not leftovers(d), f"the next writer removed the killed one's stage: {leftovers(d)}")
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        child, stage = held(p)
        child.send_signal(sig)
        _, err = child.communicate(timeout=120)
        C.ok(child.returncode == code and read(p) == b"next" and not leftovers(d),
             f"{signal.Signals(sig).name}: exit {child.returncode} (expected {code}), the file "
             f"whole, left {leftovers(d)}, {err.strip()[-200:]}")
    # a failed writer removes the folders it made
    deep = os.path.join(d, "new1", "new2", "x.json")
    with outputs.Writer("test") as w:
        w.file(deep, "-o")
    C.ok(not os.path.exists(os.path.join(d, "new1")), "a failed writer removes the folders it made")
    # a user's lock-named file that is not a lock is refused, not overwritten
    with open(os.path.join(d, ".mine.json.lock"), "w") as f:
        f.write("my notes")
    refused(write(os.path.join(d, "mine.json"), b"x"), "a foreign lock file", "not a normcmp lock")
    C.ok(read(os.path.join(d, ".mine.json.lock")) == b"my notes", "the foreign lock file kept")


def main():
    with tempfile.TemporaryDirectory() as d:
        files_and_replacement(d)
    with tempfile.TemporaryDirectory() as d:
        try:
            os.mknod(os.path.join(d, "probe"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
            dev_ok = True
        except OSError:
            dev_ok = False  # not root: /dev/null is tried below all the same
        hostile_targets(d, dev_ok)
    with tempfile.TemporaryDirectory() as d:
        folder_targets(d)
    with tempfile.TemporaryDirectory() as d:
        staging_and_flushes(d)
    with tempfile.TemporaryDirectory() as d:
        processes(d)
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
            p = os.path.join(d, "tmpfs.json")
            C.ok(write(p, b"x") is None and read(p) == b"x" and not leftovers(d),
                 "a target on another file system (tmpfs)")
    C.done()


if __name__ == "__main__":
    main()
