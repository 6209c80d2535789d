#!/usr/bin/python3
"""Writes a Gemm ONNX model: PyTorch's Linear(n_in, n_out) as torch.onnx.export writes it (a
FLOAT weight (n_out, n_in) in raw_data, transB = 1), with the onnx package and a fixed seed.
The large models of the memory checks (scripts/check-memory.sh, tests/python/
test_memory_limits.py), made at run time rather than committed.

    /usr/bin/python3 scripts/gemm_onnx.py PATH N_IN N_OUT
"""
import sys

import numpy as np


def gemm_onnx(path, n_in, n_out, seed=0):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((n_out, n_in), dtype=np.float32) * 0.01).astype(np.float32)
    b = rng.standard_normal(n_out, dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)], "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", n_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n_out])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    gemm_onnx(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
