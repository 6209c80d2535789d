"""Hostile inputs (issue 19, items 2, 3, 6, 7): the .npy and text readers, the one bounded file
reader, numbers beyond a double, node counts no network can have, built-in sizes, option values
parsed strictly, and names that would break a message. Each case used to crash, hang, read
without bound or be silently accepted.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_hostile_inputs.py
"""
import json
import os
import pathlib
import re
import struct
import subprocess
import time

import numpy as np
import pytest


def npy_bytes(header, data=b"", version=1):
    """A .npy file with this header dict text (padded as numpy pads it)."""
    text = header.encode("latin1")
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(text)) + text + data


def assert_refused(r, *parts):
    assert r.returncode == 2, r
    assert r.stderr.startswith("error: "), r
    assert "Traceback" not in r.stderr and "std::" not in r.stderr, r
    for part in parts:
        assert part in r.stderr, (part, r)


# --- item 2: the .npy reader ------------------------------------------------------------------

NPY_CASES = {
    # 19 bytes: a header shorter than claimed / a field absent (read past the end before).
    "short": b"\x93NUMPY\x01\x00\x09\x00{'descr'",
    "no_shape": npy_bytes("{'descr': '<f8', 'fortran_order': False, }\n"),
    "unterminated": npy_bytes("{'descr': '<f8"),
    "negative_shape": npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (-5,), }\n"),
    "overflowing_shape": npy_bytes(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n"),
    "huge_shape": npy_bytes(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,), }\n"),
    "float_shape": npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2.5,), }\n"),
    "text_itemsize": npy_bytes("{'descr': '<fx', 'fortran_order': False, 'shape': (1,), }\n",
                               b"\0" * 8),
    "big_shape_small_file": npy_bytes(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }\n", b"\0" * 8),
    "version2_header_past_end": b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{}",
}


@pytest.mark.parametrize("name", sorted(NPY_CASES))
def test_malformed_npy_is_refused_naming_the_file(run_cli, tmp_path, name):
    path = tmp_path / f"{name}.npy"
    path.write_bytes(NPY_CASES[name])
    for args in (["lift", "--theta", path, "-o", "-"], ["forward", "--data", path]):
        r = run_cli(*args, "--ff", "2,1")
        assert_refused(r, str(path))
        assert "stoll" not in r.stderr and "stoi" not in r.stderr, r


def test_well_formed_npy_still_reads(run_cli, tmp_path):
    path = tmp_path / "theta.npy"
    np.save(path, np.linspace(0.5, 2.0, 7))  # fig1, the default network, has 7 edges
    r = run_cli("lift", "--theta", path, "-o", "-")
    assert r.returncode == 0, r
    f = tmp_path / "X.npy"
    np.save(f, np.asfortranarray(np.arange(6.0).reshape(3, 2)))
    assert run_cli("forward", "--ff", "2,1", "--data", f).returncode == 0


# --- item 7: numbers in a text theta ------------------------------------------------------------


def test_text_theta_accepts_subnormals(run_cli, tmp_path):
    path = tmp_path / "theta.txt"
    path.write_text("1e-310 1 1 1 1 1 1\n")
    r = run_cli("norm", "--theta", path)  # norm works at any magnitude
    assert r.returncode == 0, r


@pytest.mark.parametrize("token,why", [("1e400", "out of the range of a double"),
                                       ("-1e400", "out of the range of a double"),
                                       ("1e-400", "underflows to 0")])
def test_text_theta_beyond_a_double_says_so(run_cli, tmp_path, token, why):
    path = tmp_path / "theta.txt"
    path.write_text(f"1 1 {token} 1 1 1 1\n")
    r = run_cli("lift", "--theta", path, "-o", "-")
    assert_refused(r, str(path), "line 1", token, why)
    assert "not a number" not in r.stderr


# --- item 6: one bounded reader -----------------------------------------------------------------


@pytest.mark.parametrize("option", ["--network", "--theta", "--data", "--onnx"])
@pytest.mark.parametrize("stream", ["/dev/zero", "/dev/urandom"])
def test_endless_input_that_cannot_be_a_file_is_refused_at_once(run_cli, option, stream):
    """Issue 50: `info --onnx /dev/zero` read 8.4 GB over 141 s before its refusal under the
    default limit. A stream's bytes are now checked as they arrive (an ONNX model's protobuf
    framing, a JSON object's '{', no NUL byte in text): refused within the first bytes."""
    command = "forward" if option == "--data" else "info" if option in ("--network", "--onnx") \
        else "lift"
    args = [command, option, stream]
    args += ["--ff", "2,1"] if option == "--data" else ["-o", "-"] if command == "lift" else []
    start = time.monotonic()
    r = run_cli(*args)
    assert time.monotonic() - start < 10
    assert_refused(r, f"'{stream}' (a stream, refused as it is read)")


