// meridian-spawn-watch: when a Meridian lead's Claude Code session sits
// idle, hand it the children that finished, as a new turn, and record them
// as seen only once that turn has started.
//
// Meridian decides what is owed and what the lead sees (`meridian spawn
// collect` prints it, `meridian spawn ack` consumes it). This module only
// senses idle, runs those two commands, and keeps delivery safe: no turn
// the user did not leave room for, no ack for text the lead never got, no
// delivery loop.
import type { EngineInterface, ProcessSpawnResult, Register } from 'claude-code'

// The constants of the contract (the rules in this mod's README.md).
const IDLE_DELAY_MS = 2_000 // after a turn ends, before collecting
const QUIET_MS = 10_000 // the prompt box must be empty and untouched this long
const HOLD_POLL_MS = 1_000
const ACK_TIMEOUT_MS = 20_000
const LOG_LINES = 100
const STDERR_TAIL = 500
const STDOUT_MAX = 1 << 20
const STATUS_LOG_LINES = 10

const ID = /^[A-Za-z0-9][\w.-]*$/
const TAG = 'meridian-spawn-watch delivery'
const NONCE = /\[meridian-spawn-watch delivery ([0-9a-f]{16})\]/g

type Phase = 'idle' | 'delay' | 'collecting' | 'holding' | 'submitting'

// A claim is a delivery in flight. held: waiting for a quiet box;
// submitted: handed to the prompt queue, waiting for the turn that carries
// its nonce; acking: that turn started; ack-failed: kept out of every
// collection until the module reloads, so a broken ack cannot loop.
type ClaimState = 'held' | 'submitted' | 'acking' | 'ack-failed'

type Claim = { ids: string[]; nonce: string; state: ClaimState }

type Delivery = { kind: 'delivery' | 'empty'; ids: string[]; text: string }

type Watch = {
  active: boolean // an interactive session started; -p stays inert
  phase: Phase
  run: AbortController | null // the current idle stretch
  claims: Claim[]
  touched: number // when the prompt box last changed, by the session clock
  verdict: string
  log: string[]
  saving: Promise<void>
}

export const register: Register = (on) => {
  const w: Watch = {
    active: false,
    phase: 'idle',
    run: null,
    claims: [],
    touched: Number.NEGATIVE_INFINITY,
    verdict: 'none yet',
    log: [],
    saving: Promise.resolve(),
  }

  on('session.start', async ($, e, next) => {
    const started = await next(e)
    // No idle run here: a resumed chat's prompt cache is cold, and what is
    // owed waits for the end of the user's first turn.
    if (!e.isInteractive || e.surface === null) return started
    w.active = true
    await loadLog($, w)
    await $.command.register({
      name: 'meridian-spawn-watch',
      description: 'Show what meridian-spawn-watch is doing: phase, last collection, deliveries in flight, recent log',
    })
    return started
  })

  on('turn.complete', async ($, e, next) => {
    const done = await next(e)
    if (!w.active || e.agentId !== undefined) return done
    endRun(w)
    // An interrupted, failed or refused turn starts nothing: what is owed
    // stays owed for the next answered turn.
    if (e.reason !== 'answer') return done
    const run = new AbortController()
    w.run = run
    void idleRun($, w, run)
    return done
  })

  on('turn.start', async ($, e, next) => {
    if (!w.active || e.agentId !== undefined) return next(e)
    for (const [, nonce] of e.text.matchAll(NONCE)) {
      const claim = w.claims.find((c) => c.nonce === nonce && (c.state === 'held' || c.state === 'submitted'))
      if (claim) {
        claim.state = 'acking'
        void ack($, w, claim)
      }
    }
    endRun(w)
    return next(e)
  })

  on('prompt.edit', async ($, e, next) => {
    if (w.active) w.touched = await $.clock.now()
    return next(e)
  })

  on('prompt.change', async ($, e, next) => {
    if (w.active) w.touched = await $.clock.now()
    return next(e)
  })

  on('session.end', async (_$, e, next) => {
    endRun(w)
    return next(e)
  })

  on('command.run', { command: 'meridian-spawn-watch' }, () => ({
    text: statusText(w),
    isTextDisplayOnly: true,
  }))
}

// endRun ends the current idle stretch: its delay or hold poll wakes at
// once, its collector is killed.
function endRun(w: Watch): void {
  w.run?.abort()
  w.run = null
  w.phase = 'idle'
}

function setPhase(w: Watch, run: AbortController, phase: Phase): void {
  if (w.run === run) w.phase = phase
}

