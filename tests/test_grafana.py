"""contrib/grafana/logscope.json: valid, current, and every metric its queries use is exported
by ``logscope follow --serve`` on the corpus logs (so the dashboard cannot rot)."""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRIB = ROOT / "contrib"
DASH = CONTRIB / "grafana" / "logscope.json"
LOGS = [*sorted((ROOT / "fixtures" / "llama-server" / "corpus").glob("*.log")),
        *sorted((ROOT / "fixtures" / "sglang").glob("*.log")),
        *sorted((ROOT / "fixtures" / "vllm").glob("*.log"))]
PROMQL_WORDS = {"sum", "by", "rate", "increase", "histogram_quantile", "time", "le",
                "label_values"}


def _exprs(d: dict) -> list[str]:
    out = []
    for p in d["panels"]:
        out += [t["expr"] for t in p.get("targets", [])]
        for sub in p.get("panels", []):
            out += [t["expr"] for t in sub.get("targets", [])]
    out += [v["definition"] for v in d["templating"]["list"] if v.get("definition")]
    return out


def _follow_to_end(path: Path, metrics) -> None:  # noqa: ANN001
    """What ``logscope follow --from-start --serve`` does with each line and event."""
    from logscope.follow import EventStream

    n = path.read_bytes().count(b"\n")

    def on_line(f: str) -> None:
        metrics.line(f)
        if s.lines_read >= n:
            s.stop()

    s = EventStream(str(path), from_start=True, watch=False, poll_interval=0.01,
                    on_line=on_line)
    t = threading.Timer(20.0, s.stop)
    t.start()
    try:
        for ev in s:
            metrics.observe(ev)
    finally:
        t.cancel()


@pytest.fixture(scope="module")
def exported() -> dict[str, set[str]]:
    """sample name -> label names, as /metrics shows them after following every corpus log."""
    from prometheus_client.parser import text_string_to_metric_families

    from logscope.follow.metrics import Metrics

    m = Metrics()
    for p in LOGS:
        _follow_to_end(p, m)
    out: dict[str, set[str]] = {}
    for fam in text_string_to_metric_families(m.render().decode()):
        for s in fam.samples:
            out.setdefault(s.name, set()).update(s.labels)
    return out


def test_dashboard_is_valid_and_current():
    d = json.loads(DASH.read_text(encoding="utf-8"))
    spec = importlib.util.spec_from_file_location("build", CONTRIB / "grafana" /
                                                  "build_dashboard.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert DASH.read_text(encoding="utf-8") == mod.render(), (
        "run python contrib/grafana/build_dashboard.py")
    assert d["uid"] and d["title"] and d["schemaVersion"] >= 36
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        for t in p.get("targets", []):
            assert t["refId"] and t["expr"] and t["datasource"]["uid"] == "${datasource}"
    titles = " ".join(p["title"] for p in d["panels"]).lower()
    for want in ("prefill", "decode", "tg_3s", "acceptance", "accepted length", "kv",
                 "running", "queued", "retracts", "preemptions", "tokens/s", "requests/s"):
        assert want in titles, want


def test_every_metric_the_dashboard_queries_is_exported(exported):
    d = json.loads(DASH.read_text(encoding="utf-8"))
    used = set()
    for expr in _exprs(d):
        used |= set(re.findall(r"\blogscope_[a-z0-9_]+", expr))
    assert len(used) >= 14
    missing = sorted(used - set(exported))
    assert not missing, f"queried but not exported by follow --serve: {missing}"
    # the labels the queries select, group and name series by exist on those metrics
    for expr in _exprs(d):
        metrics = re.findall(r"\blogscope_[a-z0-9_]+", expr)
        labels = set(re.findall(r"\b([a-z_]+)\s*=~", expr))
        labels |= {x.strip() for grp in re.findall(r"by \(([^)]*)\)", expr)
                   for x in grp.split(",")}
        have = set().union(*(exported[m] for m in metrics))
        assert labels <= have, (expr, labels - have)
    for p in d["panels"]:
        for t in p.get("targets", []):
            for lab in re.findall(r"\{\{(\w+)\}\}", t.get("legendFormat", "")):
                ms = re.findall(r"\blogscope_[a-z0-9_]+", t["expr"])
                grouped = re.findall(r"by \(([^)]*)\)", t["expr"])
                ok = (lab in {x.strip() for g in grouped for x in g.split(",")} if grouped
                      else any(lab in exported[m] for m in ms))
                assert ok, (p["title"], lab)


def test_compose_scrapes_follow_serve_and_provisions_the_dashboard():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((CONTRIB / "docker-compose.yml").read_text(encoding="utf-8"))
    assert {"prometheus", "grafana"} <= set(compose["services"])
    prom = yaml.safe_load((CONTRIB / "prometheus.yml").read_text(encoding="utf-8"))
    targets = [t for job in prom["scrape_configs"] for sc in job["static_configs"]
               for t in sc["targets"]]
    assert "127.0.0.1:9464" in targets  # the --serve address of the docs
    mounts = " ".join(compose["services"]["grafana"]["volumes"])
    assert "./grafana/logscope.json" in mounts and "./grafana/provisioning" in mounts
    for v in compose["services"]["grafana"]["volumes"] + compose["services"]["prometheus"][
            "volumes"]:
        src = v.split(":")[0]
        if src.startswith("./"):
            assert (CONTRIB / src).exists(), src
    ds = yaml.safe_load((CONTRIB / "grafana" / "provisioning" / "datasources" /
                         "prometheus.yml").read_text(encoding="utf-8"))
    assert ds["datasources"][0]["type"] == "prometheus"
    d = json.loads(DASH.read_text(encoding="utf-8"))
    var = next(v for v in d["templating"]["list"] if v["name"] == "datasource")
    assert var["query"] == "prometheus"
