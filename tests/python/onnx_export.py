"""What the ONNX tests share: torch and onnx (the test module skipped without them), and
torch.onnx.export as they call it: the model in float64 and eval mode, exported on a zero sample
of batch one with input "x", output "y" and the batch dimension symbolic."""
import io

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) is needed for the ONNX "
                                          "tests")


def onnx_bytes(model, shape, opset=13, **kwargs):
    """The model (made float64, eval mode) exported for inputs of this shape (batch excluded):
    the ONNX bytes. kwargs go to torch.onnx.export (do_constant_folding, training)."""
    buffer = io.BytesIO()
    torch.onnx.export(model.double().eval(), torch.zeros((1, *shape), dtype=torch.float64),
                      buffer, input_names=["x"], output_names=["y"], opset_version=opset,
                      dynamic_axes={"x": {0: "batch"}}, **kwargs)
    return buffer.getvalue()
