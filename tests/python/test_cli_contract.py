"""The CLI contract of docs/cli.md, for every command `pathlift --help` lists (a new command
without an entry here fails test_every_command_is_covered): the JSON header, stdout for the
result only, exit 0 / 1 / 2, and the suggestion for a mistyped command or option.
"""

import json
import os
import re
import resource
import stat
import subprocess

import numpy as np
import pytest

from test_cli_info import project_version

# A quick good run of each command on fig1 (the default network); "{out}" is a file in tmp_path
# that receives the data. bench's --csv (-o) is a copy of its table, which stays on stdout.
GOOD = {
    "report": [],
    "info": [],
    "paths": ["-o", "{out}.txt"],
    "lift": ["-o", "{out}.npy"],
    "skeleton": ["-o", "{out}.mtx"],
    "jacobian": ["-o", "{out}.mtx"],
    "check": [],
    "rank": [],
    "prove": [],
    "forward": ["--data", "{data}", "-o", "{out}.csv"],
    "linearize": ["--data", "{data}", "-o", "{out}.mtx"],
    "norm": [],
    "metric": ["--theta2", "{theta2}"],
    "bound": ["--samples", "100", "--input-bound", "1"],
    "rescale": ["--enorm", "-o", "{out}.npy"],
    "kernel": ["--diag", "-o", "{out}.npy"],
    "bench": ["--grid", "5,2,2", "--reps", "1", "-o", "{out}.csv"],
    "convert": ["-o", "{out}.json"],
}

# The commands with --json, the arguments they need, and whether they take theta.
JSON = {
    "info": ([], False),
    "check": ([], True),
    "rank": ([], True),
    "prove": ([], False),
    "linearize": (["--data", "{data}"], True),
    "norm": ([], True),
    "metric": (["--theta2", "{theta2}"], True),
    "bound": (["--samples", "100", "--input-bound", "1"], True),
    "paths": (["--top", "3"], True),
    "rescale": (["--path-cond", "-o", "{out}.npy"], True),
    "kernel": (["--trace"], True),
}
HEADER = ["format", "version", "pathlift_version", "network", "theta"]
# Commands whose work is the Python package's and whose inputs are files, not a network's
# options (--network, --example): their contract (help, exit codes, streams) is tested in their
# own files (sweep: test_sweep.py).
PYTHON_COMMANDS = {"sweep"}


def listed_commands(run_cli):
    text = run_cli("--help", check=True).stdout
    block = text.split("Subcommands:", 1)[1]
    return re.findall(r"^  (\w+)\s", block, re.M)


@pytest.fixture
def expand(tmp_path):
    data = tmp_path / "X.csv"
    data.write_text("1.0,0.5\n-0.25,2.0\n0.75,-1.5\n")  # fig1: 2 data inputs
    theta2 = tmp_path / "theta2.csv"
    theta2.write_text("0.5\n-1\n0\n2\n1\n0.25\n3\n")  # fig1: d = 7

    def run(args, name="out"):
        return [a.format(out=tmp_path / name, data=data, theta2=theta2) for a in args]

    return run


def help_of(run_cli, command):
    return run_cli(command, "--help", check=True).stdout


# --- coverage --------------------------------------------------------------------------------


def test_every_command_is_covered(run_cli):
    commands = listed_commands(run_cli)
    assert len(commands) >= 15, commands
    assert sorted(commands) == sorted(set(GOOD) | PYTHON_COMMANDS)
    for command in commands:
        assert ("--json" in help_of(run_cli, command)) == (command in JSON), command


def test_cli_md_names_the_commands_that_take_json():
    """docs/cli.md's "JSON: the header" opens with the commands that take --json: all of them."""
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "cli.md")
    with open(docs, encoding="utf-8") as f:
        text = f.read()
    sentence = text.split("## JSON: the header", 1)[1].split("take `--json`", 1)[0]
    assert set(re.findall(r"`(\w+)`", sentence)) == set(JSON)


# --- exit 0, and stdout holds the result only ------------------------------------------------


@pytest.mark.parametrize("command", sorted(GOOD))
def test_good_input_exits_0_with_the_result_alone_on_stdout(run_cli, expand, tmp_path, command):
    args = expand(GOOD[command])
    r = run_cli(command, *args)
    assert r.returncode == 0, r
    if "-o" not in args:  # the text is the result; no status line (and no progress: not a tty)
        assert r.stdout.strip() and r.stderr == "", r
        return
    out = args[args.index("-o") + 1]
    assert (tmp_path / out).stat().st_size > 0
    assert out in r.stderr, r  # what was written is a status line
    if command == "bench":
        assert re.search(r"^5,2,2\s", r.stdout, re.M), r
    else:
        assert r.stdout == "", r


