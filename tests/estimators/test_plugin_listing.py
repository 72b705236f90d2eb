"""Installed plug-ins in `mibench list` (name, kind, source package; a broken one is one line and the
rest is still listed), and the names mibench.evaluate / register_estimator give user estimators:
a class called CCA or a function called gaussian is qualified by its module and never collides
with a built-in estimator or alias; a built-in is never replaced."""
from pathlib import Path

import pytest

from mibench.cli import main
from mibench.errors import MibenchError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mibench-example-plugin"
GOOD = "mibench_example_plugin.estimators:GaussianEstimator"


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A fake installed distribution (what pip writes) declaring good, broken and shadowed plug-ins."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    dist = tmp_path / "site" / "mibench_listing_test-0.3.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mibench-listing-test\nVersion: 0.3\n")
    (dist / "entry_points.txt").write_text(
        "[mibench.estimators]\n"
        f"listing-good = {GOOD}\n"
        "listing-broken = no_such_module_listing:Thing\n"
        "listing-not-an-estimator = mibench_example_plugin.estimators:_whiten\n"
        "ksg = mibench_example_plugin.estimators:correlation_mi\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return dist


def test_installed_plugins_rows(installed):
    from mibench.estimators.plugins import installed_plugins

    rows = {r["name"]: r for r in installed_plugins() if r["source"] == "mibench-listing-test 0.3"}
    assert set(rows) == {"listing-good", "listing-broken", "listing-not-an-estimator", "ksg"}
    assert rows["listing-good"]["kind"] == "black-box" and rows["listing-good"]["error"] is None
    assert rows["listing-good"]["value"] == GOOD and not rows["listing-good"]["shadowed"]
    assert rows["listing-broken"]["kind"] is None and "no_such_module_listing" in rows["listing-broken"]["error"]
    assert "not an estimator" in rows["listing-not-an-estimator"]["error"]
    assert rows["ksg"]["shadowed"] and rows["ksg"]["kind"] == "black-box"
    assert all("\n" not in (r["error"] or "") for r in rows.values())


def test_mibench_list_shows_plugins_and_one_line_per_failure(installed, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    section = out.split("plug-ins (installed packages, entry-point group mibench.estimators):", 1)[1]
    section = section.split("critics:", 1)[0]
    lines = {l.split()[0]: l for l in section.strip().splitlines()}
    assert "black-box" in lines["listing-good"] and "from mibench-listing-test 0.3" in lines["listing-good"]
    assert "failed to load:" in lines["listing-broken"] and "no_such_module_listing" in lines["listing-broken"]
    assert "failed to load:" in lines["listing-not-an-estimator"]
    assert f"--estimator {'mibench_example_plugin.estimators:correlation_mi'}" in lines["ksg"]
    assert "tasks:" in out and "critics:" in out                 # the rest of the list is still there


def test_no_plugins_installed_says_so(monkeypatch):
    from mibench.estimators import plugins

    monkeypatch.setattr(plugins, "entry_points_installed", lambda: [])
    lines = plugins.plugin_lines()
    assert len(lines) == 2 and "none installed" in lines[1]


class CCA:
    """A user's class whose name is a built-in alias (cca = gaussian)."""

    kind, n_parameters = "black-box", 0

    def estimate(self, x, y, *, seed=0):
        return 0.0


def gaussian(x, y):
    """A user's function named like the built-in gaussian estimator."""
    return 0.0


def test_user_names_are_qualified_by_module():
    from mibench.analysis.evaluate import SCRIPT_QUALIFIER, _name_of

    mod = CCA.__module__
    assert _name_of(CCA()) == _name_of(CCA) == f"{mod}.CCA"
    assert _name_of(gaussian) == f"{mod}.gaussian"
    main_cls = type("CCA", (), {"__module__": "__main__", "kind": "black-box", "n_parameters": 0})
    assert _name_of(main_cls) == f"{SCRIPT_QUALIFIER}.CCA" == "user.CCA"

    class Named(CCA):
        name = "my-cca"

    assert _name_of(Named()) == "my-cca"                   # the object's own name wins


def test_register_estimator_refuses_builtins_and_aliases():
    import mibench
    from mibench.estimators import ESTIMATORS

    for name, what in [("CCA", "alias of a built-in"), ("gaussian", "is a built-in estimator"),
                       ("smile-3", "is a built-in estimator"), ("ksg-7", "is a built-in estimator")]:
        with pytest.raises(MibenchError, match=what):
            mibench.register_estimator(name, CCA, replace=True)
    assert "Gaussian" in ESTIMATORS.get("gaussian").description          # untouched
    name = mibench.register_estimator("user.CCA", CCA)
    assert ESTIMATORS.get(name).name == "user.CCA"
    assert mibench.register_estimator("user.CCA", CCA) == "user.CCA"    # re-registering (a notebook cell run twice)


def test_evaluate_a_class_named_cca(tmp_path, capsys):
    """evaluate(CCA()) runs under its qualified name and ranks next to the baselines."""
    import mibench
    from mibench.analysis.evaluate import COMMON, SETUPS
    from mibench.protocols.sample.run import SampleConfig, run_sample

    s = SETUPS["gaussian"]
    base = tmp_path / "baselines"
    run_sample(SampleConfig(task=s["task"], task_params=s["task_params"], estimators=["gaussian"], mi=s["mi"][0],
                            n=COMMON["n"], seeds=[0], critic=COMMON["critic"],
                            estimate_kwargs=COMMON["estimate_kwargs"], timeout=None), out_dir=base / "g", plot=False)
    board = mibench.evaluate(CCA(), "quick", baselines=base, out=tmp_path / "mine", timeout=None, progress=False,
                             seeds=[0])
    name = f"{CCA.__module__}.CCA"
    assert set(board["estimator"]) == {"gaussian", name}
    assert f"{name} ranks 2 of 2" in capsys.readouterr().out
