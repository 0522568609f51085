"""The GPU check's verdicts on `repro compare --json` reports (tests/gpu/run.sh
steps 4 and 5), apart from the device so that tests/gpu/selftest.sh proves
each able to fail on reports recorded on the CPU.

  verdict.py benchmark FILE       benchmark=on,off on cuda: off's runs
                                  identical; on's identical unless the timed
                                  pick changed between runs (reported)
  verdict.py backends FILE TOL    backend=cpu,cuda: at least 2 runs per value,
                                  each value's runs identical, and the RELATIVE
                                  DISTANCE ||a - b|| / ||a|| of the final
                                  parameters below TOL (not the norm gap
                                  | ||a|| - ||b|| | / ||a||, which two far-apart
                                  parameter sets can share)

Prints one line (the summary's) and exits 0 when the verdict is a pass, 1
when not, 2 on a report it cannot read."""
import json
import sys


def algos(v):
    return ", ".join(a["site"] + " " + a["algo"] for a in (v.get("algorithms") or []))


def benchmark(doc):
    bad, said = 0, []
    for v in doc["values"]:
        changed = v.get("algorithms_changed_between_runs", False)
        if v["identical"]:
            said.append("benchmark=%s: runs identical (%s)" % (v["value"], algos(v)))
        elif v["value"] == "on" and changed:
            said.append("benchmark=%s: the timed pick changed between runs, and so did the bits "
                        "(informational: %s)" % (v["value"], algos(v)))
        else:
            said.append("benchmark=%s: runs DIFFER with %s algorithms (%s)"
                        % (v["value"], "changed" if changed else "the same", algos(v)))
            bad = 1
    return bad, "; ".join(said)


def backends(doc, tol):
    runs = doc.get("runs_per_value", 0)
    if runs < 2:
        return 1, ("%d run per value: run-to-run identity is not tested (--runs 2 or more)" % runs)
    vals = doc["values"]
    if len(vals) != 2:
        return 1, "%d values in the report, wanted 2 (the CPU, then the GPU)" % len(vals)
    differ = [v["value"] for v in vals if not v["identical"]]
    dist = vals[1].get("final_rel_distance_vs_first")
    gap = vals[1].get("final_norm_gap_vs_first", vals[1].get("final_rel_l2_vs_first"))
    if dist is None:
        return 1, "no relative distance (final_rel_distance_vs_first) for %s" % vals[1]["value"]
    said = ("relative distance ||a-b||/||a|| of the final parameters, %s vs %s: %.3g "
            "(tolerance %g; norm gap %s); %d runs each, %s"
            % (vals[1]["value"], vals[0]["value"], dist, tol,
               "%.3g" % gap if gap is not None else "-", runs,
               "runs DIFFER for " + ", ".join(differ) if differ else "each value's runs identical"))
    return int(bool(differ) or not dist < tol), said


def main(argv):
    try:
        doc = json.load(open(argv[2]))
        if argv[1] == "benchmark":
            bad, said = benchmark(doc)
        elif argv[1] == "backends":
            bad, said = backends(doc, float(argv[3]))
        else:
            raise ValueError("no verdict " + argv[1])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        print("cannot read the report: %s: %s" % (type(e).__name__, e))
        return 2
    print(said)
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
