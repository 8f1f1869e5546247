// perf_diff.rs: JIT-compiled JavaScript for SECONDS (argv[2]), run with
// node --perf-basic-prof (V8 writes /tmp/perf-PID.map).
'use strict';
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function churn(n) {
  const m = new Map();
  for (let i = 0; i < n; i++) m.set('k' + (i % 500), (m.get('k' + (i % 500)) || 0) + i);
  const a = Array.from(m.values()).sort((x, y) => y - x);
  return a[0] + JSON.stringify({ a: a.slice(0, 5) }).length;
}
const end = Date.now() + 1000 * Number(process.argv[2] || 0.8);
let total = 0;
while (Date.now() < end) total += fib(18) + churn(3000);
console.log(total);
