"""The fixture store: byte-identical regeneration, drift detection, error reporting."""
import json
import shutil
import sys
from pathlib import Path

import pytest

from fidelity.fixtures import READ_AUDIT_EVENT
from fidelity.fixtures import store as fs
from fidelity.spec import load_catalogue

COMMITTED = Path(__file__).resolve().parents[2] / "fixtures"
SPEC_EQUATIONS = load_catalogue(Path(__file__).resolve().parents[2] / "specs").equations


@pytest.fixture(scope="module")
def generated(tmp_path_factory, regenerated_fixtures):
    """Two regenerations: the run's shared one (conftest's regenerated_fixtures, whose builds other
    tests' verify reads) and one of this module's own."""
    a = regenerated_fixtures
    b = tmp_path_factory.mktemp("fixtures_b")
    return a, sorted(a.glob("*.json"), key=lambda p: fs.project_fixtures().index(p.stem)), b, fs.regenerate(b)


def test_regeneration_is_byte_identical_twice_and_matches_the_committed_files(generated):
    a, pa, b, pb = generated
    assert [p.name for p in pa] == [p.name for p in pb]
    for p, q in zip(pa, pb):
        assert p.read_bytes() == q.read_bytes(), p.name
    committed = sorted(p.name for p in COMMITTED.glob("*.json"))
    assert committed == sorted(p.name for p in pa)
    for p in pa:
        assert (COMMITTED / p.name).read_bytes() == p.read_bytes(), f"fixtures/{p.name} differs from a regeneration"


def test_verify_is_clean(already_built):
    # verify compares the committed files with builds: those of the regeneration above, which the first
    # test holds byte-identical to a second one (a third build here added nothing but ~9 s). How long
    # verify takes is measured by python -m fidelity.bench.fixtures_bench, not by a timed test.
    assert fs.verify() == []


@pytest.fixture
def already_built(generated, monkeypatch):
    """verify's fresh builds taken from `generated`'s regeneration (each file is build(id) serialised): the
    drift tests below are about comparing and naming, and building every fixture again for each one costs
    ~10 s. Building itself is tested above (byte-identical, clean) and by the pool tests at the end."""
    a = generated[0]
    monkeypatch.setattr(fs, "_build_all", lambda ids: [json.loads((a / f"{fid}.json").read_text()) for fid in ids])


def _copy(generated, tmp_path):
    a = generated[0]
    d = tmp_path / "fx"
    shutil.copytree(a, d)
    return d


def test_a_changed_digit_is_a_drift_naming_file_and_field(generated, already_built, tmp_path):
    d = _copy(generated, tmp_path)
    path = d / "mhc.eq3_sliced.json"
    obj = json.loads(path.read_text())
    s = obj["expected"]["out"]["digits"][1][0]
    obj["expected"]["out"]["digits"][1][0] = s[:-1] + ("1" if s[-1] != "1" else "2")
    path.write_text(fs.serialise(obj))
    drifts = fs.verify(d)
    assert len(drifts) == 1
    dr = drifts[0]
    assert dr.file == path and dr.fixture_id == "mhc.eq3_sliced"
    assert dr.field == "expected.out.digits[1][0]"
    assert dr.recomputed == s and dr.stored != s
    assert "mhc.eq3_sliced.json" in str(dr) and "expected.out.digits[1][0]" in str(dr)


def test_a_changed_float_twin_and_derivation_are_drifts(generated, already_built, tmp_path):
    d = _copy(generated, tmp_path)
    path = d / "attnres.three_conventions.json"
    obj = json.loads(path.read_text())
    obj["expected"]["paper"]["alpha"]["float64"][0] += 1e-12
    obj["derivation"][0] = obj["derivation"][0] + " edited"
    path.write_text(fs.serialise(obj))
    fields = sorted(dr.field for dr in fs.verify(d))
    assert fields == ["derivation[0]", "expected.paper.alpha.float64[0]"]


