"""The path-norm toolkit's generalization bound of a PyTorch model on its training set
(pathlift.torch.generalization_bound)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Tuple, Union, cast

import torch
from torch import nn

from ._pathlift import GeneralizationBound, NetworkError
from ._pathlift import generalization_bound as _generalization_bound
from ._progress import display
from ._torch_network import network_of
from ._torch_trace import InputShape

Data = Union[Iterable[Any], Tuple[torch.Tensor, torch.Tensor]]


class TrainingSetBound:
    """Theorem 3.1 on a training set: ``report`` (a :class:`pathlift.GeneralizationBound`, whose
    fields -- D, P, K, C, coefficient, bound, ... -- read through this object too), ``n`` and
    ``input_bound`` (B = max ||x||_inf) measured on the data, ``empirical_loss`` (the mean
    cross-entropy on it), ``train_error`` (the top-1 error on it) and ``loss_bound`` =
    empirical_loss + bound, the theorem's bound on the expected test cross-entropy."""

    def __init__(self, report: GeneralizationBound, empirical_loss: float, train_error: float):
        self.report = report
        self.n = int(report.n)
        self.input_bound = report.B
        self.empirical_loss = empirical_loss
        self.train_error = train_error

    @property
    def loss_bound(self) -> float:
        return self.empirical_loss + self.report.bound

    def __getattr__(self, name: str) -> Any:
        if name == "report":  # not yet set (unpickling, copying)
            raise AttributeError(name)
        return getattr(self.report, name)

    def to_dict(self) -> Dict[str, Any]:
        """The report's JSON form with the empirical terms: empirical_loss, train_error,
        loss_bound."""
        d: Dict[str, Any] = self.report.to_dict()
        d.update(empirical_loss=self.empirical_loss, train_error=self.train_error,
                 loss_bound=self.loss_bound)
        return d

    def __repr__(self) -> str:
        return (f"<pathlift.torch.TrainingSetBound: n={self.n} B={self.input_bound:.6g} "
                f"empirical_loss={self.empirical_loss:.6g} bound={self.report.bound:.6g}>")


def _batches(data: Data, batch_size: int) -> Tuple[Iterable[Any], Optional[int]]:
    """(x, y) batches of a DataLoader (or any iterable of pairs) or of two tensors, and their
    number when known."""
    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(t, torch.Tensor)
                                                          for t in data):
        x, y = data
        if len(x) != len(y):
            raise ValueError(f"pathlift.torch.generalization_bound: {len(x)} inputs but {len(y)} "
                             "labels")
        starts = range(0, len(x), batch_size)
        return ((x[i:i + batch_size], y[i:i + batch_size]) for i in starts), len(starts)
    try:
        count: Optional[int] = len(data)  # type: ignore[arg-type]
    except TypeError:
        count = None
    return data, count


def _network_of_batch(model: nn.Module, x: torch.Tensor, what: str) -> Any:
    """The model's network at the input shape of the data's first batch (x's shape without the
    batch dimension); a refusal says where that shape came from."""
    shape = tuple(x.shape[1:])
    try:
        return network_of(model, shape, what=what)
    except NetworkError as e:
        raise NetworkError(f"{e} (the input shape {shape} is the first batch's, without its batch "
                      "dimension; pass input_shape to give it)") from e


def _check_labels(y: Any, samples: int, out: torch.Tensor, batch: int, what: str) -> None:
    """Labels of one batch: one class index per sample, within the model's outputs."""
    if (not isinstance(y, torch.Tensor) or y.dtype.is_floating_point or y.dtype.is_complex
            or y.dtype == torch.bool or tuple(y.shape) != (samples,)):
        shown = (f"dtype {y.dtype} and shape {tuple(y.shape)}" if isinstance(y, torch.Tensor)
                 else type(y).__name__)
        raise ValueError(f"{what}: the labels of batch {batch} must be an integer tensor of "
                         f"{samples} class indices (one per sample), got {shown}")
    if out.dim() != 2:
        raise ValueError(f"{what}: the model's output must be (batch, classes) for the "
                         f"cross-entropy loss, got shape {tuple(out.shape)}")
    classes = out.shape[1]
    if samples and (int(y.min()) < 0 or int(y.max()) >= classes):
        bad = int(y.min()) if int(y.min()) < 0 else int(y.max())
        raise ValueError(f"{what}: batch {batch} holds the label {bad}, but the model has "
                         f"{classes} outputs (classes 0 to {classes - 1})")


def generalization_bound(model: nn.Module, data: Data, *, input_shape: InputShape = None,
                         batch_size: int = 256, progress: object = None,
                         threads: int = 0) -> TrainingSetBound:
    """The generalization bound of the path-norm toolkit (Theorem 3.1, Remark 3.1;
    :func:`pathlift.generalization_bound`) for ``model`` trained on ``data``: a DataLoader (or
    any iterable of ``(inputs, labels)`` batches, the inputs as the model takes them, i.e.
    normalized) or a pair of tensors ``(X, y)``. One pass over the data, with torch, in eval
    mode and without gradients, measures n, B = max ||x||_inf, the mean cross-entropy and the
    top-1 error (a progress display on a terminal: ``progress`` as everywhere in pathlift);
    then D, P, K, d_in, d_out are read from the model's graph and the L1 path-norm computed
    without unrolling. A module in training mode is refused (``model.eval()`` first), as by
    from_torch; input_shape defaults to the shape of one sample of the data. Returns a
    :class:`TrainingSetBound`. docs/generalization.md."""
    what = "pathlift.torch.generalization_bound"
    if not isinstance(model, nn.Module):
        raise TypeError(f"{what} takes a torch.nn.Module, got {type(model).__name__}")
    batches, count = _batches(data, batch_size)
    show = cast(Optional[Callable[[str, float], None]], display("generalization_bound", progress))
    n = 0
    bound = 0.0
    loss = 0.0
    wrong = 0
    net = network_of(model, input_shape, what=what) if input_shape is not None else None
    try:
        with torch.no_grad():
            for i, batch in enumerate(batches):
                if not isinstance(batch, (tuple, list)) or len(batch) < 2:
                    raise TypeError(f"{what}: each batch must be (inputs, labels), got "
                                    f"{type(batch).__name__}")
                x, y = batch[0], batch[1]
                if net is None:  # traced on the first batch: a training-mode module refused
                    net = _network_of_batch(model, x, what)
                out = model(x)
                _check_labels(y, len(x), out, i, what)
                loss += float(nn.functional.cross_entropy(out.double(), y.long(),
                                                          reduction="sum"))
                wrong += int((out.argmax(dim=1) != y).sum())
                bound = max(bound, float(x.abs().max()) if x.numel() else 0.0)
                n += len(x)
                if show is not None:
                    show("training set", (i + 1) / count if count else -1.0)
    finally:
        close = getattr(show, "close", None)
        if close is not None:
            close()
    if n == 0 or net is None:
        raise ValueError(f"{what}: the data holds no sample")
    report = _generalization_bound(net, n=float(n), input_bound=bound, threads=threads,
                                   progress=progress)
    return TrainingSetBound(report, loss / n, wrong / n)
