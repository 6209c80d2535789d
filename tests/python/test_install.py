"""The pip build's own logic (setup.py): one version, read from CMakeLists.txt, and the CMake
arguments it passes. The installs themselves -- `cmake --install` into a prefix, `pip install`
into a venv, version metadata == pathlift.__version__ -- are checked end to end by
scripts/check-install.sh (minutes: it builds), which CI runs after the Release build.
"""

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def setup_py():
    """setup.py as a module (setup() runs only under __main__, as pip runs it)."""
    spec = importlib.util.spec_from_file_location("pathlift_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_version_from_cmake_to_package_and_cli(setup_py, pathlift_module, run_cli,
                                                   build_dir):
    version = setup_py.project_field("VERSION")
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    assert pathlift_module.__version__ == version
    assert version in run_cli("--version", check=True).stdout
    cache = (build_dir / "CMakeCache.txt").read_text()
    assert f"CMAKE_PROJECT_VERSION:STATIC={version}" in cache


def test_project_field_reads_a_multiline_project_call(setup_py, tmp_path):
    cmakelists = tmp_path / "CMakeLists.txt"
    cmakelists.write_text('cmake_minimum_required(VERSION 3.25)\n'
                          'project(pathlift\n  VERSION 2.13.4 LANGUAGES CXX\n'
                          '  DESCRIPTION "Path-lifting (of DAG) networks")\n'
                          'project(other VERSION 9.9.9)\n')
    assert setup_py.project_field("VERSION", cmakelists) == "2.13.4"
    assert setup_py.project_field("DESCRIPTION", cmakelists) == "Path-lifting (of DAG) networks"
    cmakelists.write_text("project(pathlift LANGUAGES CXX)\n")
    with pytest.raises(RuntimeError, match=r"project\(pathlift LANGUAGES CXX\) has no VERSION"):
        setup_py.project_field("VERSION", cmakelists)


def test_cmake_args_come_last_and_a_user_launcher_wins(setup_py, monkeypatch):
    monkeypatch.setattr(setup_py.shutil, "which", lambda name: "/usr/bin/" + name)
    args = setup_py.cmake_configure_args("/venv/bin/python", {})
    assert "-DPython_EXECUTABLE=/venv/bin/python" in args
    assert "-DPATHLIFT_BUILD_TESTS=OFF" in args and "-DCMAKE_BUILD_TYPE=Release" in args
    assert "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache" in args
    user = {"CMAKE_ARGS": "-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER_LAUNCHER='my cc'"}
    args = setup_py.cmake_configure_args("/venv/bin/python", user)
    assert args[-2:] == ["-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_CXX_COMPILER_LAUNCHER=my cc"]
    assert "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache" not in args
    monkeypatch.setattr(setup_py.shutil, "which", lambda name: None)
    assert not any("LAUNCHER" in a for a in setup_py.cmake_configure_args("/p", {}))


def test_pip_shows_the_builds_progress_on_the_terminal(setup_py):
    """Issue 51: pip showed only 'still running...' for minutes. setup.py writes CMake's
    percentage to the controlling terminal, one line (pip keeps the build's own output)."""
    s = setup_py
    assert s.progress_line("[ 45%] Building CXX object src/CMakeFiles/pathlift.dir/rank/"
                           "balance.cpp.o\n") == "pathlift: building, 45% (balance.cpp)"
    assert s.progress_line("[100%] Built target _pathlift\n") == \
        "pathlift: building, 100% (Built target _pathlift)"
    assert s.progress_line("-- Configuring done\n") is None
