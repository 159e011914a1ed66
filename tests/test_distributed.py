"""Several processes training as one: gloo process groups on 127.0.0.1, started here.

What a user of ``torchrun`` relies on: in-batch losses see every process's examples
with gradients equal to one process holding the whole batch, and the bucketed gradient
average is the mean of every process's gradients.
"""

from __future__ import annotations

import multiprocessing
import os
import socket

import pytest

torch = pytest.importorskip("torch", reason="the trainer needs the train extra (torch, transformers)")

from clirmatrix.models import distributed  # noqa: E402
from clirmatrix.models.losses import in_batch_nll  # noqa: E402
from clirmatrix.models.recipes.base import gather_pairs  # noqa: E402

WORLD, PER_RANK, HIDDEN = 2, 3, 5


def whole_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and their passages (positives, then hard negatives) of the whole batch, the same in every process."""
    generator = torch.Generator().manual_seed(7)
    return torch.randn(WORLD * PER_RANK, HIDDEN, generator=generator), torch.randn(2 * WORLD * PER_RANK, HIDDEN, generator=generator)


def rank_share(rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's queries and its passages laid out as a recipe has them: its positives, then its negatives."""
    queries, passages = whole_batch()
    rows = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    positives, negatives = passages[: WORLD * PER_RANK], passages[WORLD * PER_RANK :]
    return queries[rows].clone(), torch.cat([positives[rows], negatives[rows]]).clone()


def worker(rank: int, port: int, results) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        process = distributed.Process(rank, WORLD, rank)
        queries, passages = (tensor.requires_grad_() for tensor in rank_share(rank))
        loss = in_batch_nll(*gather_pairs(queries, passages), similarity="cosine", temperature=0.05)
        loss.backward()
        # the division average_gradients makes: the mean over processes
        grads = (queries.grad / WORLD, passages.grad / WORLD)

        distributed.BUCKET_ELEMENTS = 4  # several buckets for these few values
        parameters = [torch.nn.Parameter(torch.zeros(shape)) for shape in ((3,), (2, 2), (1,))]
        for number, parameter in enumerate(parameters):
            parameter.grad = torch.full(parameter.shape, float(10 * rank + number))
        distributed.average_gradients(parameters, process)
        results.put((rank, loss.item(), [grad.tolist() for grad in grads], [parameter.grad.tolist() for parameter in parameters]))
    finally:
        torch.distributed.destroy_process_group()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_gathered_in_batch_negatives_and_bucketed_averages_equal_one_process_with_the_whole_batch():
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    workers = [context.Process(target=worker, args=(rank, port, results)) for rank in range(WORLD)]
    for process in workers:
        process.start()
    try:
        outcome = {rank: rest for rank, *rest in (results.get(timeout=120) for _ in range(WORLD))}
    finally:
        for process in workers:
            process.join(timeout=60)
    assert all(process.exitcode == 0 for process in workers)

    queries, passages = (tensor.requires_grad_() for tensor in whole_batch())
    expected = in_batch_nll(queries, passages, similarity="cosine", temperature=0.05)
    expected.backward()
    for rank, (loss, (query_grad, passage_grad), averaged) in outcome.items():
        assert loss == pytest.approx(expected.item(), rel=1e-6)  # every rank computes the whole batch's loss
        rows = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
        half = WORLD * PER_RANK
        assert torch.allclose(torch.tensor(query_grad), queries.grad[rows], atol=1e-6)
        assert torch.allclose(torch.tensor(passage_grad), torch.cat([passages.grad[:half][rows], passages.grad[half:][rows]]), atol=1e-6)
        for number, grad in enumerate(averaged):  # the mean of rank 0's (number) and rank 1's (10 + number)
            assert torch.equal(torch.tensor(grad), torch.full(torch.tensor(grad).shape, number + 5.0))
