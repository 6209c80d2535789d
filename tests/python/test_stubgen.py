"""The type stub of the C++ module is generated from the module (scripts/stubgen.py, run by the
build after each link): the one in the build tree is what the generator writes for the module
built now, and it is a stub a type checker can read."""
import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_built_stub_is_the_generated_one(pathlift_module, build_dir, tmp_path):
    built = pathlib.Path(pathlift_module.__file__).parent / "_pathlift.pyi"
    fresh = tmp_path / "_pathlift.pyi"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "stubgen.py"),
                    str(build_dir / "python"), str(fresh)], check=True, timeout=120)
    assert built.read_text() == fresh.read_text()


def test_the_stub_types_plain_objects(pathlift_module):
    text = (pathlib.Path(pathlift_module.__file__).parent / "_pathlift.pyi").read_text()
    tree = ast.parse(text)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    # What pybind11 shows as `object` gets the type TYPES gives it.
    rank = functions["rank"]
    assert ast.unparse(rank.returns) == "Dict[str, Any]"
    assert ast.unparse(rank.args.args[1].annotation) == "Theta"
    assert "pathlift._pathlift.N" not in text and "numpy.ndarray[" not in text
    # No copy of the stub is kept beside the bindings.
    assert not (ROOT / "python" / "pathlift" / "_pathlift.pyi").exists()