def test_invalid_json_raises_fixture_error_naming_the_file(generated, already_built, tmp_path):
    d = _copy(generated, tmp_path)
    path = d / "sinkhorn.slow_2x2.json"
    path.write_text(path.read_text()[:-20])
    with pytest.raises(fs.FixtureError) as info:
        fs.verify(d)
    assert info.value.file == path and "invalid JSON" in str(info.value)
    with pytest.raises(fs.FixtureError):
        fs.load("sinkhorn.slow_2x2", d)


@pytest.mark.parametrize("field", ["expected", "precision_digits"])
def test_a_missing_top_level_field_raises_naming_file_and_field(generated, already_built, tmp_path, field):
    d = _copy(generated, tmp_path)
    path = d / "mhc.params.json"
    obj = json.loads(path.read_text())
    del obj[field]
    path.write_text(json.dumps(obj))
    with pytest.raises(fs.FixtureError) as info:
        fs.load("mhc.params", d)
    assert info.value.file == path and info.value.field == field
    with pytest.raises(fs.FixtureError) as info:
        fs.verify(d)
    assert info.value.field == field and path.name in str(info.value)


def test_a_missing_nested_field_raises_naming_the_path(generated, already_built, tmp_path):
    d = _copy(generated, tmp_path)
    path = d / "mhc.eq3_sliced.json"
    obj = json.loads(path.read_text())
    del obj["expected"]["H_res"]["float64"]
    path.write_text(fs.serialise(obj))
    with pytest.raises(fs.FixtureError) as info:
        fs.verify(d)
    assert info.value.file == path and info.value.field == "expected.H_res.float64"


def test_unknown_fixture_file_and_id(generated, already_built, tmp_path):
    d = _copy(generated, tmp_path)
    (d / "mhc.bogus.json").write_text("{}")
    with pytest.raises(fs.FixtureError) as info:
        fs.verify(d)
    assert info.value.file.name == "mhc.bogus.json"
    with pytest.raises(fs.FixtureError):
        fs.load("mhc.bogus", d)


def test_a_missing_file_is_a_drift(generated, already_built, tmp_path):
    d = _copy(generated, tmp_path)
    (d / "hc.dhc_dynamic.json").unlink()
    drifts = fs.verify(d)
    assert [(dr.fixture_id, dr.field) for dr in drifts] == [("hc.dhc_dynamic", "<file>")]


def test_load_default_directory():
    obj = fs.load("mhc.eq3_sliced")
    assert obj["id"] == "mhc.eq3_sliced" and obj["oracle"] == "fidelity.oracles.mhc.eq3_sliced"


def test_a_loaded_fixture_is_the_callers_own_and_a_rewritten_file_is_read_again(tmp_path, monkeypatch):
    """load keeps each parsed file for the next call (a gate suite reads each fixture thousands of times):
    what one caller changes in its copy never reaches the next, and a file written since is read anew."""
    shutil.copy(COMMITTED / "mhc.eq3_sliced.json", tmp_path / "mhc.eq3_sliced.json")
    first = fs.load("mhc.eq3_sliced", tmp_path)
    first["expected"].clear()
    first["derivation"].append("changed by its caller")
    again = fs.load("mhc.eq3_sliced", tmp_path)
    assert again == json.loads((COMMITTED / "mhc.eq3_sliced.json").read_text()) and again["expected"]
    assert fs.load_shared("mhc.eq3_sliced", tmp_path) is fs.load_shared("mhc.eq3_sliced", tmp_path)
    # a fixture handed out again opens no file: the store says it read it (the gates' fixtures_read hears it)
    heard = []
    monkeypatch.setattr(sys, "audit", lambda event, *args: heard.append((event, *args)))
    fs.load("mhc.eq3_sliced", tmp_path)
    monkeypatch.undo()
    assert heard == [(READ_AUDIT_EVENT, str(tmp_path / "mhc.eq3_sliced.json"))]

    rewritten = json.loads((tmp_path / "mhc.eq3_sliced.json").read_text())
    rewritten["derivation"] = ["written since the last load"]
    (tmp_path / "mhc.eq3_sliced.json").write_text(json.dumps(rewritten), encoding="utf-8")
    assert fs.load("mhc.eq3_sliced", tmp_path)["derivation"] == ["written since the last load"]
    assert fs.load_shared("mhc.eq3_sliced", tmp_path)["derivation"] == ["written since the last load"]


