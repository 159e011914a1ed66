"""Losses of docs/models.md §1–5 against direct loop-based formulas (values and gradients) and known values."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from torch.testing import assert_close  # noqa: E402

from clirmatrix.models.losses import (  # noqa: E402
    ccp_contrastive,
    cosine_regression,
    in_batch_nll,
    language_contrastive,
    pairwise_hinge,
    pairwise_softmax,
    rtl_loss,
    semantic_contrastive,
    translation_ranking,
)

LN2 = math.log(2.0)


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    """A float64 random leaf tensor that requires grad."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64).requires_grad_(True)


def cos(u, v):
    """Cosine of two vectors, written out."""
    return torch.dot(u, v) / (torch.sqrt(torch.dot(u, u)) * torch.sqrt(torch.dot(v, v)))


def dot(u, v):
    return torch.dot(u, v)


def check_against(impl, direct, inputs):
    """Same value and same gradients w.r.t. every input of both computations."""
    got = impl(*inputs)
    want = direct(*inputs)
    assert got.dim() == 0
    assert_close(got, want)
    grads_got = torch.autograd.grad(got, inputs)
    grads_want = torch.autograd.grad(want, inputs)
    for g, w in zip(grads_got, grads_want):
        assert_close(g, w)


def log_softmax_term(num, dens):
    """log(exp(num) / Σ exp(dens)) over a Python list of scalar tensors."""
    return num - torch.log(sum(torch.exp(d) for d in dens))


# ---- §1 pairwise -------------------------------------------------------------------------------


def test_pairwise_hinge_matches_direct_formula():
    pos, neg = rand(7, seed=1), rand(7, seed=2)

    def direct(pos, neg):
        return sum(torch.clamp(1.5 - pos[p] + neg[p], min=0.0) for p in range(7)) / 7

    check_against(lambda a, b: pairwise_hinge(a, b, margin=1.5), direct, (pos, neg))


def test_pairwise_hinge_zero_beyond_margin_and_linear_inside():
    neg = torch.zeros(1)
    for gap in (1.0, 1.5, 4.0):
        assert pairwise_hinge(torch.tensor([gap]), neg).item() == 0.0
    for gap in (0.75, 0.0, -2.0):
        assert pairwise_hinge(torch.tensor([gap]), neg).item() == pytest.approx(1.0 - gap)
    # Mean over pairs: one satisfied pair (0) and one violated by 0.5.
    assert pairwise_hinge(torch.tensor([3.0, 2.0]), torch.tensor([1.0, 1.5])).item() == pytest.approx(0.25)


def test_pairwise_softmax_matches_direct_formula():
    pos, neg = rand(5, seed=3), rand(5, seed=4)

    def direct(pos, neg):
        terms = [1 - torch.exp(pos[p]) / (torch.exp(pos[p]) + torch.exp(neg[p])) for p in range(5)]
        return sum(terms) / 5

    check_against(pairwise_softmax, direct, (pos, neg))


def test_pairwise_softmax_known_values_and_stability():
    assert pairwise_softmax(torch.tensor([0.3]), torch.tensor([0.3])).item() == pytest.approx(0.5)
    big = pairwise_softmax(torch.tensor([1000.0, 2000.0]), torch.tensor([1000.0, -2000.0]))
    assert big.item() == pytest.approx(0.25)
    assert pairwise_softmax(torch.tensor([1.0]), torch.tensor([0.0])).item() == pytest.approx(
        1 - math.e / (math.e + 1)
    )


# ---- §2a cosine regression ---------------------------------------------------------------------


def test_cosine_regression_matches_direct_formula():
    q, d = rand(4, 5, seed=5), rand(4, 5, seed=6)
    labels = torch.tensor([0, 6, 3, 1])

    def direct(q, d):
        return sum((cos(q[b], d[b]) - labels[b].item() / 6) ** 2 for b in range(4)) / 4

    check_against(lambda q, d: cosine_regression(q, d, labels), direct, (q, d))


def test_cosine_regression_zero_when_cosine_equals_scaled_label():
    labels = torch.tensor([0, 2, 3, 6])
    angles = torch.acos(labels.double() / 6)
    q = torch.tensor([[2.0, 0.0]] * 4, dtype=torch.float64)
    d = 3 * torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)
    assert cosine_regression(q, d, labels).item() == pytest.approx(0.0, abs=1e-12)
    # With r_max = 3 the targets become 0, 2/3, 1, 2 against cosines 0, 1/3, 1/2, 1.
    expected = ((1 / 3) ** 2 + (1 / 2) ** 2 + 1.0) / 4
    assert cosine_regression(q, d, labels, max_label=3).item() == pytest.approx(expected)
    far = cosine_regression(q, -q, torch.tensor([6, 6, 6, 6]))
    assert far.item() == pytest.approx(4.0)


