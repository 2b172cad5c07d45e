"""The console's inline SVG plots: a point per lag change, the target line, numbers only."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from catalogd.server.console.plot import bars, lag_plot

SVG = "{http://www.w3.org/2000/svg}"


def test_the_lag_plot_has_a_point_per_change_and_the_target() -> None:
    svg = ET.fromstring(str(lag_plot([(0.0, 0.0), (60.0, 60.0), (60.0, 5.0), (200.0, 145.0)], 90.0)))
    points = svg.findall(f"{SVG}circle")
    assert len(points) == 4
    assert [c.get("class") for c in points].count("point over") == 1
    assert svg.find(f"{SVG}line[@class='target']") is not None
    assert any("target 90s" in (t.text or "") for t in svg.iter(f"{SVG}text"))


def test_empty_plots_say_why() -> None:
    assert "No successful run" in lag_plot([], 60.0)
    assert "No finished run" in bars([], "runs")


def test_durations_mark_failures() -> None:
    svg = ET.fromstring(str(bars([(0.0, 12.0, True), (100.0, 30.0, False)], "run durations")))
    assert [c.get("class") for c in svg.findall(f"{SVG}circle")] == ["point ok", "point failed"]
