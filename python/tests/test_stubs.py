"""The extension modules' type stubs (attnprof/_core.pyi, _cuda.pyi) ship with the package and name
exactly what the compiled modules have, so an edit to python/bindings/*.cpp cannot leave them behind."""
import ast
import importlib
import importlib.metadata
import pathlib

import pytest

import attnprof

PACKAGE = pathlib.Path(attnprof.__file__).parent


def stub_names(module):
    """Top-level names a stub declares (functions, classes, annotated or assigned values), private ones left out,
    and each class's public methods."""
    tree = ast.parse((PACKAGE / f"{module}.pyi").read_text())
    names, methods = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                methods[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return {n for n in names if not n.startswith("_") or n == "__version__"}, methods


@pytest.mark.parametrize("module", ["_core", "_cuda"])
def test_stub_matches_module(module):
    try:
        mod = importlib.import_module(f"attnprof.{module}")
    except ImportError:
        pytest.skip(f"attnprof.{module} is not built here")
    names, methods = stub_names(module)
    public = {n for n in dir(mod) if not n.startswith("_")} | ({"__version__"} & set(dir(mod)))
    assert names == public
    for cls, declared in methods.items():
        own = {n for n in vars(getattr(mod, cls)) if not n.startswith("_")}  # not what it inherits
        assert own == declared - {"__init__"}, f"{cls}: module {sorted(own)}, stub {sorted(declared)}"


def test_package_is_typed():
    assert (PACKAGE / "py.typed").exists()


def test_version_is_the_version_file():
    """One version: the repository's VERSION file, which CMake compiles into _core and the wheel's metadata reads."""
    version_file = pathlib.Path(__file__).resolve().parents[2] / "VERSION"
    assert attnprof.__version__ == version_file.read_text().strip()
    assert importlib.metadata.version("attnprof") == attnprof.__version__