@pytest.mark.parametrize("head", [b"{", b"\x08\x07"])
def test_endless_plausible_input_is_refused_at_the_bound(run_cli, tmp_path, head):
    """A stream that could still be a model file ('{' then spaces; an ONNX field then a long run
    of empty ones) is read to the bound and refused there, never held beyond it."""
    import threading
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    filler = b" " * 65536 if head == b"{" else b"\x12\x00" * 32768  # field 2, 0 bytes

    def feed():
        try:
            with open(fifo, "wb") as f:
                f.write(head)
                while True:
                    f.write(filler)
        except (BrokenPipeError, OSError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    start = time.monotonic()
    r = run_cli("info", "--network", fifo, "--max-memory", "16M")
    assert time.monotonic() - start < 30
    assert_refused(r, str(fifo), "too large")


def test_sparse_huge_file_is_refused_from_its_size(run_cli, tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.truncate(1 << 42)  # 4 TiB of holes: reading it would never end
    start = time.monotonic()
    r = run_cli("info", "--network", path)
    assert time.monotonic() - start < 30
    assert_refused(r, str(path), "too large", "--max-memory")


@pytest.mark.parametrize("command", [["info"], ["kernel", "--trace"], ["norm"]])
def test_network_file_is_read_under_the_given_max_memory(run_cli, tmp_path, command):
    # 100 KB of JSON: within the default bound, above the bound for --max-memory 1M (64 KiB).
    path = tmp_path / "big.json"
    path.write_text('{"format": "pathlift-network", "version": 1, "nodes": 2, "edges": [[0, 1]]}'
                    + " " * 100_000)
    r = run_cli(*command, "--network", path, "--max-memory", "1M")
    assert_refused(r, str(path), "too large", f"({(1 << 20) // 16} bytes)")


@pytest.mark.parametrize("option", ["--network", "--theta", "--data"])
def test_directory_as_input_is_refused(run_cli, tmp_path, option):
    args = ["forward", "--ff", "2,1"] if option == "--data" else ["lift", "-o", "-"]
    r = run_cli(*args, option, tmp_path)
    assert_refused(r, f"'{tmp_path}' is a directory")
    assert "0 entries" not in r.stderr


def test_missing_file_names_the_reason(run_cli, tmp_path):
    r = run_cli("info", "--network", tmp_path / "missing.json")
    assert_refused(r, "missing.json", "No such file or directory")


def test_python_readers_refuse_a_directory(pathlift_module, tmp_path):
    with pytest.raises(pathlift_module.FormatError, match="is a directory"):
        pathlift_module.read_network(str(tmp_path))


# --- item 3: JSON numbers and string weights ------------------------------------------------------


def network_json(weights):
    return ('{"format": "pathlift-network", "version": 1, "nodes": ["a", "b"], '
            '"edges": [["a", "b"]], "weights": [' + weights + "]}")


@pytest.mark.parametrize("weight", ["1e-400", "1e400", "-2.5e-999"])
def test_json_weight_beyond_a_double_is_refused(pathlift_module, run_cli, tmp_path, weight):
    with pytest.raises(pathlift_module.FormatError, match=r'"weights"\[0\].*out of the range'):
        pathlift_module.parse_network(network_json(weight))
    path = tmp_path / "net.json"
    path.write_text(network_json(weight))
    assert_refused(run_cli("info", "--network", path), str(path), weight)


def test_json_subnormal_weight_is_kept(pathlift_module):
    assert pathlift_module.parse_network(network_json("1e-310")).weights[0] == 1e-310


@pytest.mark.parametrize("make", [
    lambda pl: pl.Network([("a", "b")], weights=["1.5"]),
    lambda pl: pl.Network([("a", "b")], weights=np.array(["1.5"])),
    lambda pl: pl.Network([("a", "b")], weights=np.array(["1.5"], dtype=object)),
    lambda pl: pl.Network([("a", "b")], params=["0"]),
    lambda pl: pl.Network([("a", "b")], weights=[b"1"]),
], ids=["list", "unicode_array", "object_array", "params", "bytes"])
def test_strings_as_weights_are_refused(pathlift_module, make):
    with pytest.raises(ValueError, match=r"(weights|params) must be numbers"):
        make(pathlift_module)


def test_numeric_weights_still_work(pathlift_module):
    net = pathlift_module.Network([("a", "b")], weights=np.array([2], dtype=object))
    assert list(net.weights) == [2.0]


# --- item 6: unbounded work ---------------------------------------------------------------------


def test_a_node_index_far_beyond_the_edges_is_refused_quickly(pathlift_module):
    start = time.monotonic()
    with pytest.raises(ValueError, match="node count 10000001 is out of range"):
        pathlift_module.Network([(0, 10_000_000)])
    with pytest.raises(ValueError, match="node count 10000000 is out of range"):
        pathlift_module.Network([(0, 1)], nodes=10_000_000)
    with pytest.raises(ValueError, match="node count"):
        pathlift_module.Network(np.array([[0, 2**30]]))
    assert time.monotonic() - start < 5


def test_random_dag_refuses_sizes_it_cannot_draw(run_cli):
    start = time.monotonic()
    r = run_cli("info", "--example", "random-dag:1000000,0.00001,1")
    assert time.monotonic() - start < 10
    assert_refused(r, "at most 8192")


def test_feed_forward_refuses_absurd_sizes(run_cli):
    r = run_cli("info", "--ff", "9223372036854775807,9223372036854775807,2")
    assert_refused(r, "too large")


# --- item 7: option values --------------------------------------------------------------------


@pytest.mark.parametrize("args,part", [
    (["--ff", ""], "--ff"),
    (["--example", ""], "--example"),
    (["--network", ""], "--network"),
])
def test_empty_network_choice_is_refused(run_cli, args, part):
    r = run_cli("info", *args)
    assert_refused(r, part, "empty")
    assert "fig1" not in r.stdout


@pytest.mark.parametrize("args,place,follows,help", [
    (["info", ""], 2, "info", "info"),  # was accepted silently
    (["lift", "", "-o", "x.txt"], 2, "lift", "lift"),  # CLI11 never returned (found by fuzz_cli)
    (["lift", "-o", "x.txt", "--ff=2,2", ""], 5, "--ff=2,2", "lift"),  # was accepted, x written
    (["check", "--json", "", "--ff", "2,2"], 3, "--json", "check"),
    (["lift", "-o", "x.txt", "--", ""], 5, "--", "lift"),
    (["--x", "", "prove", "", "-o", "x"], 2, "--x", ""),  # never returned (found by fuzz_cli)
])
def test_an_empty_word_that_no_option_takes_is_refused(cli_path, tmp_path, args, place, follows,
                                                        help):
    proc = subprocess.run([str(cli_path), *args], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert proc.returncode == 2, proc
    assert proc.stderr.startswith(
        f"error: argument {place} is empty and is not the value of an option"), proc
    if follows is not None:
        assert f"(it follows '{follows}')" in proc.stderr, proc
    assert f"run 'pathlift {help + ' ' if help else ''}--help'" in proc.stderr, proc
    assert proc.stdout == "" and list(tmp_path.iterdir()) == [], proc


def test_an_empty_option_value_keeps_its_own_message(run_cli):
    assert_refused(run_cli("lift", "-o", ""), "empty output file name")
    assert_refused(run_cli("lift", "--ff", "", "-o", "-"), "--ff: the value is empty")


@pytest.mark.parametrize("seed", ["-1", "1.5", "1e3", " 7", "7x", "18446744073709551616"])
def test_bad_seed_is_refused_naming_it(run_cli, seed):
    assert_refused(run_cli("lift", "--seed", seed, "-o", "-"), "--seed", seed.strip())


def test_largest_seed_is_a_seed(run_cli):
    assert run_cli("lift", "--seed", "18446744073709551615", "-o", "-").returncode == 0


@pytest.mark.parametrize("count", ["0", "-1", "1.5", "2x"])
def test_top_eig_must_be_a_positive_integer(run_cli, count):
    r = run_cli("kernel", "--top-eig", count)
    assert_refused(r, "--top-eig", f"'{count}' is not an integer >= 1")
    assert "1.8e308" not in r.stderr


@pytest.mark.parametrize("size", ["0", "0.5", "0.4B", "1.5", "8Q", "8G ", "-1G", "1e9", "G",
                                  ".5G", "5.G", "99999999999T", "0.0000000001K"])
def test_max_memory_is_parsed_strictly(run_cli, size):
    r = run_cli("lift", "--max-memory", size, "-o", "-")
    assert_refused(r, "--max-memory")


@pytest.mark.parametrize("size", ["64M", "1.5G", "100000000", "512MiB", "2gb", "0.5G"])
def test_max_memory_good_sizes(run_cli, size):
    assert run_cli("lift", "--max-memory", size, "-o", "-").returncode == 0


def test_prime_with_trailing_text_is_refused(run_cli):
    assert_refused(run_cli("rank", "--prime", "7abc"), "--prime", "7abc")


# --- item 7: names in messages ------------------------------------------------------------------


def test_node_names_are_escaped_in_messages(run_cli, tmp_path, pathlift_module):
    text = ('{"format": "pathlift-network", "version": 1, "nodes": ["a\\nb", "\\u001b[2J"], '
            '"edges": [[0, 1], [1, 0]]}')
    path = tmp_path / "net.json"
    path.write_text(text)
    r = run_cli("info", "--network", path)
    assert_refused(r, "a\\nb", "\\x1b[2J")
    assert "\x1b" not in r.stderr and r.stderr.count("\n") == 1, r
    with pytest.raises(pathlift_module.NetworkError) as e:
        pathlift_module.Network([("x\x1b", "y"), ("y", "x\x1b")])
    assert "\x1b" not in str(e.value) and "x\\x1b" in str(e.value)


def test_node_names_are_escaped_in_rescale_and_paths(run_cli, tmp_path, pathlift_module):
    pl = pathlift_module
    net = pl.Network([("x", "h\x1b[2J"), ("h\x1b[2J", "y")])
    with pytest.raises(ValueError) as e:
        pl.rescale(net, [1.0, 1.0], [-1.0])
    assert "\x1b" not in str(e.value) and "h\\x1b[2J" in str(e.value)
    path = tmp_path / "net.json"
    path.write_text('{"format": "pathlift-network", "version": 1, "nodes": ["x", "h\\nz", "y"], '
                    '"edges": [[0, 1], [1, 2]]}')
    r = run_cli("paths", "--network", path, "--nodes", "-o", "-", check=True)
    assert "x -> h\\nz -> y" in r.stdout and "h\nz" not in r.stdout, r


@pytest.mark.parametrize("reader", ["from_onnx", "load_model", "read_network"])
def test_python_readers_refuse_an_endless_stream_at_once(pathlift_module, reader):
    start = time.monotonic()
    with pytest.raises(pathlift_module.FormatError, match="a stream, refused as it is read"):
        getattr(pathlift_module, reader)("/dev/zero")
    assert time.monotonic() - start < 10


def test_a_network_from_a_named_fifo(run_cli, tmp_path):
    """A network file written into a FIFO by another process: read once (the model sniffer no
    longer opens and closes the FIFO first, which broke the writer's pipe and left the reader
    waiting for a writer)."""
    import threading
    fifo = tmp_path / "net.json"
    os.mkfifo(fifo)
    text = (pathlib.Path(__file__).resolve().parents[1] / "data" / "fig1.json").read_text()

    def feed():
        with open(fifo, "w") as f:
            f.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    r = run_cli("info", "--network", fifo, "--json", check=True)
    assert json.loads(r.stdout)["d"] == 7


# --- a prime= out of range: a ValueError naming it (was a TypeError listing the signatures) -----

def _net(pl):
    return pl.feed_forward(2, [3], 1)  # d = 13


_THETA = np.linspace(0.5, 1.5, 13)

# Every function with a prime= keyword.
PRIME_TAKERS = {
    "modular_rank": lambda pl, p: pl.modular_rank([[1, 2], [3, 4]], prime=p),
    "rank": lambda pl, p: pl.rank(_net(pl), prime=p),
    "skeleton_gram_mod": lambda pl, p: pl.skeleton_gram_mod(_net(pl), prime=p),
    "prove_rank": lambda pl, p: pl.prove_rank(_net(pl), prime=p),
    "check_proof": lambda pl, p: pl.check_proof(pl.prove_rank(_net(pl)), prime=p),
    "functional_dimension": lambda pl, p: pl.functional_dimension(_net(pl), _THETA, np.eye(2),
                                                                  prime=p),
    "certify_rank": lambda pl, p: pl.certify_rank(_net(pl), prime=p),
    "certify_rank_from_gram": lambda pl, p: pl.certify_rank_from_gram(
        _net(pl), pl.skeleton_gram_mod(_net(pl), prime=1000003), prime=p),
    "certify_jacobian_rank": lambda pl, p: pl.certify_jacobian_rank(
        _net(pl), _THETA, pl.certify_rank(_net(pl)), prime=p),
    "check_rank_theorem": lambda pl, p: pl.check_rank_theorem(_net(pl), _THETA, prime=p),
    "dyadic_residue": lambda pl, p: pl.dyadic_residue(0.5, prime=p),
}


def functions_taking(module, argument):
    """The functions of module whose signature (the docstring's first line) has `argument`."""
    signature = re.compile(rf"\b{argument}: (Optional\[)?int\b")
    return {name for name in dir(module)
            if signature.search((getattr(getattr(module, name), "__doc__", "") or "")
                                .split("\n")[0])}


def test_every_function_with_a_prime_keyword_is_listed(pathlift_module):
    assert functions_taking(pathlift_module, "prime") == set(PRIME_TAKERS)


@pytest.mark.parametrize("prime,text", [(-5, "-5"), (2**63, str(2**63)), (2**64, str(2**64)),
                                        (np.int64(-3), "-3"), (-2**300, "-(an int of 301 bits)")],
                         ids=["negative", "2^63", "2^64", "numpy", "huge"])
@pytest.mark.parametrize("name", sorted(PRIME_TAKERS))
def test_a_prime_out_of_range_is_a_value_error_naming_it(pathlift_module, name, prime, text):
    with pytest.raises(ValueError, match=rf"^prime: the modulus {re.escape(text)} is not a prime "
                                         r"below 2\^63$"):
        PRIME_TAKERS[name](pathlift_module, prime)


@pytest.mark.parametrize("name", sorted(PRIME_TAKERS))
def test_a_prime_that_is_an_int_of_another_type_is_taken(pathlift_module, name):
    """numpy integers are ints (__index__); a composite one is the library's ValueError (where
    the prime is used: certify_jacobian_rank needs none for a theta without zeros)."""
    PRIME_TAKERS[name](pathlift_module, np.uint64(1000003))
    if name != "certify_jacobian_rank":
        with pytest.raises(ValueError, match="the modulus 1000001 is not a prime below 2"):
            PRIME_TAKERS[name](pathlift_module, np.int64(1000001))


# Every function with a seed= argument (a draw reproducible from an int in [0, 2^64)).
SEED_TAKERS = {
    "normal_weights": lambda pl, s: pl.normal_weights(3, s),
    "random_dag": lambda pl, s: pl.random_dag(4, 0.5, s),
    "check_identities": lambda pl, s: pl.check_identities(_net(pl), _THETA, seed=s),
    "random_data": lambda pl, s: pl.random_data(_net(pl), 2, seed=s),
    "check_linearization": lambda pl, s: pl.check_linearization(_net(pl), _THETA, np.eye(2),
                                                                seed=s),
    "verify_linearization": lambda pl, s: pl.verify_linearization(
        _net(pl), _THETA, np.eye(2), pl.linearize(_net(pl), _THETA, np.eye(2)), seed=s),
}


def test_every_function_with_a_seed_argument_is_listed(pathlift_module):
    assert functions_taking(pathlift_module, "seed") == set(SEED_TAKERS)


@pytest.mark.parametrize("seed,text", [(-1, "-1"), (2**64, str(2**64)), (np.int64(-3), "-3")],
                         ids=["negative", "2^64", "numpy"])
@pytest.mark.parametrize("name", sorted(SEED_TAKERS))
def test_a_seed_out_of_range_is_a_value_error_naming_it(pathlift_module, name, seed, text):
    """Where pybind11 listed the signatures in a TypeError; 2^64 - 1 and numpy ints are taken."""
    with pytest.raises(ValueError, match=rf"^seed: {re.escape(text)} is not a seed, an integer "
                                         r"from 0 to 2\^64 - 1$"):
        SEED_TAKERS[name](pathlift_module, seed)
    SEED_TAKERS[name](pathlift_module, 2**64 - 1)
    SEED_TAKERS[name](pathlift_module, np.uint64(7))


def test_sample_paths_takes_the_seed_rules_too(pathlift_module):
    """pathlift.sample_paths (a Python function over the bound one) refuses a negative seed the
    same way."""
    with pytest.raises(ValueError, match=r"^seed: -1 is not a seed"):
        pathlift_module.sample_paths(_net(pathlift_module), _THETA, 2, seed=-1)


def test_a_sparse_matrix_with_large_unsigned_entries_and_no_prime_is_refused(pathlift_module):
    """Its entries beyond int64 are reduced modulo prime: 0 is refused before (x % 0 traps)."""
    import scipy.sparse
    m = scipy.sparse.csr_matrix(np.array([[2**63 + 5, 1], [1, 1]], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"prime must be a prime < 2\^63 \(got 0\)"):
        pathlift_module.modular_rank(m, prime=0)
