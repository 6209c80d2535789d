"""The ONNX importer's operator table (src/layers/detail/onnx_operators.cpp), the one list of the
operators pathlift reads: docs/onnx-operators.md is what scripts/onnx_operators_doc.py writes from
it, its arities agree with ONNX's own operator schemas (python3-onnx, an independent reference),
and the refusal of an operator outside it lists its names."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def doc_script():
    spec = importlib.util.spec_from_file_location("onnx_operators_doc",
                                                  ROOT / "scripts" / "onnx_operators_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_generated_from_the_table(pl):
    page = (ROOT / "docs" / "onnx-operators.md").read_text()
    assert page == doc_script().render(pl.onnx_operators()), (
        "docs/onnx-operators.md is stale: PYTHONPATH=build/python /usr/bin/python3 "
        "scripts/onnx_operators_doc.py")


def test_the_arities_cover_onnx_schemas(pl):
    defs = pytest.importorskip("onnx.defs", reason="python3-onnx is needed for the schemas")
    schemas = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            schemas.setdefault(s.name, []).append(s)
    known = defs.onnx_opset_version()
    for op in pl.onnx_operators():
        assert op.name in schemas, op.name
        versions = sorted(schemas[op.name], key=lambda s: s.since_version)
        # The schema in force at first_opset exists, and every later one up to what libonnx
        # knows (the table may reach further: opset 18) fits the table's ranges.
        assert versions[0].since_version <= op.first_opset, op.name
        in_force = [s for s in versions if s.since_version <= op.first_opset][-1:] + \
                   [s for s in versions if op.first_opset < s.since_version <= known]
        unbounded = 2 ** 31 - 1
        for s in in_force:
            where = f"{op.name} (opset {s.since_version})"
            assert op.min_inputs <= s.min_input, where
            assert op.max_inputs == -1 if s.max_input == unbounded else \
                s.max_input <= op.max_inputs, where
            assert op.min_outputs <= s.min_output, where
            assert op.max_outputs == -1 if s.max_output == unbounded else \
                s.max_output <= op.max_outputs, where
        assert op.last_opset >= known


def test_an_unknown_operator_is_refused_listing_the_table(pl, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    path = tmp_path / "sigmoid.onnx"
    torch.onnx.export(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Sigmoid()).double(),
                      torch.zeros((1, 3), dtype=torch.float64), str(path), opset_version=13)
    with pytest.raises(pl.UnsupportedModelError) as e:
        pl.from_onnx(str(path))
    names = ", ".join(op.name for op in pl.onnx_operators())
    assert "Sigmoid at" in str(e.value)
    assert f"(the ONNX operators pathlift reads: {names})" in str(e.value)