def _leaves(x):
    if isinstance(x, list):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


def test_every_fixture_is_well_formed():
    # every builder module the project names registers its fixtures, and each one has its committed file
    assert set(fs.project_fixtures()) == {p.stem for p in COMMITTED.glob("*.json")}
    for fid in fs.FIXTURES:
        obj = fs.load(fid)
        assert set(obj) == set(fs.REQUIRED_FIELDS)
        assert obj["equations"] and set(obj["equations"]) <= set(SPEC_EQUATIONS), obj["equations"]  # each one a spec defines
        assert obj["derivation"] and obj["precision_digits"] >= 30
        mod, _, fn = obj["oracle"].rpartition(".")
        assert getattr(__import__(mod, fromlist=[fn]), fn)

        def check(entry, where):
            if "exact" in entry and "digits" not in entry:
                return
            digits, twins = list(_leaves(entry["digits"])), list(_leaves(entry["float64"]))
            assert len(digits) == len(twins), where
            for s, f in zip(digits, twins):
                if s in ("nan", "+inf", "-inf"):
                    assert f == s
                    continue
                mant = s.split("e")[0].replace("-", "").replace(".", "").lstrip("0")
                assert mant == "" or len(mant) >= 30, (where, s)
                assert f == float(s), (where, s)

        def walk(node, where):
            if isinstance(node, dict) and ("digits" in node or "exact" in node):
                check(node, where)
            elif isinstance(node, dict):
                for k, v in node.items():
                    walk(v, f"{where}.{k}")

        walk(obj["expected"], f"{fid}.expected")
        for name, p in obj["predictions"].items():
            walk(p.get("values", p), f"{fid}.predictions.{name}")


POOL_IDS = ["sinkhorn.slow_2x2", "mhc.eq3_sliced", "rmsnorm.example", "mhc.params"]  # cheap, not in id order


def test_pooled_builds_are_the_serial_builds_in_the_order_asked():
    assert fs._build_all(POOL_IDS) == [fs.build(fid) for fid in POOL_IDS]


def test_drifts_come_in_the_serial_order_from_the_pool(generated, tmp_path, monkeypatch):
    d = tmp_path / "fx"
    d.mkdir()
    for fid in POOL_IDS:
        shutil.copy(generated[0] / f"{fid}.json", d)
    for name in ("mhc.eq3_sliced", "sinkhorn.slow_2x2"):
        path = d / f"{name}.json"
        obj = json.loads(path.read_text())
        obj["derivation"][0] += " (edited)"
        path.write_text(fs.serialise(obj))
    pooled = fs.verify(d, POOL_IDS)
    monkeypatch.setattr(fs, "_build_all", lambda ids: [fs.build(fid) for fid in ids])
    assert [(dr.fixture_id, dr.field) for dr in pooled] == [(dr.fixture_id, dr.field) for dr in fs.verify(d, POOL_IDS)]
    assert [dr.fixture_id for dr in pooled] == ["sinkhorn.slow_2x2", "mhc.eq3_sliced"]  # the order asked, not id order


@pytest.mark.parametrize("ids", [["toy.guard_raises"], ["toy.guard_raises", "sinkhorn.slow_2x2"]],
                         ids=["serial", "pooled"])
def test_a_builder_that_raises_is_an_error_naming_its_fixture_not_a_traceback(tmp_path, monkeypatch, ids):
    """A builder's own guard (a spec default its fixture cannot tell from a wrong one: mhc.table5.tmax set to 21
    raised so from the pool) is verify's FixtureError, which check's fixtures stage reports as red."""
    def guarded():
        raise ValueError("wrong default lies only 0.0 tolerances away")

    monkeypatch.setitem(fs.FIXTURES, "toy.guard_raises", fs.FixtureSpec("toy.guard_raises", "toy", (), guarded, __name__))
    with pytest.raises(fs.FixtureError, match=r"toy\.guard_raises\.json: its builder raised ValueError: wrong default"):
        fs.verify(tmp_path, ids)