@pytest.mark.parametrize("command", sorted(GOOD))
def test_help_exits_0(run_cli, command):
    r = run_cli(command, "--help")
    assert r.returncode == 0 and command in r.stdout and r.stderr == "", r


# --- the JSON header -------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(JSON))
def test_json_header(run_cli, expand, tmp_path, command):
    extra, takes_theta = JSON[command]
    theta = tmp_path / "theta.npy"
    np.save(theta, np.linspace(0.5, 2.0, 7))  # fig1: d = 7, no zero weight
    sources = [([], "standard normal, --seed 0"), (["--seed", "3"], "--seed 3"),
               (["--theta", theta], f"--theta {theta}")] if takes_theta else [([], None)]
    for theta_args, source in sources:
        r = run_cli(command, *expand(extra), *theta_args, "--json")
        assert r.returncode == 0, r
        j = json.loads(r.stdout)  # stdout is the JSON object and nothing else
        assert list(j)[:5] == HEADER
        assert j["format"] == f"pathlift-{command}"
        assert j["version"] == 1
        assert j["pathlift_version"] == project_version()
        assert j["network"] == "fig1"
        assert j["theta"] == source
    if command not in ("linearize", "metric"):  # their data and theta2 fit fig1
        r = run_cli(command, *expand(extra), "--ff", "3,4,2", "--json", check=True)
        assert json.loads(r.stdout)["network"] == "ff:3,4,2"


def test_json_keys_agree_across_commands(run_cli, expand):
    """d and P of one network, from the commands that report them."""
    j = {c: json.loads(run_cli(c, *expand(JSON[c][0]), "--ff", "3,4,2", "--json",
                               check=True).stdout) for c in JSON
         if c not in ("linearize", "metric")}
    d = 3 * 4 + 4 + 4 * 2 + 2  # weights and biases of 3 -> 4 -> 2
    assert j["info"]["d"] == j["rank"]["d"] == j["prove"]["d"] == j["norm"]["d"] == d
    assert j["kernel"]["d"] == d
    assert j["info"]["P"] == j["norm"]["P"] == 2 * (3 * 4 + 4 + 1)


@pytest.mark.parametrize("args", [["kernel", "--diag"], ["linearize", "--data", "{data}"]])
def test_json_with_a_file_output(run_cli, expand, tmp_path, args):
    r = run_cli(*expand(args), "-o", tmp_path / "x.mtx", "--json")
    assert r.returncode == 0, r
    assert json.loads(r.stdout)["format"] == f"pathlift-{args[0]}"
    assert (tmp_path / "x.mtx").stat().st_size > 0
    r = run_cli(*expand(args), "-o", "-", "--json")  # both would go to stdout
    assert r.returncode == 2 and r.stdout == "" and "--json" in r.stderr, r


# --- exit 2: bad usage, bad input ------------------------------------------------------------


def expect_2(r, *culprits):
    assert r.returncode == 2, r
    assert r.stderr.startswith("error: "), r
    assert "terminate called" not in r.stderr
    for culprit in culprits:
        assert culprit in r.stderr, (culprit, r)


@pytest.mark.parametrize("command", sorted(GOOD))
def test_bad_flag_value_exits_2(run_cli, expand, command):
    args = expand(GOOD[command])
    expect_2(run_cli(command, *args, "--threads", "-1"), "--threads")
    expect_2(run_cli(command, *args, "--no-such-option"), "--no-such-option")
    if command != "bench":
        expect_2(run_cli(command, *args, "--example", "no-such-network"), "no-such-network")


@pytest.mark.parametrize("command", sorted(set(GOOD) - {"bench"}))
def test_missing_and_malformed_files_exit_2(run_cli, expand, tmp_path, command):
    args = expand(GOOD[command])
    missing = tmp_path / "missing.json"
    expect_2(run_cli(command, *args, "--network", missing), str(missing))
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "pathlift-network", "version": 1, "nodes": ["a", "b"], '
                   '"edges": [["a", "zz"]]}')
    expect_2(run_cli(command, *args, "--network", bad), str(bad), "zz")
    if "--theta" in help_of(run_cli, command):
        expect_2(run_cli(command, *args, "--theta", tmp_path / "none.npy"), "none.npy")


