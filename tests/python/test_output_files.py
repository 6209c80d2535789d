"""Output files that cannot hurt (issue 19, item 4): every file the CLI writes goes to a new
hidden temporary `.NAME.XXXXXX.tmp` made with O_EXCL next to the target and renamed into place
when complete (cli/output_file.hpp). A planted symlink or a user's own `NAME.tmp` is never
written through or consumed; SIGINT and SIGTERM, a full disk, a directory or a missing folder
leave no temporary and no partial file; the file gets the permissions of a new file; the format
follows the extension or is refused before the work (docs/cli.md#output-files).

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_output_files.py
"""
import os
import resource
import signal
import stat
import subprocess
import time

import pytest

FF = "3,8,8,2"  # small: P = 3 * 8 * 8 * 2 + biases, enough for files of a few KB
BIG = "5,64,64,64,2"  # dPhi as .mtx: about 30 MB of text, written for a second or more

# Each writer: the command and the name it writes (relative to its working folder).
WRITERS = {
    "lift": (["lift", "--ff", FF], "phi.txt"),
    "jacobian-npz": (["jacobian", "--ff", FF], "J.npz"),
    "jacobian-mtx": (["jacobian", "--ff", FF], "J.mtx"),
    "paths": (["paths", "--ff", FF], "paths.txt"),
    "convert": (["convert", "--ff", FF], "net.json"),
    "bench": (["bench", "--grid", "3,2,1", "--reps", "1"], "bench.csv"),
}


def writer(name, output):
    args, _ = WRITERS[name]
    if name == "bench":
        return [*args, "--csv", output]
    return [*args, "-o", output]


def expected_bytes(run_cli, tmp_path, name):
    """What the writer writes into a fresh folder (the reference, made without any trap)."""
    ref = tmp_path / f"ref-{name}"
    ref.mkdir()
    target = WRITERS[name][1]
    run_cli(*writer(name, target), cwd=ref, check=True)
    return (ref / target).read_bytes()


def same_output(name, got, want):
    if name == "bench":  # timings differ from run to run: compare the columns that do not
        cut = [line.split(",")[:9] for line in got.decode().splitlines()]
        return cut == [line.split(",")[:9] for line in want.decode().splitlines()]
    return got == want


@pytest.mark.parametrize("name", WRITERS)
def test_planted_symlinks_are_not_followed(run_cli, tmp_path, name):
    want = expected_bytes(run_cli, tmp_path, name)
    work = tmp_path / "work"
    work.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = WRITERS[name][1]
    # The old fixed temporary name, and names in the new pattern (which mkstemp never reuses).
    traps = [f"{target}.tmp", f".{target}.tmp", f".{target}.XXXXXX.tmp", f".{target}.AAAAAA.tmp"]
    for trap in traps:
        os.symlink(victim, work / trap)
    run_cli(*writer(name, target), cwd=work, check=True)
    assert victim.read_text() == "precious\n"
    assert same_output(name, (work / target).read_bytes(), want)
    assert not (work / target).is_symlink()
    for trap in traps:
        assert os.readlink(work / trap) == str(victim)
    assert sorted(p.name for p in work.iterdir()) == sorted([target, *traps])


@pytest.mark.parametrize("name", WRITERS)
def test_a_users_own_tmp_file_survives(run_cli, tmp_path, name):
    target = WRITERS[name][1]
    mine = tmp_path / f"{target}.tmp"
    mine.write_text("my notes\n")
    run_cli(*writer(name, target), cwd=tmp_path, check=True)
    assert mine.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target, mine.name])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_write_leaves_no_temporary(cli_path, tmp_path, sig):
    # The signal's default action, as from an interactive shell (a background job of a script,
    # as CI may run this suite, starts with SIGINT ignored, and pathlift leaves it so).
    proc, seen = signal_during_the_write(cli_path, tmp_path, sig, signal.SIG_DFL)
    assert all(n.startswith(".J.mtx.") and n.endswith(".tmp") for n in seen), seen
    assert proc.returncode == -sig  # killed by the signal, as without the cleanup
    assert list(tmp_path.iterdir()) == []


