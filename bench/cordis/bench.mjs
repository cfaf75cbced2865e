// bench.mjs runs the workloads of bus/bench_test.go on Cordis, the
// TypeScript framework whose semantics Vigil's bus follows, so the two can
// be compared (run.sh prints the comparison). Both majors are measured:
// cordis@4 and cordis@3, installed as the aliases cordis4 and cordis3.
//
// Output: one tab-separated line per workload and version,
//
//	cordis@VERSION <TAB> WORKLOAD <TAB> NS_PER_OP
//	cordis@VERSION <TAB> WORKLOAD <TAB> - <TAB> why it was skipped
//
// Workloads mirror the Go benchmarks:
//
//	Emit/listeners=N   ctx.emit(name, payload) with N listeners incrementing payload.n
//	Waterfall/depth=10 ctx.waterfall with 10 listeners calling next (cordis@4 only)
//	DispatchVeto       Emit with 10 listeners plus one dispatch hook checking
//	                   the event name: internal/dispatch in cordis@4,
//	                   internal/event in cordis@3 (both may veto by throwing)

import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

// Each measurement is calibrated to run at least targetNs, after a warm-up
// that lets V8 optimise the dispatch path; the best of several rounds is
// kept, as Go's -count with min would.
const targetNs = 300_000_000n
const rounds = 5

function measure(fn) {
  const warm = process.hrtime.bigint()
  for (let i = 0; i < 100_000 && process.hrtime.bigint() - warm < targetNs; i++) fn()
  let n = 1000
  for (;;) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < n; i++) fn()
    const dt = process.hrtime.bigint() - t0
    if (dt >= targetNs / 10n) {
      n = Math.max(n, Math.ceil(Number(targetNs) / (Number(dt) / n)))
      break
    }
    n *= 10
  }
  let best = Infinity
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < n; i++) fn()
    const ns = Number(process.hrtime.bigint() - t0) / n
    best = Math.min(best, ns)
  }
  return best
}

function emitWorkload(Context, listeners) {
  const ctx = new Context()
  for (let i = 0; i < listeners; i++) {
    ctx.on('bench/emit', (p) => { p.n++ })
  }
  const p = { n: 0 }
  return () => ctx.emit('bench/emit', p)
}

function waterfallWorkload(Context) {
  const ctx = new Context()
  if (typeof ctx.waterfall !== 'function') return null
  for (let i = 0; i < 10; i++) {
    ctx.on('bench/waterfall', (p, next) => { p.n++; return next() })
  }
  const p = { n: 0 }
  const fallback = () => p.n
  return () => ctx.waterfall('bench/waterfall', p, fallback)
}

function vetoWorkload(Context, hook) {
  const ctx = new Context()
  for (let i = 0; i < 10; i++) {
    ctx.on('bench/emit', (p) => { p.n++ })
  }
  // Both versions call the hook as (mode, name, args, thisArg).
  ctx.on(hook, (_mode, name) => {
    if (!name) throw new Error('unnamed')
  })
  const p = { n: 0 }
  return () => ctx.emit('bench/emit', p)
}

const versions = [
  { pkg: 'cordis4', dispatchHook: 'internal/dispatch' },
  { pkg: 'cordis3', dispatchHook: 'internal/event' },
]

for (const { pkg, dispatchHook } of versions) {
  const { Context } = await import(pkg)
  const version = 'cordis@' + require(`${pkg}/package.json`).version
  const report = (workload, build, missing) => {
    const fn = build()
    if (!fn) {
      console.log([version, workload, '-', missing].join('\t'))
      return
    }
    console.log([version, workload, measure(fn).toFixed(1)].join('\t'))
  }
  for (const n of [1, 10, 100]) {
    report(`Emit/listeners=${n}`, () => emitWorkload(Context, n))
  }
  report('Waterfall/depth=10', () => waterfallWorkload(Context), 'no waterfall dispatch')
  report('DispatchVeto', () => vetoWorkload(Context, dispatchHook), 'no dispatch hook')
}
