"""comm.span / comm.mark (kylix_mark) on one-rank comms, with the timeline on and off: the
spans land in the rank's file, nested, in the user lane; misuse raises the documented errors."""

import json

import pytest

import kylix


def _events(path):
    out = []
    for line in path.read_text().splitlines():
        line = line.strip().rstrip(",")
        if line and line not in ("[", "]"):
            out.append(json.loads(line))
    return out


def test_span_records_nested_spans(tmp_path):
    d = tmp_path / "tl"
    with kylix.init(rank=0, size=1, timeline=str(d)) as c:
        with c.span("epoch"):
            with c.span("forward"):
                c.allreduce([1.0, 2.0])
            with pytest.raises(RuntimeError):
                with c.span("backward"):
                    raise RuntimeError("the span still ends")
        c.mark("checkpoint")
    evs = _events(d / "rank-0.json")
    user = {e["name"]: e for e in evs if e.get("tid") == 2 and e["ph"] != "M"}
    assert set(user) == {"epoch", "forward", "backward", "checkpoint"}, user
    ep, fw, bw = user["epoch"], user["forward"], user["backward"]
    assert ep["ph"] == fw["ph"] == bw["ph"] == "X" and user["checkpoint"]["ph"] == "i"
    for inner in (fw, bw):
        assert ep["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= ep["ts"] + ep["dur"] + 0.002
    calls = [e for e in evs if e["name"] == "kylix_allreduce"]
    assert len(calls) == 1
    assert fw["ts"] <= calls[0]["ts"] <= fw["ts"] + fw["dur"]   # the call sits inside "forward"
    assert evs[-1]["name"] == "kylix_end"                         # finalize closed the file


def test_mark_errors(tmp_path):
    with kylix.init(rank=0, size=1, timeline=str(tmp_path)) as c:
        with pytest.raises(kylix.StateError, match="without a BEGIN"):
            c.mark("x", "end")
        c.mark("outer", "begin")
        c.mark("inner", "begin")
        with pytest.raises(kylix.StateError, match="innermost"):
            c.mark("outer", "end")
        c.mark("inner", "end")
        c.mark("outer", "end")
        with pytest.raises(kylix.ArgumentError):
            c.mark("", "begin")
        with pytest.raises(kylix.ArgumentError):
            c.mark("x", "sideways")
        with pytest.raises(kylix.ArgumentError):
            c.mark("a\0b")


def test_span_off_is_a_no_op(tmp_path):
    with kylix.init(rank=0, size=1) as c:
        with c.span("forward"):
            pass
        c.mark("never begun", "end")      # nothing recorded, nothing checked but the arguments
        with pytest.raises(kylix.ArgumentError):
            c.mark("", "begin")
    assert not list(tmp_path.iterdir())