def test_an_ignored_signal_stays_ignored(cli_path, tmp_path):
    # nohup and background jobs ignore SIGINT: the handler is not installed over SIG_IGN.
    proc, _ = signal_during_the_write(cli_path, tmp_path, signal.SIGINT, signal.SIG_IGN)
    assert proc.returncode == 0, proc.stderr.read()
    assert [p.name for p in tmp_path.iterdir()] == ["J.mtx"]


def signal_during_the_write(cli_path, folder, sig, disposition):
    """Starts `jacobian -o J.mtx` with `sig` at `disposition`, sends `sig` once its file
    appears, waits; returns the process and the names seen before the signal."""
    proc = subprocess.Popen([str(cli_path), "jacobian", "--ff", BIG, "-o", "J.mtx"], cwd=folder,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(sig, disposition))
    try:
        deadline = time.monotonic() + 120
        while not any(folder.iterdir()) and proc.poll() is None:
            assert time.monotonic() < deadline, "no file appeared"
            time.sleep(0.002)
        assert proc.poll() is None, "the write ended before the signal could be sent"
        seen = [p.name for p in folder.iterdir()]
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, seen


def limit_file_size(limit):
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


@pytest.mark.parametrize("args,target", [
    (["lift", "--ff", "5,32,32,2", "-o", "phi.txt"], "phi.txt"),
    (["lift", "--ff", "5,32,32,2", "-o", "phi.npy"], "phi.npy"),
    (["jacobian", "--ff", "5,32,32,2", "-o", "J.mtx"], "J.mtx"),
    (["jacobian", "--ff", "5,32,32,2", "-o", "J.npz"], "J.npz"),
    (["paths", "--ff", "5,32,32,2", "-o", "paths.txt"], "paths.txt"),
    (["convert", "--ff", "5,64,64,2", "-o", "net.json"], "net.json"),
], ids=["lift-txt", "lift-npy", "jacobian-mtx", "jacobian-npz", "paths", "convert"])
def test_a_full_disk_leaves_nothing(cli_path, tmp_path, args, target):
    proc = subprocess.run([str(cli_path), *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, preexec_fn=limit_file_size(16384))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: cannot write '{target}': File too large"), proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,formats", [
    (["paths", "-o", "x.npy"], ".txt"),
    (["paths", "-o", "x.npz"], ".txt"),
    (["paths", "-o", "x.mtx"], ".txt"),
    (["paths", "-o", "x.csv"], ".txt"),
    (["paths", "-o", "x"], ".txt"),
    (["convert", "-o", "x.npy"], ".json"),
    (["convert", "-o", "x.txt"], ".json"),
    (["lift", "-o", "x.json"], ".npy"),
    (["bench", "--csv", "x.txt"], ".csv"),
], ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_the_format_follows_the_extension_or_is_refused(run_cli, tmp_path, args, formats):
    # A network that does not exist: refused for the name before it is even read.
    network = [] if args[0] == "bench" else ["--network", "missing.json"]
    if args[0] == "lift":
        network = []  # lift needs the network for theta first; fig1 is instant
    r = run_cli(*args[:1], *network, *args[1:], cwd=tmp_path)
    name = args[-1]
    assert r.returncode == 2, r
    assert f"'{name}'" in r.stderr and formats in r.stderr and "missing.json" not in r.stderr, r
    assert list(tmp_path.iterdir()) == []


def test_bench_csv_to_stdout_is_refused(run_cli, tmp_path):
    r = run_cli("bench", "--grid", "3,2,1", "--csv", "-", cwd=tmp_path)
    assert r.returncode == 2 and "error: '-': " in r.stderr and ".csv" in r.stderr, r


@pytest.mark.parametrize("name", WRITERS)
def test_a_directory_or_a_missing_folder_is_refused(run_cli, tmp_path, name):
    ext = WRITERS[name][1].rsplit(".", 1)[1]
    (tmp_path / f"dir.{ext}").mkdir()
    cases = [(f"dir.{ext}", "it is a directory"),
             (f"missing/x.{ext}", "the folder 'missing' does not exist"),
             (f"dir.{ext}/", "it is a directory")]
    for out, says in cases:
        r = run_cli(*writer(name, out), cwd=tmp_path)
        assert r.returncode == 2 and f"error: cannot write '{out}': {says}" in r.stderr, r
    assert sorted(p.name for p in tmp_path.rglob("*")) == [f"dir.{ext}"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(run_cli, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        r = run_cli("lift", "-o", folder / "phi.txt")
        assert r.returncode == 2 and "is not writable" in r.stderr, r
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
@pytest.mark.parametrize("name", ["lift", "jacobian-npz", "paths", "convert"])
def test_the_file_has_the_permissions_of_a_new_file(cli_path, tmp_path, name, mask, mode):
    target = WRITERS[name][1]
    subprocess.run([str(cli_path), *writer(name, target)], cwd=tmp_path, check=True,
                   capture_output=True, preexec_fn=lambda: os.umask(mask))
    assert stat.S_IMODE((tmp_path / target).stat().st_mode) == mode


@pytest.mark.parametrize("command,target", [("lift", "phi.txt"), ("paths", "paths.txt"),
                                            ("convert", "net.json"), ("jacobian", "J.txt")])
def test_dash_is_stdout(run_cli, tmp_path, command, target):
    r = run_cli(command, "--ff", FF, "-o", "-", cwd=tmp_path, check=True)
    assert list(tmp_path.iterdir()) == []
    run_cli(command, "--ff", FF, "-o", target, cwd=tmp_path, check=True)
    assert r.stdout == (tmp_path / target).read_text() and r.stdout.count("\n") > 10


# --- the library's writer: pathlift.write_network (src/io.cpp, write_file_atomically) ---------

def test_python_write_network_follows_no_link_and_keeps_the_users_files(pathlift_module,
                                                                         tmp_path):
    pl = pathlift_module
    victim = tmp_path / "victim"
    victim.write_text("precious")
    traps = ["net.json.tmp", ".net.json.tmp"]
    for trap in traps:
        (tmp_path / trap).symlink_to(victim)
    (tmp_path / "mine.json.tmp").write_text("my own")
    pl.write_network(pl.fig1(), tmp_path / "net.json")
    pl.write_network(pl.fig1(), str(tmp_path / "mine.json"))
    assert victim.read_text() == "precious"
    assert (tmp_path / "mine.json.tmp").read_text() == "my own"
    assert pl.network_to_json(pl.read_network(tmp_path / "net.json")) == \
        pl.network_to_json(pl.fig1())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*traps, "victim", "net.json", "mine.json", "mine.json.tmp"])
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "net.json").stat().st_mode) == 0o666 & ~mask


