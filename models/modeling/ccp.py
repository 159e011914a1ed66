"""CCP's training state and post-processing (docs/models.md §5, [CCP] §3, Algorithm 1).

``ProjectionHead`` is the SimCLR-style head g with asymmetric BatchNorm, ``MemoryBanks`` the
language-specific FIFO queues of negatives, and ``Calibration`` the shift/scale/rotate
post-processing of [CCP] §3.2 (docs/models.md §8.10). The loss is ``losses.ccp``.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.localio import atomic_write

_CALIBRATION_FORMAT = "clirmatrix.calibration/1"


class ProjectionHead(nn.Module):
    """g = Linear -> BatchNorm1d -> ReLU -> Linear, used only for the CCP loss (docs/models.md §5, §8.9).

    ``forward(h, batch_stats)`` picks the BatchNorm mode per call, ignoring ``self.training``:
    that is how Algorithm 1's asymmetric BN runs the centre batch with batch statistics and
    the context batch with running statistics, swapping roles every step.

    Args:
        hidden_size: width of the sentence vector h (and of the hidden layer).
        out_size: width of z; defaults to ``hidden_size`` (docs/models.md §8.9).
    """

    def __init__(self, hidden_size: int, out_size: int | None = None):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, hidden_size)
        self.bn = nn.BatchNorm1d(hidden_size)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(hidden_size, hidden_size if out_size is None else out_size)

    def forward(self, h: Tensor, batch_stats: bool) -> Tensor:
        """Project [N, H] sentence vectors to [N, out_size].

        Args:
            h: [N, H] sentence vectors.
            batch_stats: True: normalise with this batch's statistics and update the running
                statistics (BN "train mode"); False: normalise with the running statistics and
                update nothing (BN "eval mode").

        Returns:
            [N, out_size] z.
        """
        bn = self.bn
        momentum = bn.momentum
        if batch_stats:
            bn.num_batches_tracked.add_(1)
            if momentum is None:  # cumulative moving average, as nn.BatchNorm1d does
                momentum = 1.0 / float(bn.num_batches_tracked)
        normalised = F.batch_norm(
            self.fc1(h),
            bn.running_mean,
            bn.running_var,
            bn.weight,
            bn.bias,
            training=batch_stats,
            momentum=0.0 if momentum is None else momentum,
            eps=bn.eps,
        )
        return self.fc2(self.act(normalised))


class MemoryBanks:
    """One FIFO queue per language of detached, L2-normalised vectors ([CCP] §3.1, docs/models.md §5).

    Device and dtype: a language's queue lives where its latest pushed batch lives (an
    older queue is moved and cast on push); ``to(device)`` moves every queue. An empty
    result of :meth:`negatives` is made on the device and dtype of the latest push or
    ``to`` call (CPU float32 before either).

    Args:
        size: most vectors kept per language (32,768 in [CCP] §4).
        dim: width of the vectors.

    Raises:
        ValueError: ``size`` or ``dim`` below 1.
    """

    def __init__(self, size: int, dim: int):
        if size < 1 or dim < 1:
            raise ValueError(f"size and dim must be at least 1, got size={size}, dim={dim}")
        self.size = size
        self.dim = dim
        self._queues: dict[str, Tensor] = {}
        self._device = torch.device("cpu")
        self._dtype = torch.float32

    @property
    def languages(self) -> list[str]:
        """Languages with a queue, in first-push order."""
        return list(self._queues)

    def negatives(self, lang: str) -> Tensor:
        """[n, dim] vectors of ``lang``, oldest first (n <= size; [0, dim] before any push).

        The returned tensor is never modified in place by later pushes.
        """
        queue = self._queues.get(lang)
        if queue is None:
            return torch.empty(0, self.dim, device=self._device, dtype=self._dtype)
        return queue

    def push(self, lang: str, z: Tensor) -> None:
        """Detach and L2-normalise [n, dim] vectors, enqueue them, and drop the oldest beyond ``size``.

        Raises:
            ValueError: ``z`` is not [n, dim].
        """
        if z.dim() != 2 or z.shape[1] != self.dim:
            raise ValueError(f"memory bank takes [n, {self.dim}] vectors, got {tuple(z.shape)}")
        fresh = F.normalize(z.detach(), dim=-1)
        self._device, self._dtype = fresh.device, fresh.dtype
        queue = self._queues.get(lang)
        if queue is not None:
            fresh = torch.cat([queue.to(device=fresh.device, dtype=fresh.dtype), fresh])
        self._queues[lang] = fresh[-self.size :]

    def to(self, device: torch.device | str) -> MemoryBanks:
        """Move every queue to ``device``; returns self."""
        self._device = torch.device(device)
        self._queues = {lang: queue.to(self._device) for lang, queue in self._queues.items()}
        return self

    def state_dict(self) -> dict[str, Tensor]:
        """``{lang: [n, dim] tensor}``, for a checkpoint."""
        return dict(self._queues)

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        """Replace all queues by those of :meth:`state_dict` (keeping the newest ``size`` of each).

        Raises:
            ValueError: a tensor is not [n, dim].
        """
        queues = {}
        for lang, queue in state.items():
            if queue.dim() != 2 or queue.shape[1] != self.dim:
                raise ValueError(f"memory bank {lang!r}: expected [n, {self.dim}], got {tuple(queue.shape)}")
            queues[lang] = queue.detach()[-self.size :]
        self._queues = queues


class CalibrationError(KeyError):
    """A language without statistics, or a language pair without a fitted rotation."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Calibration:
    """Cross-lingual calibration of sentence embeddings: shift, scale, rotate ([CCP] §3.2, docs/models.md §5, §8.10).

    Per-language mean and spread are streamed (:meth:`update`, Chan et al.'s parallel form
    of Welford's algorithm in float64, so no embedding is kept). The rotation W_{L->L'} is an
    orthogonal Procrustes fit on pairs of translations ("supervised calibration", §8.10).
    Statistics and rotations are held on CPU in float64; :meth:`transform` returns the
    dtype and device of its input.

    Args:
        eps: floor on the spread, so a constant dimension does not divide by zero.
    """

    def __init__(self, eps: float = 1e-8):
        self.eps = eps
        self._count: dict[str, int] = {}
        self._mean: dict[str, Tensor] = {}
        self._m2: dict[str, Tensor] = {}  # sum of squared deviations from the mean
        self._rotations: dict[tuple[str, str], Tensor] = {}

    @property
    def languages(self) -> list[str]:
        """Languages with statistics."""
        return list(self._count)

    def update(self, lang: str, emb: Tensor) -> None:
        """Add [n, H] embeddings of ``lang`` to its running mean and spread.

        Raises:
            ValueError: ``emb`` is not 2-D, or its width differs from earlier chunks.
        """
        if emb.dim() != 2:
            raise ValueError(f"calibration takes [n, H] embeddings, got {tuple(emb.shape)}")
        n = emb.shape[0]
        if n == 0:
            return
        chunk = emb.detach().to(torch.float64)
        chunk_mean = chunk.mean(dim=0)
        chunk_m2 = ((chunk - chunk_mean) ** 2).sum(dim=0).cpu()
        chunk_mean = chunk_mean.cpu()
        if lang not in self._count:
            self._count[lang], self._mean[lang], self._m2[lang] = n, chunk_mean, chunk_m2
            return
        if chunk_mean.shape != self._mean[lang].shape:
            width, earlier = chunk_mean.shape[0], self._mean[lang].shape[0]
            raise ValueError(f"{lang}: width {width} differs from the earlier {earlier}")
        seen = self._count[lang]
        total = seen + n
        delta = chunk_mean - self._mean[lang]
        self._mean[lang] = self._mean[lang] + delta * (n / total)
        self._m2[lang] = self._m2[lang] + chunk_m2 + delta**2 * (seen * n / total)
        self._count[lang] = total

    def count(self, lang: str) -> int:
        """How many embeddings of ``lang`` were seen (0 if none)."""
        return self._count.get(lang, 0)

    def mean(self, lang: str) -> Tensor:
        """[H] float64 mean embedding μ_L.

        Raises:
            CalibrationError: no statistics for ``lang``.
        """
        self._require_stats(lang)
        return self._mean[lang].clone()

    def std(self, lang: str) -> Tensor:
        """[H] float64 per-dimension population standard deviation σ_L (ddof 0, as ``numpy.std``).

        Raises:
            CalibrationError: no statistics for ``lang``.
        """
        self._require_stats(lang)
        return (self._m2[lang] / self._count[lang]).sqrt()

    def fit_rotation(self, src: str, tgt: str, x: Tensor, y: Tensor) -> Tensor:
        """Fit and keep the orthogonal W_{src->tgt} minimising Σ_n ‖W x_n − y_n‖ (Procrustes).

        W = U Vᵀ with U Σ Vᵀ = SVD(Σ_n y_n x_nᵀ), so W x ≈ y.

        Args:
            src: language of ``x``.
            tgt: language of ``y``.
            x: [n, H] shifted and scaled embeddings of ``src`` (``transform(src, ...)``).
            y: [n, H] the same for their translations in ``tgt``; y[i] translates x[i].

        Returns:
            [H, H] float64 W.

        Raises:
            ValueError: ``x`` and ``y`` are not the same [n, H] shape with n >= 1.
        """
        if x.dim() != 2 or x.shape != y.shape or x.shape[0] == 0:
            raise ValueError(
                f"fit_rotation needs two [n, H] tensors of one shape, got {tuple(x.shape)} and {tuple(y.shape)}"
            )
        x64 = x.detach().to(device="cpu", dtype=torch.float64)
        y64 = y.detach().to(device="cpu", dtype=torch.float64)
        u, _, vh = torch.linalg.svd(y64.T @ x64)
        rotation = u @ vh
        self._rotations[(src, tgt)] = rotation
        return rotation.clone()

    def rotation(self, src: str, tgt: str) -> Tensor:
        """The fitted [H, H] float64 W_{src->tgt}.

        Raises:
            CalibrationError: no rotation fitted for the pair.
        """
        rotation = self._rotations.get((src, tgt))
        if rotation is None:
            fitted = ", ".join(f"{a}->{b}" for a, b in self._rotations) or "none"
            raise CalibrationError(f"no rotation fitted for {src}->{tgt} (fitted: {fitted})")
        return rotation.clone()

    def transform(self, lang: str, emb: Tensor, into: str | None = None) -> Tensor:
        """Shift and scale [..., H] embeddings of ``lang``; with ``into``, rotate them into that language's space.

        ``into`` equal to ``lang`` (or None) applies no rotation.

        Raises:
            CalibrationError: no statistics for ``lang``, or no rotation ``lang``->``into``.
        """
        self._require_stats(lang)
        rotation = None if into is None or into == lang else self.rotation(lang, into)
        device = emb.device
        spread = self.std(lang).clamp_min(self.eps).to(device)
        out = (emb.to(torch.float64) - self._mean[lang].to(device)) / spread
        if rotation is not None:
            out = out @ rotation.to(device).T
        return out.to(emb.dtype)

    def save(self, path: str | os.PathLike) -> None:
        """Write statistics and rotations with ``torch.save``, atomically (temporary file, then rename)."""
        state = {
            "format": _CALIBRATION_FORMAT,
            "eps": self.eps,
            "stats": {
                lang: {"count": self._count[lang], "mean": self._mean[lang], "m2": self._m2[lang]}
                for lang in self._count
            },
            "rotations": [[src, tgt, w] for (src, tgt), w in self._rotations.items()],
        }
        with atomic_write(path) as handle:
            torch.save(state, handle)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Calibration:
        """Read a :meth:`save` file.

        Raises:
            ValueError: the file is not a calibration file.
        """
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or state.get("format") != _CALIBRATION_FORMAT:
            raise InvalidInputError(f"{path} is not a {_CALIBRATION_FORMAT} file")
        calibration = cls(eps=state["eps"])
        for lang, stats in state["stats"].items():
            calibration._count[lang] = int(stats["count"])
            calibration._mean[lang] = stats["mean"]
            calibration._m2[lang] = stats["m2"]
        for src, tgt, rotation in state["rotations"]:
            calibration._rotations[(src, tgt)] = rotation
        return calibration

    def _require_stats(self, lang: str) -> None:
        if lang not in self._count:
            known = ", ".join(self._count) or "none"
            raise CalibrationError(f"no calibration statistics for {lang!r} (have: {known})")