# ---- §2b in-batch NLL --------------------------------------------------------------------------


@pytest.mark.parametrize(("similarity", "fn", "temperature"), [("dot", dot, 1.0), ("cosine", cos, 0.5)])
def test_in_batch_nll_matches_direct_formula(similarity, fn, temperature):
    n, m = 3, 6
    q, p = rand(n, 4, seed=7), rand(m, 4, seed=8)

    def direct(q, p):
        total = 0
        for i in range(n):
            dens = [fn(q[i], p[k]) / temperature for k in range(m)]
            total = total - log_softmax_term(fn(q[i], p[i]) / temperature, dens)
        return total / n

    check_against(lambda q, p: in_batch_nll(q, p, similarity=similarity, temperature=temperature), direct, (q, p))


def test_in_batch_nll_is_log_m_for_identical_embeddings():
    vec = torch.tensor([0.2, -1.0, 0.7])
    q, p = vec.repeat(3, 1), vec.repeat(8, 1)
    for similarity in ("dot", "cosine"):
        assert in_batch_nll(q, p, similarity=similarity).item() == pytest.approx(math.log(8))


def test_in_batch_nll_rejects_unknown_similarity_and_too_few_passages():
    q = torch.ones(2, 3)
    with pytest.raises(ValueError, match="euclid"):
        in_batch_nll(q, torch.ones(4, 3), similarity="euclid")
    with pytest.raises(ValueError):
        in_batch_nll(q, torch.ones(1, 3))


# ---- §3 semaCL / langCL ------------------------------------------------------------------------


def test_semantic_contrastive_matches_direct_formula():
    n, tau = 3, 0.05
    z_a, z_b = rand(n, 4, seed=9), rand(n, 4, seed=10)

    def direct(z_a, z_b):
        z = [z_a[i] for i in range(n)] + [z_b[i] for i in range(n)]
        total = 0
        for i in range(n):
            j = n + i
            for anchor, positive in ((i, j), (j, i)):
                dens = [cos(z[anchor], z[k]) / tau for k in range(2 * n) if k != anchor]
                total = total - log_softmax_term(cos(z[anchor], z[positive]) / tau, dens)
        return total / (2 * n)

    check_against(semantic_contrastive, direct, (z_a, z_b))


def test_semantic_contrastive_falls_when_pairs_become_identical():
    z_a, z_b = rand(4, 6, seed=11).detach(), rand(4, 6, seed=12).detach()
    unaligned = semantic_contrastive(z_a, z_b)
    aligned = semantic_contrastive(z_a, 2.0 * z_a)
    assert aligned.item() < unaligned.item()
    # The positive is in the denominator: with equal pairs, each term is −log(e^{1/τ}/(e^{1/τ}+Σ others)) > 0.
    assert aligned.item() > 0.0


@pytest.mark.parametrize("n_extra", [0, 2])
def test_language_contrastive_matches_direct_formula(n_extra):
    n = 3
    z_a, z_b = rand(n, 4, seed=13), rand(n, 4, seed=14)
    inputs = (z_a, z_b) + ((rand(n_extra, 4, seed=15),) if n_extra else ())

    def direct(z_a, z_b, z_extra=None):
        z = [z_a[i] for i in range(n)] + [z_b[i] for i in range(n)]
        if z_extra is not None:
            z += [z_extra[k] for k in range(n_extra)]
        total, count = 0, 0
        for i in range(n):
            j = n + i
            for k in range(len(z)):
                if k in (i, j):
                    continue
                a, b = torch.exp(cos(z[i], z[k])), torch.exp(cos(z[j], z[k]))
                total = total - (torch.log(a / (a + b)) + torch.log(b / (a + b)))
                count += 1
        assert count == n * (2 * n + n_extra - 2)
        return total / (2 * count)

    check_against(language_contrastive, direct, inputs)


def test_language_contrastive_is_ln2_exactly_when_cosines_tie():
    z = rand(4, 5, seed=16).detach()
    extra = rand(3, 5, seed=17).detach()
    # Both sides of each pair point the same way, so cos(z_i,z_k) = cos(z_j,z_k) for every k.
    assert_close(language_contrastive(z, 3.0 * z, extra), torch.tensor(LN2, dtype=torch.float64))
    assert_close(language_contrastive(z, z), torch.tensor(LN2, dtype=torch.float64))
    identical = torch.ones(3, 4)
    assert_close(language_contrastive(identical, identical, torch.ones(2, 4)), torch.tensor(LN2))
    # Otherwise strictly above the minimum.
    assert language_contrastive(z, rand(4, 5, seed=18).detach(), extra).item() > LN2 + 1e-6