@pytest.mark.parametrize("target", ["sub", "missing/net.json"])
def test_python_write_network_failure_leaves_nothing(pathlift_module, tmp_path, target):
    (tmp_path / "sub").mkdir()
    with pytest.raises(pathlift_module.FormatError, match="cannot write network file"):
        pathlift_module.write_network(pathlift_module.fig1(), tmp_path / target)
    assert [p.name for p in tmp_path.iterdir()] == ["sub"]
    assert not any((tmp_path / "sub").iterdir())


def test_python_write_network_keeps_fifos_and_devices(pathlift_module, tmp_path):
    """Issue 50: write_network replaced an existing FIFO, and as root a device node, by a
    regular file (the CLI refused them; the rule now has one home, check_output_path, which both
    writers call). Both are refused naming the file, and left as they were."""
    pl = pathlift_module
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    targets = [(fifo, "a FIFO", stat.S_ISFIFO)]
    if os.geteuid() == 0:
        device = tmp_path / "null.json"
        os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
        targets.append((device, "a character device", stat.S_ISCHR))
    for target, kind, is_kind in targets:
        with pytest.raises(pl.FormatError, match=f"cannot write network file '{target}': it is "
                                                 f"{kind}"):
            pl.write_network(pl.fig1(), target)
        assert is_kind(os.lstat(target).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(t.name for t, _, _ in targets)


def test_cli_output_onto_a_symlink_replaces_the_link(run_cli, tmp_path):
    """-o LINK where LINK is a symlink to a regular file: the new file replaces the link, and the
    file it named is left as it was (docs/cli.md#output-files)."""
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    run_cli("convert", "--example", "fig1", "-o", link, check=True)
    assert not link.is_symlink() and '"pathlift-network"' in link.read_text()
    assert victim.read_text() == "precious"
