"""The DAP and CCP modules (docs/models.md §4, §5): projection head, memory banks, calibration, RTL head."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from clirmatrix.models.modeling.ccp import Calibration, CalibrationError, MemoryBanks, ProjectionHead  # noqa: E402
from clirmatrix.models.modeling.dap import RtlHead, TranslationProjection  # noqa: E402

MASK_ID = 4


# ---------------------------------------------------------------- ProjectionHead


def _bn_output(head: ProjectionHead, h, batch_stats: bool):
    """The BatchNorm output inside the head (the ReLU's input), captured by a hook."""
    seen = []
    handle = head.act.register_forward_hook(lambda module, inputs, output: seen.append(inputs[0].detach()))
    try:
        z = head(h, batch_stats=batch_stats)
    finally:
        handle.remove()
    return z, seen[0]


@pytest.mark.parametrize("module_mode", ["train", "eval"])
def test_projection_head_batch_stats_normalises_and_updates(module_mode):
    torch.manual_seed(0)
    head = ProjectionHead(8, out_size=5)
    getattr(head, module_mode)()
    h = torch.randn(64, 8) * 3 + 2
    before = head.bn.running_mean.clone()
    z, normalised = _bn_output(head, h, batch_stats=True)
    assert z.shape == (64, 5)
    assert torch.allclose(normalised.mean(0), torch.zeros(8), atol=1e-5)
    assert torch.allclose(normalised.var(0, unbiased=False), torch.ones(8), atol=1e-3)
    assert not torch.allclose(head.bn.running_mean, before)
    expected = 0.9 * before + 0.1 * head.fc1(h).detach().mean(0)
    assert torch.allclose(head.bn.running_mean, expected, atol=1e-6)


@pytest.mark.parametrize("module_mode", ["train", "eval"])
def test_projection_head_running_stats_uses_and_keeps_them(module_mode):
    torch.manual_seed(0)
    head = ProjectionHead(8)
    head(torch.randn(32, 8) * 2 + 1, batch_stats=True)  # move the running stats off their init
    getattr(head, module_mode)()
    mean, var = head.bn.running_mean.clone(), head.bn.running_var.clone()
    tracked = head.bn.num_batches_tracked.clone()
    h = torch.randn(16, 8)
    z, normalised = _bn_output(head, h, batch_stats=False)
    assert torch.equal(head.bn.running_mean, mean)
    assert torch.equal(head.bn.running_var, var)
    assert torch.equal(head.bn.num_batches_tracked, tracked)
    with torch.no_grad():
        manual = (head.fc1(h) - mean) / torch.sqrt(var + head.bn.eps) * head.bn.weight + head.bn.bias
        assert torch.allclose(normalised, manual, atol=1e-5)
        assert torch.allclose(z, head.fc2(torch.relu(manual)), atol=1e-5)


def test_projection_head_modes_differ_and_backpropagate():
    torch.manual_seed(0)
    head = ProjectionHead(8)
    h = torch.randn(16, 8, requires_grad=True)
    a = head(h, batch_stats=True)
    b = head(h, batch_stats=False)
    assert not torch.allclose(a, b)
    (a.sum() + b.sum()).backward()
    assert h.grad is not None and head.bn.weight.grad is not None


# ---------------------------------------------------------------- MemoryBanks


def test_memory_bank_fifo_cap_and_isolation():
    banks = MemoryBanks(size=5, dim=3)
    assert banks.negatives("de").shape == (0, 3)
    vectors = torch.randn(7, 3)
    banks.push("de", vectors[:3])
    banks.push("fr", torch.randn(2, 3))
    banks.push("de", vectors[3:7])
    kept = banks.negatives("de")
    assert kept.shape == (5, 3)
    assert torch.allclose(kept, torch.nn.functional.normalize(vectors[2:7], dim=-1))  # oldest two dropped, order kept
    assert banks.negatives("fr").shape == (2, 3)
    assert banks.negatives("ru").shape == (0, 3)
    banks.push("de", torch.randn(9, 3))  # a push larger than the cap keeps its newest rows
    assert banks.negatives("de").shape == (5, 3)


def test_memory_bank_detached_unit_norm_and_stable_result():
    banks = MemoryBanks(size=10, dim=4)
    z = (torch.randn(6, 4) * 7).requires_grad_()
    banks.push("en", z)
    first = banks.negatives("en")
    assert not first.requires_grad
    assert torch.allclose(first.norm(dim=-1), torch.ones(6), atol=1e-6)
    snapshot = first.clone()
    banks.push("en", torch.randn(6, 4))
    assert torch.equal(first, snapshot)
    with pytest.raises(ValueError):
        banks.push("en", torch.randn(2, 5))


def test_memory_bank_state_dict_round_trip(tmp_path):
    banks = MemoryBanks(size=4, dim=3)
    banks.push("de", torch.randn(3, 3))
    banks.push("ja", torch.randn(6, 3))
    path = tmp_path / "banks.pt"
    torch.save(banks.state_dict(), path)
    restored = MemoryBanks(size=4, dim=3)
    restored.load_state_dict(torch.load(path, weights_only=True))
    assert restored.languages == ["de", "ja"]
    for lang in ("de", "ja"):
        assert torch.equal(restored.negatives(lang), banks.negatives(lang))


# ---------------------------------------------------------------- Calibration


def test_calibration_streaming_stats_match_numpy():
    rng = np.random.default_rng(0)
    data = rng.normal(loc=5.0, scale=[0.5, 2.0, 10.0], size=(1000, 3)).astype(np.float32)
    calibration = Calibration()
    for chunk in np.array_split(data, [1, 7, 300, 301, 640]):
        calibration.update("de", torch.from_numpy(chunk))
    assert calibration.count("de") == 1000
    np.testing.assert_allclose(calibration.mean("de").numpy(), data.astype(np.float64).mean(0), rtol=1e-12)
    np.testing.assert_allclose(calibration.std("de").numpy(), data.astype(np.float64).std(0), rtol=1e-10)


def test_calibration_transform_zero_mean_unit_std():
    torch.manual_seed(0)
    data = torch.randn(500, 4) * torch.tensor([1.0, 3.0, 0.2, 8.0]) + torch.tensor([4.0, -2.0, 0.0, 9.0])
    calibration = Calibration()
    calibration.update("fr", data[:200])
    calibration.update("fr", data[200:])
    out = calibration.transform("fr", data)
    assert out.dtype == data.dtype
    assert torch.allclose(out.mean(0), torch.zeros(4), atol=1e-5)
    assert torch.allclose(out.std(0, unbiased=False), torch.ones(4), atol=1e-5)


def _random_orthogonal(dim: int, seed: int):
    q, r = torch.linalg.qr(torch.randn(dim, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


def test_calibration_fit_rotation_recovers_orthogonal_map():
    torch.manual_seed(0)
    w_true = _random_orthogonal(6, seed=1)
    x = torch.randn(400, 6, dtype=torch.float64)
    y = x @ w_true.T + 0.05 * torch.randn(400, 6, dtype=torch.float64)
    calibration = Calibration()
    w = calibration.fit_rotation("de", "en", x, y)
    assert torch.allclose(w, w_true, atol=0.02)
    assert torch.allclose(w @ w.T, torch.eye(6, dtype=torch.float64), atol=1e-10)


def test_calibration_transform_rotates_into_target_space():
    torch.manual_seed(0)
    w_true = _random_orthogonal(5, seed=2)
    x = torch.randn(300, 5, dtype=torch.float64) * 2 + 3
    calibration = Calibration()
    calibration.update("de", x)
    calibration.update("en", torch.randn(300, 5, dtype=torch.float64))
    x_cal = calibration.transform("de", x)
    calibration.fit_rotation("de", "en", x_cal, x_cal @ w_true.T)
    assert torch.allclose(calibration.transform("de", x, into="en"), x_cal @ w_true.T, atol=1e-8)
    assert torch.allclose(calibration.transform("de", x, into="de"), x_cal)


def test_calibration_errors_name_what_is_missing():
    calibration = Calibration()
    calibration.update("de", torch.randn(10, 3))
    calibration.update("en", torch.randn(10, 3))
    with pytest.raises(CalibrationError, match="de->en"):
        calibration.transform("de", torch.randn(2, 3), into="en")
    with pytest.raises(KeyError, match="'xx'"):
        calibration.mean("xx")


def test_calibration_save_load_round_trip(tmp_path):
    calibration = Calibration(eps=1e-6)
    calibration.update("de", torch.randn(50, 4) + 1)
    calibration.update("en", torch.randn(40, 4) - 1)
    calibration.fit_rotation("de", "en", torch.randn(20, 4), torch.randn(20, 4))
    path = tmp_path / "calibration" / "cal.pt"
    calibration.save(path)
    assert [p.name for p in path.parent.iterdir()] == ["cal.pt"]  # no temporary file left
    restored = Calibration.load(path)
    assert restored.eps == 1e-6
    emb = torch.randn(7, 4)
    for lang in ("de", "en"):
        assert restored.count(lang) == calibration.count(lang)
        assert torch.equal(restored.mean(lang), calibration.mean(lang))
        assert torch.equal(restored.std(lang), calibration.std(lang))
    assert torch.equal(restored.transform("de", emb, into="en"), calibration.transform("de", emb, into="en"))
    with pytest.raises(CalibrationError):
        restored.rotation("en", "de")


# ---------------------------------------------------------------- DAP modules


def _tiny_mlm(seed: int = 0):
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return transformers.BertForMaskedLM(config).eval()


@pytest.fixture(scope="module")
def rtl_setup():
    mlm = _tiny_mlm()
    head = RtlHead.from_masked_lm(mlm, num_layers=2, mask_token_id=MASK_ID).eval()
    torch.manual_seed(1)
    states = torch.randn(2, 6, 32)
    source_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    target_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    return mlm, head, states, source_mask, target_mask


def test_translation_projection_shape_and_range():
    projection = TranslationProjection(32)
    out = projection(torch.randn(4, 32) * 10)
    assert out.shape == (4, 32)
    assert out.abs().max() <= 1.0


def test_rtl_head_shape_and_rejects_other_models(rtl_setup):
    _, head, states, source_mask, target_mask = rtl_setup
    assert len(head.layers) == 2
    assert head(states, source_mask, target_mask).shape == (2, 5, 100)
    bare = transformers.BertModel(_tiny_mlm().config)
    with pytest.raises(ValueError, match="BertModel"):
        RtlHead.from_masked_lm(bare)
    with pytest.raises(ValueError, match="mask_token_id"):
        RtlHead.from_masked_lm(_tiny_mlm())


def test_rtl_head_copies_the_last_layers_and_owns_them():
    mlm = _tiny_mlm()
    head = RtlHead.from_masked_lm(mlm, num_layers=2, mask_token_id=MASK_ID).eval()
    for copied, source in zip(head.layers, mlm.bert.encoder.layer[1:]):
        for (name, a), b in zip(copied.named_parameters(), source.parameters()):
            assert torch.equal(a, b), name
    assert torch.equal(head.embeddings.word_embeddings.weight, mlm.bert.embeddings.word_embeddings.weight)
    states = torch.randn(2, 4, 32)
    masks = torch.ones(2, 4), torch.ones(2, 3)
    with torch.no_grad():
        before = head(states, *masks)
        for parameter in mlm.parameters():
            parameter.add_(1.0)
        after = head(states, *masks)
    assert torch.equal(before, after)
    assert not any(a.data_ptr() == b.data_ptr() for a in head.parameters() for b in mlm.parameters())


def test_rtl_head_ignores_source_cls_but_not_other_tokens(rtl_setup):
    _, head, states, source_mask, target_mask = rtl_setup
    with torch.no_grad():
        base = head(states, source_mask, target_mask)
        changed_cls = states.clone()
        changed_cls[:, 0] += 5.0
        assert torch.allclose(head(changed_cls, source_mask, target_mask), base, atol=1e-5)
        changed_token = states.clone()
        changed_token[:, 2] += 5.0
        assert not torch.allclose(head(changed_token, source_mask, target_mask), base, atol=1e-3)


def test_rtl_head_ignores_source_padding(rtl_setup):
    _, head, states, source_mask, target_mask = rtl_setup
    with torch.no_grad():
        base = head(states, source_mask, target_mask)
        changed_padding = states.clone()
        changed_padding[1, 4:] = torch.randn(2, 32) * 10
        out = head(changed_padding, source_mask, target_mask)
        assert torch.allclose(out, base, atol=1e-5)
        # Extra padding columns change nothing either: target positions do not depend on Sx.
        padded = torch.cat([states, torch.randn(2, 3, 32)], dim=1)
        padded_mask = torch.cat([source_mask, torch.zeros(2, 3, dtype=source_mask.dtype)], dim=1)
        assert torch.allclose(head(padded, padded_mask, target_mask), base, atol=1e-5)


def test_rtl_head_gradients_reach_source_states(rtl_setup):
    _, head, states, source_mask, target_mask = rtl_setup
    source = states.clone().requires_grad_()
    head(source, source_mask, target_mask).logsumexp(-1).sum().backward()
    assert source.grad[:, 1:4].abs().sum() > 0
    assert source.grad[:, 0].abs().sum() == 0  # the blocked CLS gets no gradient
    head.zero_grad()


def test_rtl_head_vocab_subset_matches_full_columns(rtl_setup):
    _, head, states, source_mask, target_mask = rtl_setup
    vocab_ids = torch.tensor([7, 3, 99, 42])
    with torch.no_grad():
        full = head(states, source_mask, target_mask)
        subset = head(states, source_mask, target_mask, vocab_ids=vocab_ids)
    assert subset.shape == (2, 5, 4)
    assert torch.allclose(subset, full[..., vocab_ids], atol=1e-5)