def test_language_contrastive_needs_some_k():
    with pytest.raises(ValueError):
        language_contrastive(torch.ones(1, 3), torch.ones(1, 3))
    assert language_contrastive(torch.ones(1, 3), torch.ones(1, 3), torch.ones(1, 3)).item() == pytest.approx(LN2)


# ---- §4 DAP ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("similarity", "phi"), [("cosine", lambda u, v: 20.0 * cos(u, v)), ("dot", dot)])
def test_translation_ranking_matches_direct_formula(similarity, phi):
    n = 4
    x, y = rand(n, 3, seed=19), rand(n, 3, seed=20)

    def direct(x, y):
        total = 0
        for i in range(n):
            total = total - log_softmax_term(phi(x[i], y[i]), [phi(x[i], y[j]) for j in range(n)])
        return total / n

    check_against(lambda x, y: translation_ranking(x, y, similarity=similarity), direct, (x, y))


def test_translation_ranking_softmax_over_english_side_only():
    x, y = rand(4, 3, seed=21), rand(4, 3, seed=22)
    loss = translation_ranking(x, y)
    (grad_x,) = torch.autograd.grad(loss, x, create_graph=True)
    # Term 0 depends on x_0 only: the gradient w.r.t. x_0 does not move with any other x_j.
    (cross,) = torch.autograd.grad(grad_x[0].sum(), x, retain_graph=True)
    assert torch.count_nonzero(cross[1:]) == 0
    assert torch.count_nonzero(cross[0]) > 0
    # ... but it does move with the English negatives y_j.
    (cross_y,) = torch.autograd.grad(grad_x[0].sum(), y)
    assert torch.count_nonzero(cross_y[1:]) > 0
    # Changing x_1 changes only term 1: the mean moves by (new term 1 − old term 1)/N.
    def term(x, y, i):
        scores = torch.stack([20.0 * cos(x[i], y[j]) for j in range(4)])
        return -(scores[i] - torch.logsumexp(scores, 0))

    x2 = x.detach().clone()
    x2[1] = torch.tensor([5.0, -1.0, 0.5], dtype=torch.float64)
    delta = translation_ranking(x2, y.detach()) - translation_ranking(x.detach(), y.detach())
    assert_close(delta, (term(x2, y.detach(), 1) - term(x.detach(), y.detach(), 1)) / 4)


def test_translation_ranking_rejects_unknown_similarity():
    with pytest.raises(ValueError, match="l2"):
        translation_ranking(torch.ones(2, 3), torch.ones(2, 3), similarity="l2")


def test_rtl_loss_matches_direct_formula_and_ignores_positions():
    b, s, v = 2, 4, 5
    logits = rand(b, s, v, seed=23)
    targets = torch.tensor([[1, 4, -100, -100], [-100, 0, 2, 3]])

    def direct(logits):
        total, count = 0, 0
        for bi in range(b):
            for t in range(s):
                tok = targets[bi, t].item()
                if tok == -100:
                    continue
                row = logits[bi, t]
                total = total - (row[tok] - torch.log(sum(torch.exp(row[c]) for c in range(v))))
                count += 1
        return total / count

    check_against(lambda lg: rtl_loss(lg, targets), direct, (logits,))
    (grad,) = torch.autograd.grad(rtl_loss(logits, targets), logits)
    assert torch.count_nonzero(grad[targets == -100]) == 0
    # Garbage at ignored positions changes nothing.
    noisy = logits.detach().clone()
    noisy[targets == -100] = 1e3
    assert_close(rtl_loss(noisy, targets), rtl_loss(logits.detach(), targets))
    # A custom ignore_index: 0 (pad) is skipped, -100 would be an error only if it were a class.
    pad_targets = targets.clamp(min=0)
    kept = pad_targets != 0
    expected = torch.nn.functional.cross_entropy(logits.detach()[kept], pad_targets[kept])
    assert_close(rtl_loss(logits.detach(), pad_targets, ignore_index=0), expected)


# ---- §5 CCP ------------------------------------------------------------------------------------


def ccp_direct(z_c, z_x, bank, tau):
    """Algorithm 1 written out: normalise, then −log(e^{a·p/τ} / Σ_{k≠a} e^{a·k/τ}) averaged over 2N anchors."""
    n = z_c.shape[0]
    z = [z_c[i] / torch.sqrt(torch.dot(z_c[i], z_c[i])) for i in range(n)]
    z += [z_x[i] / torch.sqrt(torch.dot(z_x[i], z_x[i])) for i in range(n)]
    others = [] if bank is None else [bank[k] for k in range(bank.shape[0])]
    total = 0
    for a in range(2 * n):
        p = (a + n) % (2 * n)
        dens = [dot(z[a], z[k]) / tau for k in range(2 * n) if k != a]
        dens += [dot(z[a], m) / tau for m in others]
        total = total - log_softmax_term(dot(z[a], z[p]) / tau, dens)
    return total / (2 * n)


