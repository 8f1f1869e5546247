# perf_diff.rs: Python 3 serialising with json.dumps for SECONDS (argv[1]).
import json
import sys
import time

doc = {
    "name": "pmx",
    "numbers": list(range(40)),
    "floats": [i / 7 for i in range(20)],
    "nested": {"a": [True, False, None], "b": {"c": "héllo wörld" * 3}},
    "rows": [{"id": i, "tag": "t%d" % i, "ok": i % 3 == 0} for i in range(12)],
}
end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 0.8)
total = 0
while time.monotonic() < end:
    for _ in range(50):
        total += len(json.dumps(doc, sort_keys=True))
print(total)