def test_unwritable_output_and_refused_work_exit_2(run_cli, tmp_path):
    expect_2(run_cli("lift", "-o", tmp_path / "no" / "dir" / "phi.npy"), "phi.npy")
    expect_2(run_cli("bench", "--grid", "5,2,2", "--reps", "1", "-o", tmp_path / "no" / "b.csv"),
             "b.csv")
    # P = 3,154,050 paths: the Jacobian needs far more than 1 MiB
    expect_2(run_cli("jacobian", "--ff", "5,64,64,64,2", "--max-memory", "1M", "-o",
                     tmp_path / "J.mtx"), "--max-memory")
    assert not (tmp_path / "J.mtx").exists()


def special_files(tmp_path):
    """A FIFO, and where the user may make one (root), a character device (/dev/full's numbers):
    made in tmp_path, so that a wrong rename would replace nothing of the system's."""
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    made = [(fifo, "a FIFO (named pipe)", stat.S_ISFIFO)]
    dev = tmp_path / "full.npy"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        made.append((dev, "a character device", stat.S_ISCHR))
    except PermissionError:
        pass
    return made


@pytest.mark.parametrize("args", [["lift"], ["jacobian"], ["kernel", "--diag"], ["convert"]])
def test_special_output_targets_are_refused_and_untouched(run_cli, tmp_path, args):
    for target, kind, is_kind in special_files(tmp_path):
        if args[0] == "convert":
            target = target.rename(target.with_suffix(".json"))
        link = tmp_path / ("link" + target.suffix)
        link.symlink_to(target)
        for name in (target, link):
            r = run_cli(*args, "-o", name)
            expect_2(r, f"cannot write '{name}': it is {kind}, not a regular file")
            assert is_kind(os.stat(target).st_mode) and os.path.islink(link)
        link.unlink()
        target.unlink()
    assert list(tmp_path.iterdir()) == []  # no temporary left


def test_a_file_size_limit_is_a_write_error(cli_path, tmp_path):
    """ulimit -f: the write fails (EFBIG), exit 2, no temporary; not death by SIGXFSZ."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (10000, 10000))

    r = subprocess.run([str(cli_path), "lift", "--ff", "5,64,64,2", "-o", "fs.npy"],
                       capture_output=True, text=True, cwd=tmp_path, preexec_fn=limit,
                       timeout=600)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith("error: cannot write 'fs.npy': File too large"), r.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_option_the_command_lacks_is_named(run_cli):
    """`info --json -o -`: not CLI11's "The following arguments were not expected: - -o"."""
    expect_2(run_cli("info", "--json", "-o", "-"),
             "'info' has no option '-o': it prints its result on stdout")
    expect_2(run_cli("norm", "--jsn"), "'norm' has no option '--jsn'", "did you mean '--json'?")


def test_the_lanczos_limit_has_pythons_name(run_cli):
    """kernel --max-iterations (Python's max_iterations), --max-iter kept as its short form."""
    assert "--max-iterations" in run_cli("kernel", "--help").stdout
    for flag in ("--max-iterations", "--max-iter"):
        r = run_cli("kernel", "--ff", "6,20,20,3", "--top-eig", "3", "--method", "lanczos", flag,
                    "1", "--subspace", "9", "--tol", "1e-14")
        assert r.returncode == 0 and "raise --max-iterations or --tol" in r.stderr, r


def test_no_cli11_exit_codes(run_cli):
    """CLI11's own codes (105 for a conversion, 106 for a validation, 109 for extras) map to 2."""
    for args in (["rank", "--prime", "4"], ["info", "--threads", "x"], ["info", "extra"],
                 ["kernel"], []):
        expect_2(run_cli(*args))


# --- exit 1: a check or theorem failed -------------------------------------------------------


def test_failing_check_exits_1(run_cli):
    """--tolerance 0: Lemma 1's S exp(B log|theta|) differs from the product by rounding on
    some path of fig1 at --seed 0, so the check fails honestly."""
    r = run_cli("check", "--tolerance", "0", "--json")
    assert r.returncode == 1, r
    j = json.loads(r.stdout)  # the result is printed, then the error names what failed
    assert j["passed"] is False and j["status"] == "failed"
    failed = [c["name"] for c in j["checks"] if c["status"] == "failed"]
    assert "lemma1" in failed
    assert r.stderr.startswith("error: ") and "lemma1" in r.stderr
    r = run_cli("report", "--tolerance", "0")
    assert r.returncode == 1 and "SOME CHECKS FAILED" in r.stdout, r
    assert r.stderr.startswith("error: report: ") and "lemma1" in r.stderr


