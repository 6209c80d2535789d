"""The pip build of pathlift: `pip install --no-build-isolation .` from a checkout (docs/install.md).

setuptools drives CMake; CMake stays the one description of what the package is made of:
- the version and description come from `project(pathlift VERSION ... DESCRIPTION ...)` in
  CMakeLists.txt (the same version as `pathlift.__version__`, `pathlift --version` and
  pathliftConfigVersion.cmake);
- the files of the Python package are what `cmake --install --component python` installs
  (python/CMakeLists.txt), the CLI what `--component cli` installs; the wheel ships the CLI as
  data, so pip puts the `pathlift` program in the environment's bin/.

The CMake build lives in build-pip/ inside the checkout (git-ignored like every build*/ folder;
setuptools' own build and egg-info folders go under it too), is kept between installs, and is
configured with only what the package needs: Release, no tests, benchmarks or examples,
-DPython_EXECUTABLE=<the interpreter running pip>. The environment is honoured: CMAKE_ARGS
(extra `-D...` arguments, last so they win), CMAKE_BUILD_PARALLEL_LEVEL (default: every core),
CMAKE_GENERATOR; ccache is the compiler launcher when installed, with CCACHE_BASEDIR defaulting
to the checkout so that objects compiled for build/ are reused here.
"""

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
BUILD = ROOT / "build-pip"
CLI_STAGE = BUILD / "wheel-cli"  # `cmake --install --component cli` lands here: bin/pathlift


def project_field(field: str, cmakelists: pathlib.Path = ROOT / "CMakeLists.txt") -> str:
    """VERSION or DESCRIPTION of the `project(pathlift ...)` call in CMakeLists.txt."""
    text = cmakelists.read_text()
    call = re.search(r'\bproject\s*\(\s*pathlift\b((?:"[^"]*"|[^")])*)\)', text)
    if call is None:
        raise RuntimeError(f"{cmakelists} has no project(pathlift ...) call")
    value = re.search(rf"\b{field}\s+(\"[^\"]*\"|\S+)", call.group(1))
    if value is None:
        raise RuntimeError(f"{cmakelists}: project(pathlift{call.group(1)}) has no {field}")
    return value.group(1).strip('"')


def cmake_configure_args(python: str, environ=os.environ) -> list:
    """The `cmake -S -B` arguments of the pip build; CMAKE_ARGS come last so that they win."""
    args = ["-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={python}",
            "-DPATHLIFT_BUILD_PYTHON=ON", "-DPATHLIFT_BUILD_CLI=ON", "-DPATHLIFT_BUILD_TESTS=OFF",
            "-DPATHLIFT_BUILD_BENCHMARKS=OFF", "-DPATHLIFT_BUILD_EXAMPLES=OFF",
            # The package lands directly under the staging prefix given to `cmake --install`.
            "-DPATHLIFT_PYTHON_INSTALL_DIR=."]
    user = shlex.split(environ.get("CMAKE_ARGS", ""))
    if shutil.which("ccache") and not any(a.startswith("-DCMAKE_CXX_COMPILER_LAUNCHER")
                                          for a in user):
        args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    return args + user


class CMakeBuild(build_ext):
    """Builds the `_pathlift` module and the CLI with CMake and stages the package's files."""

    def run(self):
        if self.inplace or self.editable_mode:
            raise RuntimeError("pathlift does not support editable installs (pip install -e): "
                               "build with scripts/build.sh and use PYTHONPATH=build/python")
        super().run()

    def build_extension(self, ext):
        env = dict(os.environ)
        env.setdefault("CCACHE_BASEDIR", str(ROOT))
        BUILD.mkdir(exist_ok=True)
        self.spawn_in(env, ["cmake", "-S", str(ROOT), "-B", str(BUILD),
                            *cmake_configure_args(sys.executable, env)])
        if not (BUILD / "python").is_dir():
            raise RuntimeError(f"CMake skipped the Python module in {BUILD} (see 'pathlift: "
                               "Python module skipped' above): install python3-dev and "
                               "pybind11-dev (scripts/install-deps.sh)")
        jobs = [] if "CMAKE_BUILD_PARALLEL_LEVEL" in env else [
            "--parallel", str(self.parallel or os.cpu_count() or 1)]
        self.spawn_in(env, ["cmake", "--build", str(BUILD), *jobs,
                            "--target", "_pathlift", "pathlift_cli"])
        # The whole package (module, stub, pure-Python files) goes into build_lib, which the
        # wheel takes as is (emptied first: a file removed from python/pathlift/ must not stay);
        # the CLI goes to CLI_STAGE, shipped by data_files below.
        build_lib = pathlib.Path(self.build_lib).resolve()
        shutil.rmtree(build_lib / "pathlift", ignore_errors=True)
        self.spawn_in(env, ["cmake", "--install", str(BUILD), "--component", "python",
                            "--prefix", str(build_lib), "--strip"])
        shutil.rmtree(CLI_STAGE, ignore_errors=True)
        self.spawn_in(env, ["cmake", "--install", str(BUILD), "--component", "cli",
                            "--prefix", str(CLI_STAGE), "--strip"])
        module = pathlib.Path(self.get_ext_fullpath(ext.name))
        if not module.is_file():
            found = sorted(p.name for p in module.parent.glob("_pathlift*"))
            raise RuntimeError(f"the CMake build installed {found} in {module.parent}, not "
                               f"{module.name} (a module for another Python than "
                               f"{sys.executable}?)")

    def spawn_in(self, env, command):
        print(" ".join(command), flush=True)
        tty = terminal()
        if tty is None:
            subprocess.run(command, check=True, env=env, cwd=ROOT)
            return
        # pip keeps a build's output to itself (-v shows it) and draws a spinner: the CMake
        # build's percentage goes to the terminal too, on one line.
        with tty, subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True) as proc:
            for line in proc.stdout:
                sys.stdout.write(line)
                shown = progress_line(line)
                if shown is not None:
                    tty.write(f"\r\033[K{shown}")
                    tty.flush()
            tty.write("\r\033[K")
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, command)


def terminal():
    """The controlling terminal for writing, or None (no terminal: CI, a pipe, a cron job)."""
    try:
        return open("/dev/tty", "w")  # noqa: SIM115  (closed by the caller's with)
    except OSError:
        return None


def progress_line(line: str):
    """"pathlift: building, 45% (file.cpp)" from CMake's "[ 45%] Building CXX object ...", else
    None."""
    found = re.match(r"\[\s*(\d+)%\]\s+(.*)", line)
    if found is None:
        return None
    what = found.group(2).strip().rsplit("/", 1)[-1].removesuffix(".o")
    return f"pathlift: building, {found.group(1)}% ({what[:60]})"


if __name__ == "__main__":  # tests import this file for project_field
    os.chdir(ROOT)  # setup() takes paths relative to setup.py's folder, never absolute ones
    BUILD.mkdir(exist_ok=True)
    build = BUILD.relative_to(ROOT).as_posix()
    setup(
        version=project_field("VERSION"),
        description=project_field("DESCRIPTION"),
        ext_modules=[Extension("pathlift._pathlift", sources=[])],
        cmdclass={"build_ext": CMakeBuild},
        data_files=[("bin", [(CLI_STAGE / "bin" / "pathlift").relative_to(ROOT).as_posix()])],
        # Out of the checkout's top level: setuptools would write build/ (the CMake build's
        # folder) and pathlift.egg-info/ there.
        options={"build": {"build_base": f"{build}/setuptools"}, "egg_info": {"egg_base": build}},
    )