// idleRun runs one idle stretch and owns its cleanup: a failure is
// logged, and a claim still held when the stretch ends is given back.
async function idleRun($: EngineInterface, w: Watch, run: AbortController): Promise<void> {
  const made: { claim?: Claim } = {}
  try {
    await deliver($, w, run, made)
  } catch (err) {
    note($, w, `idle run failed: ${String(err)}`)
  } finally {
    // Whatever ended the run before its submit, the ids go back.
    if (made.claim?.state === 'held') release($, w, made.claim, 'the run ended before a quiet box')
    setPhase(w, run, 'idle')
  }
}

// deliver is one idle stretch: wait out the delay, release stale claims,
// collect, hold for a quiet box, submit. The claim it makes goes in made.
async function deliver($: EngineInterface, w: Watch, run: AbortController, made: { claim?: Claim }): Promise<void> {
  const signal = run.signal
  setPhase(w, run, 'delay')
  if (!(await pause($, IDLE_DELAY_MS, signal))) return
  releaseStale($, w)
  setPhase(w, run, 'collecting')
  const got = await collect($, w, signal)
  if (got === null || got.kind === 'empty' || signal.aborted) return
  const claim: Claim = { ids: got.ids, nonce: nonce(), state: 'held' }
  made.claim = claim
  w.claims.push(claim)
  setPhase(w, run, 'holding')
  if (!(await hold($, w, signal))) return
  setPhase(w, run, 'submitting')
  // Submitted before the await: the delivery's own turn.start may arrive
  // before submit resolves.
  claim.state = 'submitted'
  try {
    const r = await $.prompt.submit({ text: `[${TAG} ${claim.nonce}]\n${got.text}` })
    if (r.drop !== undefined) {
      if (claim.state === 'submitted') release($, w, claim, `the submit was dropped (${r.drop})`)
    } else {
      note($, w, `submitted ${claim.ids.join(',')} (nonce ${claim.nonce})`)
    }
  } catch (err) {
    if (claim.state === 'submitted') release($, w, claim, `the submit failed: ${String(err)}`)
  }
}

// releaseStale frees claims whose turn never started: the idle stretch
// after a turn is proof that nothing waits in the queue behind it.
function releaseStale($: EngineInterface, w: Watch): void {
  for (const c of w.claims.filter((c) => c.state === 'submitted')) {
    release($, w, c, 'no turn carried its nonce')
  }
}

function release($: EngineInterface, w: Watch, claim: Claim, why: string): void {
  w.claims = w.claims.filter((c) => c !== claim)
  note($, w, `released ${claim.ids.join(',')}: ${why}`)
}

// pause sleeps on the session clock; false when the stretch ended first.
async function pause($: EngineInterface, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false
  try {
    await $.clock.sleep(ms, { signal })
    return !signal.aborted
  } catch {
    return false
  }
}

// hold waits until the prompt box is empty and has not been touched for
// QUIET_MS; false when the stretch ended first.
async function hold($: EngineInterface, w: Watch, signal: AbortSignal): Promise<boolean> {
  for (;;) {
    if (signal.aborted) return false
    const box = await $.prompt.read()
    const now = await $.clock.now()
    if (box.text.trim() === '' && now - w.touched >= QUIET_MS) return !signal.aborted
    if (!(await pause($, HOLD_POLL_MS, signal))) return false
  }
}

const STOPPED = Symbol('stopped')
const utf8 = new TextEncoder()

// collect runs `meridian spawn collect` and returns its verdict, or null
// when there is nothing to deliver this time (killed, or output that is
// not one valid object: logged, retried at the next idle).
async function collect($: EngineInterface, w: Watch, signal: AbortSignal): Promise<Delivery | null> {
  const argv = ['meridian', 'spawn', 'collect']
  const exclude = [...new Set(w.claims.flatMap((c) => c.ids))]
  if (exclude.length > 0) argv.push('--exclude', exclude.join(','))
  const stopped = new Promise<typeof STOPPED>((resolve) => {
    if (signal.aborted) resolve(STOPPED)
    else signal.addEventListener('abort', () => resolve(STOPPED), { once: true })
  })
  let stdout = ''
  let bytes = 0
  let stderr = ''
  let end: ProcessSpawnResult
  const child = $.process.spawn({ argv })
  try {
    for (;;) {
      const pulled = child.next()
      const step = await Promise.race([pulled, stopped])
      if (step === STOPPED) {
        pulled.catch(() => {})
        kill(child)
        w.verdict = 'killed: a turn started'
        return null
      }
      if (step.done) {
        end = step.value
        break
      }
      if (step.value.stream === 'stderr') {
        stderr = (stderr + step.value.text).slice(-STDERR_TAIL)
        continue
      }
      stdout += step.value.text
      bytes += utf8.encode(step.value.text).length
      if (bytes > STDOUT_MAX) {
        kill(child)
        return reject($, w, `stdout over ${STDOUT_MAX} bytes`, stderr)
      }
    }
  } catch (err) {
    return reject($, w, `could not run: ${String(err)}`, stderr)
  }
  if (end.code !== 0) {
    return reject($, w, end.signal ? `killed by ${end.signal}` : `exit ${end.code}`, stderr)
  }
  const got = parseDelivery(stdout)
  if (typeof got === 'string') return reject($, w, got, stderr)
  w.verdict = got.kind === 'empty' ? 'empty' : `delivery ${got.ids.join(',')}`
  if (got.kind === 'delivery') note($, w, `collected ${got.ids.join(',')}`)
  return got
}