@pytest.fixture
def tiny_theta(tmp_path):
    """theta_k = 1e-200: every path of fig1 has two or three edges, so Phi = 1e-400 underflows
    to 0 (Proposition 2's diag(Phi) B diag(1/theta) used to "fail" from it)."""
    assert 1e-200 * 1e-200 == 0.0
    path = tmp_path / "tiny.npy"
    np.save(path, np.full(7, 1e-200))
    return path


def test_underflow_is_out_of_range_exit_4_not_a_failure(run_cli, tiny_theta):
    r = run_cli("check", "--theta", tiny_theta, "--json")
    assert r.returncode == 4, r
    j = json.loads(r.stdout)
    assert j["passed"] is False and j["status"] == "out_of_range"
    assert [c["status"] for c in j["checks"]] == ["out_of_range", "out_of_range", "passed",
                                                  "out_of_range"]
    assert r.stderr.startswith("error: ") and "underflow" in r.stderr
    r = run_cli("report", "--theta", tiny_theta)
    assert r.returncode == 4 and "OUT OF RANGE" in r.stdout, r
    assert r.stderr.startswith("error: report: ") and "underflow" in r.stderr


def test_uncertified_rank_exits_1(run_cli):
    """B^T B mod 2 (sketch-h1): its rank mod 2 is a lower bound below d - h, so rank(B) is not
    certified; mod 3 it is."""
    r = run_cli("rank", "--example", "sketch-h1", "--method", "gram", "--prime", "2", "--json")
    assert r.returncode == 1, r
    j = json.loads(r.stdout)
    assert j["status"] == "rank_B_uncertified" and j["rank_B_lower"] < j["expected"]
    assert r.stderr.startswith("error: rank: rank_B_uncertified")
    r = run_cli("rank", "--example", "sketch-h1", "--method", "gram", "--prime", "3", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "verified", r


# --- mistyped commands and options -----------------------------------------------------------


def test_typo_suggests_the_command(run_cli):
    r = run_cli("jacobain", "--ff", "3,4,2")
    expect_2(r)
    assert r.stderr.startswith("error: unknown command 'jacobain'; did you mean 'jacobian'?")
    assert "report, info, paths" in r.stderr and r.stdout == ""
    r = run_cli("rnak")
    expect_2(r)
    assert "did you mean 'rank'?" in r.stderr
    r = run_cli("frobnicate")
    expect_2(r)
    assert "did you mean" not in r.stderr and "convert" in r.stderr


def test_typo_suggests_the_option(run_cli):
    r = run_cli("rank", "--josn")
    expect_2(r, "--josn", "did you mean '--json'?", "pathlift rank --help")
    r = run_cli("kernel", "--diga", "-o", "-")
    expect_2(r, "did you mean '--diag'?")  # an option of a group
    r = run_cli("info", "--frobnicate")
    expect_2(r, "--frobnicate")
    assert "did you mean" not in r.stderr


def test_no_command_lists_them(run_cli):
    r = run_cli()
    expect_2(r, "info", "jacobian", "convert")


def test_numbers_and_counts_are_checked_with_their_value(run_cli):
    """A path-norm exponent must be a number within float64 (inf included); --top and --sample
    take at least 1; report says "1 output"."""
    for value, words in (("abc", "'abc' is not a number"),
                         ("1e400", "'1e400' is beyond float64's range"),
                         ("1e-320", "'1e-320' is beyond float64's range")):
        expect_2(run_cli("norm", "--s", value), f"--s: {words}")
        expect_2(run_cli("paths", "--sample", "2", "--s", value), f"--s: {words}")
    assert "||Phi||_inf" in run_cli("norm", "--s", "inf", check=True).stdout
    for flag in ("--top", "--sample"):
        expect_2(run_cli("paths", flag, "0"), f"{flag}: '0' is not an integer >= 1")
    assert "1 hidden, 1 output\n" in run_cli("report", "--ff", "2,1,1", "--no-bias",
                                              check=True).stdout
