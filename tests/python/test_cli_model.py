"""The CLI's model loading (model.hpp's load_model): --network reads every format by its
content, --input-shape goes with ONNX models, and a hostile model file is a bad input (exit 2
naming the file), never a crash or an internal error."""

import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def info(run_cli, *args):
    r = run_cli("info", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_network_reads_onnx_as_onnx_does(run_cli):
    by_content = info(run_cli, "--network", DATA / "lenet5.onnx")
    by_flag = info(run_cli, "--onnx", DATA / "lenet5.onnx")
    for key in ("layers", "nodes", "edges", "d", "P", "h"):
        assert by_content[key] == by_flag[key], key
    assert by_content["layers"] == 13


def test_input_shape_goes_with_onnx(run_cli, tmp_path):
    r = run_cli("info", "--network", DATA / "fig1.json", "--input-shape", "3,4")
    assert r.returncode == 2
    assert "--input-shape goes with an ONNX model" in r.stderr
    r = run_cli("info", "--input-shape", "3,4")
    assert r.returncode == 2 and "--input-shape goes with --onnx" in r.stderr


def test_hostile_model_files_are_bad_input(run_cli, tmp_path):
    deep = tmp_path / "deep.json"
    nested = "[" * 200000 + "]" * 200000
    deep.write_text('{"format": "pathlift-layers", "version": 1, "input_shape": [4], '
                    f'"layers": {nested}, "outputs": [0], "num_params": 0}}')
    r = run_cli("norm", "--network", deep)
    assert r.returncode == 2 and "nested more than 64 deep" in r.stderr, r.stderr[-500:]
    assert len(r.stderr) < 400

    lenet = (DATA / "lenet5.onnx").read_bytes()
    for name, data in (("junk.onnx", b"\x08\x07\xff\xff not a model"),
                       ("truncated.onnx", lenet[: len(lenet) // 2]),
                       ("empty.onnx", b"")):
        path = tmp_path / name
        path.write_bytes(data)
        for flag in ("--network", "--onnx"):
            r = run_cli("norm", flag, path)
            assert r.returncode == 2, (name, flag, r.returncode, r.stderr[-300:])
            assert str(path) in r.stderr, (name, r.stderr)


def test_a_layer_graph_file_is_unrolled_only_by_what_needs_edges(run_cli, tmp_path):
    layers = tmp_path / "layers.json"
    r = run_cli("convert", "--onnx", DATA / "lenet5.onnx", "-o", tmp_path / "unrolled.json")
    assert r.returncode == 0, r.stderr
    # The path-free commands on the layer graph agree with the same commands on its DAG.
    import pathlift  # noqa: F401  (the build's package, from conftest's path)
    from pathlift import layer_graph_to_json, read_onnx
    layers.write_text(layer_graph_to_json(read_onnx(DATA / "lenet5.onnx")))
    on_layers = json.loads(run_cli("norm", "--network", layers, "--json").stdout)
    on_dag = json.loads(run_cli("norm", "--network", tmp_path / "unrolled.json", "--json").stdout)
    for s in ("1", "2"):
        assert abs(on_layers["log10_norms"][s] - on_dag["log10_norms"][s]) < 1e-12
