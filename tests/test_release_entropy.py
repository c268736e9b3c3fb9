"""No integer seed reaches a release generator when random_state=None (issue 20).

Each release path's generators are captured where the code makes them and their seed
sequence is inspected: the entropy must be the 128 bits of OS entropy of a fresh
``SeedSequence`` (bit length > 64; an int32 seed has at most 31 bits), never a value drawn
from another generator. The tests inspect generators only; no result depends on their draws.
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

#: Every test here checks the unseeded path on purpose (its generators, never their draws).
pytestmark = pytest.mark.os_entropy

FULL = 64  # an OS-entropy SeedSequence has 128 bits; any int32 / uint32 seed has <= 32


def entropy_bits(gen):
    seq = gen.bit_generator.seed_seq
    assert isinstance(seq, np.random.SeedSequence)
    return int(seq.entropy).bit_length()


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[:120], y[:120]


def recorder(monkeypatch, module, name):
    seen = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.extend(out if isinstance(out, list) else [out])
        return out

    monkeypatch.setattr(module, name, spy)
    return seen


def test_mip_noise_wrapper_noise_and_dtrain(monkeypatch, data):
    import skmip.defend.mip_noise as mod
    from skmip import MIPNoiseWrapper

    roots = recorder(monkeypatch, mod, "resolve_rng")
    children = recorder(monkeypatch, mod, "spawn_generators")
    X, y = data
    MIPNoiseWrapper(LogisticRegression(), eta=0.3, method="moments", n_subsets=8, train_size=0.5).fit(X, y)
    assert roots and children
    assert all(entropy_bits(g) > FULL for g in roots + children)
    # The noise streams are spawned children of the root, not default_rng(int).
    assert all(g.bit_generator.seed_seq.spawn_key for g in children)


@pytest.mark.parametrize("where", ["subsampled", "dp_logistic", "synthetic", "marginals"])
def test_other_release_paths(monkeypatch, data, where):
    X, y = data
    if where == "subsampled":
        import skmip.defend.subsampled as mod
        from skmip import SubsampledDPClassifier as make

        seen = recorder(monkeypatch, mod, "resolve_rng")
        make(train_size=0.5, epsilon=1.0).fit(X, y)
    elif where == "dp_logistic":
        import skmip.defend.dp_logistic as mod

        seen = recorder(monkeypatch, mod, "resolve_rng")
        mod.DPLogisticRegression(classes=[0, 1]).fit(X, y)
    elif where == "synthetic":
        import skmip.release.gaussian as mod
        import skmip.defend.mip_noise as wrapper

        seen = recorder(monkeypatch, mod, "resolve_rng")
        noise = recorder(monkeypatch, wrapper, "spawn_generators")
        mod.MIPGaussianSynthesizer(eta=0.4, method="moments", n_subsets=8).fit(X[:, :3]).sample(5)
        seen += noise
    else:
        import skmip.release.marginals as mod

        seen = recorder(monkeypatch, mod, "resolve_rng")
        mod.DPMarginalSynthesizer(epsilon=1.0).fit(np.c_[y, (X[:, 0] > 0).astype(int)])
    assert seen and all(entropy_bits(g) > FULL for g in seen)


def test_dpsgd_batches_and_noise(monkeypatch, data):
    pytest.importorskip("opacus")
    import skmip.nn.dpsgd as mod
    from skmip.nn import MLPModule

    gens = recorder(monkeypatch, mod, "release_generator")
    used = []
    real_opt = mod._release_noise_optimizer
    monkeypatch.setattr(mod, "_release_noise_optimizer", lambda orig, rng, **kw: used.append(rng) or real_opt(orig, rng, **kw))
    X, y = data
    for privacy in ("dp", "gdp"):
        mod.DPNeuralNetClassifier(MLPModule, module__n_features=30, privacy=privacy, noise_multiplier=1.0,
                                  max_epochs=1, batch_size=32, verbose=0).fit(X, y)
    assert len(gens) == 2 and [id(g) for g in gens] == [id(g) for g in used]
    assert all(entropy_bits(g) > FULL for g in gens)