def test_ccp_matches_direct_formula_without_bank():
    z_c, z_x = rand(3, 4, seed=24), rand(3, 4, seed=25)
    check_against(ccp_contrastive, lambda a, b: ccp_direct(a, b, None, 0.1), (z_c, z_x))


def test_ccp_matches_direct_formula_with_bank_and_bank_gets_no_gradient():
    z_c, z_x = rand(3, 4, seed=26), rand(3, 4, seed=27)
    bank = torch.nn.functional.normalize(rand(5, 4, seed=28).detach(), dim=1)
    check_against(
        lambda a, b: ccp_contrastive(a, b, bank, temperature=0.2),
        lambda a, b: ccp_direct(a, b, bank, 0.2),
        (z_c, z_x),
    )
    bank.requires_grad_(True)
    (grad_bank,) = torch.autograd.grad(ccp_contrastive(z_c, z_x, bank), bank, allow_unused=True)
    assert grad_bank is None or torch.count_nonzero(grad_bank) == 0


def test_ccp_bank_rows_add_negatives():
    z_c, z_x = rand(3, 4, seed=29).detach(), rand(3, 4, seed=30).detach()
    without = ccp_contrastive(z_c, z_x)
    hard = torch.nn.functional.normalize(z_c[:1], dim=1)  # a bank row in anchor 0's direction
    assert ccp_contrastive(z_c, z_x, hard).item() > without.item()
    far = torch.nn.functional.normalize(-z_c[:1], dim=1)
    assert without.item() < ccp_contrastive(z_c, z_x, far).item() < ccp_contrastive(z_c, z_x, hard).item()


def test_losses_keep_dtype():
    z = torch.randn(3, 4, dtype=torch.float32)
    for loss in (
        semantic_contrastive(z, z + 0.1),
        language_contrastive(z, z + 0.1),
        ccp_contrastive(z, z + 0.1, torch.nn.functional.normalize(torch.randn(2, 4), dim=1)),
        in_batch_nll(z, z, "cosine"),
        translation_ranking(z, z),
    ):
        assert loss.dtype == torch.float32 and loss.dim() == 0 and torch.isfinite(loss)


def test_losses_and_similarity_logits_stay_fp32_under_bf16_autocast():
    # bf16 keeps 8 bits of mantissa: a cosine matrix under autocast is off by ~1e-2, enough to
    # turn a hinge into exactly 0.875 and langCL's minimum into 0.6953125 instead of ln 2.
    gen = torch.Generator().manual_seed(3)
    a, b, extra, bank = (torch.randn(*shape, generator=gen) for shape in ((16, 32), (16, 32), (8, 32), (20, 32)))
    bank = torch.nn.functional.normalize(bank, dim=-1)
    labels = torch.randint(0, 7, (16,), generator=gen)
    cases = {
        "semaCL": lambda: semantic_contrastive(a, b),
        "langCL": lambda: language_contrastive(a, b, extra),
        "in-batch": lambda: in_batch_nll(a, b),
        "in-batch cosine": lambda: in_batch_nll(a, b, similarity="cosine", temperature=0.05),
        "TR": lambda: translation_ranking(a, b),
        "CCP": lambda: ccp_contrastive(a, b, bank),
        "cosine regression": lambda: cosine_regression(a, b, labels),
    }
    for name, loss in cases.items():
        exact = loss()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            mixed = loss()
            bf16_logits = a @ b.T  # what autocast would have done to the logits
        assert mixed.dtype == torch.float32, name
        assert_close(mixed, exact, rtol=1e-6, atol=1e-6, msg=name)
    assert bf16_logits.dtype == torch.bfloat16  # autocast was really on
    tied = torch.ones(4, 8) + torch.arange(8) * 1e-3  # every cosine equal: langCL at its minimum
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert language_contrastive(tied, tied.clone()).item() == pytest.approx(LN2, abs=1e-6)


def test_the_cross_encoder_scores_in_fp32_under_autocast():
    from clirmatrix.models.modeling.cross_encoder import CrossEncoder

    class Tiny(torch.nn.Module):  # stands for the transformer: states in the autocast dtype, as a real one gives
        config = type("Config", (), {"hidden_size": 8})

        def forward(self, input_ids, attention_mask):
            return type("Out", (), {"last_hidden_state": torch.randn(input_ids.shape[0], input_ids.shape[1], 8).to(torch.bfloat16)})

    model = CrossEncoder(Tiny()).eval()
    batch = {"input_ids": torch.ones(3, 5, dtype=torch.long), "attention_mask": torch.ones(3, 5, dtype=torch.long)}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        scores = model(batch)
    assert scores.dtype == torch.float32 and scores.shape == (3,)