function kill(child: AsyncGenerator<unknown, ProcessSpawnResult>): void {
  child.return({ code: null, signal: 'SIGTERM' }).catch(() => {})
}

function reject($: EngineInterface, w: Watch, why: string, stderr: string): null {
  w.verdict = `rejected: ${why}`
  const tail = stderr.trim()
  note($, w, `collector output rejected (${why})${tail ? `; stderr: ${tail}` : ''}; retrying at the next idle`)
  return null
}

// parseDelivery checks the collector's one JSON object; a string says what
// is wrong with it.
function parseDelivery(stdout: string): Delivery | string {
  let v: unknown
  try {
    v = JSON.parse(stdout)
  } catch {
    return 'output is not one JSON object'
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'output is not one JSON object'
  const o = v as Record<string, unknown>
  if (o.kind !== 'delivery' && o.kind !== 'empty') return `unknown kind ${JSON.stringify(o.kind)}`
  if (!Array.isArray(o.ids) || !o.ids.every((id) => typeof id === 'string' && ID.test(id))) {
    return 'ids are not a list of spawn ids'
  }
  if (typeof o.text !== 'string') return 'text is not a string'
  const ids = o.ids as string[]
  if (o.kind === 'delivery' && (ids.length === 0 || o.text.trim() === '')) return 'a delivery with no ids or no text'
  return { kind: o.kind, ids, text: o.text }
}

// ack records the claim's ids as seen. A failed ack keeps them out of
// every later collection until the module reloads: releasing them would
// deliver the same results at every idle.
async function ack($: EngineInterface, w: Watch, claim: Claim): Promise<void> {
  let why: string
  try {
    const r = await $.process.run(['meridian', 'spawn', 'ack', ...claim.ids], { timeoutMs: ACK_TIMEOUT_MS })
    if (r.exitCode === 0) {
      w.claims = w.claims.filter((c) => c !== claim)
      note($, w, `acked ${claim.ids.join(',')}`)
      return
    }
    why = `exit ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().slice(-STDERR_TAIL)}` : ''}`
  } catch (err) {
    why = String(err)
  }
  claim.state = 'ack-failed'
  note($, w, `ack of ${claim.ids.join(',')} failed (${why}); kept excluded until reload`)
}

function nonce(): string {
  const b = crypto.getRandomValues(new Uint8Array(8))
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
}

// loadLog reads the log kept in the plugin's store; a store that cannot
// be read starts an empty one.
async function loadLog($: EngineInterface, w: Watch): Promise<void> {
  try {
    const v = await $.store.get('log')
    if (Array.isArray(v)) w.log = v.filter((l): l is string => typeof l === 'string').slice(-LOG_LINES)
  } catch {
    w.log = []
  }
}

// note appends a line to the bounded log. Writes are chained so they land
// in order; a failed write loses a log line, never a delivery.
function note($: EngineInterface, w: Watch, line: string): void {
  w.saving = w.saving.then(async () => {
    try {
      const at = new Date(await $.clock.now()).toISOString()
      w.log = [...w.log, `${at} ${line}`].slice(-LOG_LINES)
      await $.store.set('log', w.log)
    } catch {
      // The log is best effort.
    }
  })
}

function statusText(w: Watch): string {
  if (!w.active) return 'inert: this session is not interactive'
  const claims = w.claims.map((c) => `${c.ids.join(',')} ${c.state} (nonce ${c.nonce})`)
  return [
    `phase: ${w.phase}`,
    `last collector verdict: ${w.verdict}`,
    `claims in flight: ${claims.length ? claims.join('; ') : 'none'}`,
    'recent log:',
    ...(w.log.length ? w.log.slice(-STATUS_LOG_LINES).map((l) => `  ${l}`) : ['  (empty)']),
  ].join('\n')
}
