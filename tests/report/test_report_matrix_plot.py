"""The gate-matrix PNG: one mesh for the cells, each cell in its outcome's colour, hatching for the
cells with no current run behind them, letters only where they fit, tick labels that never overlap."""
import pytest

pytest.importorskip("matplotlib")

from fidelity.report import plots  # noqa: E402

SMALL = {"gates": ["tests/gates/a.py::test_a", "tests/gates/b.py::test_b"], "perturbations": ["P1", "P2", "P3"],
         "cells": {"tests/gates/a.py::test_a": {"P1": "caught", "P2": "stale"},
                   "tests/gates/b.py::test_b": {"P1": "survived", "P3": "predicted"}}}


def _wide(perts: int) -> dict:
    names = [f"P{j}" for j in range(1, perts + 1)]
    gates = [f"tests/gates/g.py::test_{i}" for i in range(4)]
    return {"gates": gates, "perturbations": names,
            "cells": {g: {p: "survived" if (i + j) % 3 else "caught" for j, p in enumerate(names)}
                      for i, g in enumerate(gates)}}


def test_each_cell_has_its_outcomes_colour_and_the_unrun_ones_are_hatched():
    from matplotlib.collections import PatchCollection, QuadMesh
    from matplotlib.colors import to_rgb

    ax = plots._matrix(SMALL).axes[0]
    mesh = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(mesh) == 1                                                  # one artist for every cell
    drawn = [tuple(round(float(x), 3) for x in rgb) for row in mesh[0].get_array() for rgb in row]
    want = [tuple(round(x, 3) for x in (to_rgb(plots._MATRIX_COLOURS[SMALL["cells"][g][p]])
                                        if p in SMALL["cells"][g] else (1.0, 1.0, 1.0)))
            for g in SMALL["gates"] for p in SMALL["perturbations"]]
    assert drawn == want                                                   # row by row: gates x perturbations
    hatched = [c for c in ax.collections if isinstance(c, PatchCollection) and c.get_hatch() == "//"]
    corners = sorted(tuple(p.get_extents().p0.round().astype(int)) for p in hatched[0].get_paths())
    assert len(hatched) == 1 and corners == [(1, 0), (2, 1)]               # the stale cell and the predicted one
    letters = sorted((round(t.get_position()[0] - 0.5), round(t.get_position()[1] - 0.5), t.get_text())
                     for t in ax.texts)
    assert letters == [(0, 0, "R"), (0, 1, "S"), (1, 0, "x"), (2, 1, "P")]  # every filled cell, its code's letter


def test_cells_too_narrow_for_letters_say_so_and_the_tick_labels_do_not_overlap():
    fig = plots._matrix(_wide(200))
    ax = fig.axes[0]
    assert len(ax.texts) == 0 and "too narrow for their letters" in ax.get_title()
    assert "one perturbation in 2 labelled" in ax.get_title()
    plots._png(fig)                                                         # lay the text out as the PNG has it
    boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
    assert len(boxes) >= 40 and boxes[0].x0 < boxes[-1].x0
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))             # every label apart from the next


def test_a_few_perturbations_are_all_labelled_and_lettered():
    ax = plots._matrix(_wide(12)).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"P{j}" for j in range(1, 13)]
    assert len(ax.texts) == 4 * 12 and "labelled" not in ax.get_title()
