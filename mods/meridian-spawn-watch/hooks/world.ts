// The world the tests run the module in: the engine beneath it, played by
// the test's own hooks, which record every call the module makes. A hook of
// the module's that throws is skipped without failing a test, so the tests
// assert on these records, never on the absence of an error.
import type { Engine } from 'claude-code/testing'
import type { On, ProcessRunResult, PromptSubmitResult } from 'claude-code'
import { mock } from 'claude-code/testing'

// What one run of `meridian spawn collect` does: write out (and err), then
// end with code, or signal; afterMs holds it on the mocked clock first.
export type Collector = { out?: string; err?: string; code?: number; signal?: string; afterMs?: number }

// One run of the collector as the module started it.
export type Spawned = { argv: readonly string[]; ended: 'exited' | 'killed' | 'running' }

export type Options = {
  collectors?: Collector[]
  ack?: (argv: readonly string[]) => ProcessRunResult | Error | Promise<ProcessRunResult>
  submit?: (text: string) => PromptSubmitResult | Promise<PromptSubmitResult>
  box?: () => Error
}

export const EMPTY = '{"kind":"empty","ids":[],"text":""}'

export function delivery(ids: string[], text = ids.map((id) => `${id} succeeded`).join('\n')): string {
  return JSON.stringify({ kind: 'delivery', ids, text })
}

export const NONCE_LINE = /^\[meridian-spawn-watch delivery ([0-9a-f]{16})\]\n/

export function world($: Engine, on: On, opts: Options = {}) {
  const clock = mock.clock(on, { now: 1_000_000 })
  const collectors = [...(opts.collectors ?? [])]
  const spawns: Spawned[] = []
  const acks: { argv: readonly string[]; timeoutMs: number | undefined }[] = []
  const submits: string[] = []
  const registered: string[] = []
  const store = new Map<string, unknown>()
  let box = ''
  let turns = 0

  on('session.start', (_, e) => ({ cwd: e.cwd }))
  on('session.end', (_, e) => ({ sessionId: e.sessionId }))
  on('turn.start', (_, e) => ({ turnId: e.turnId }))
  on('turn.complete', (_, e) => ({ text: e.answer }))
  on('prompt.edit', (_, e) => ({ text: e.text, cursor: e.cursor }))
  on('prompt.change', (_, e) => ({ text: e.text }))
  on('command.register', (_, e) => (registered.push(e.name), { value: { command: e.name } }))
  on('store.get', (_, e) => ({ value: store.get(e.key) }))
  on('store.set', (_, e) => (store.set(e.key, e.value), { value: undefined }))
  on('prompt.read', () => {
    const err = opts.box?.()
    return err ? { deny: err.message } : { value: { text: box, cursor: box.length } }
  })
  on('prompt.submit', async (_, e) => {
    submits.push(e.text)
    return opts.submit ? await opts.submit(e.text) : { text: e.text }
  })
  on('process.run', async (_, e) => {
    acks.push({ argv: e.argv, timeoutMs: e.init?.timeoutMs })
    const r = opts.ack ? await opts.ack(e.argv) : ran(0)
    if (r instanceof Error) throw r
    return { value: r }
  })
  on('process.spawn', async function* (_, e) {
    const rec: Spawned = { argv: e.argv, ended: 'running' }
    spawns.push(rec)
    const c = collectors.shift() ?? { out: EMPTY }
    try {
      // A kill lands at the child's next write, so a held collector
      // writes a heartbeat to stderr every second while it waits.
      for (let waited = 0; waited < (c.afterMs ?? 0); waited += 1_000) {
        await clock.sleep(1_000)
        yield { stream: 'stderr' as const, text: '.' }
      }
      if (c.err) yield { stream: 'stderr' as const, text: c.err }
      if (c.out) yield { stream: 'stdout' as const, text: c.out }
      rec.ended = 'exited'
      return { value: { code: c.signal ? null : (c.code ?? 0), signal: c.signal ?? null } }
    } finally {
      if (rec.ended === 'running') rec.ended = 'killed'
    }
  })

  const answer = (reason: 'answer' | 'aborted' | 'error' = 'answer', agentId?: string) =>
    $.turn.complete({ answer: 'done', durationMs: 5, isAborted: reason === 'aborted', turnId: `t${++turns}`, reason, agentId })

  return {
    clock,
    spawns,
    acks,
    submits,
    registered,
    store,
    setBox(text: string) {
      box = text
    },
    start: (interactive = true) =>
      $.session.start({ cwd: '/work', surface: interactive ? 'terminal' : null, isInteractive: interactive }),
    answer,
    // A main-loop turn (or a subagent's with agentId) starting with text.
    startTurn: (text: string, agentId?: string) => $.turn.start({ text, turnId: `t${++turns}`, agentId }),
    // The engine frames a plugin's prompt before the turn starts with it.
    startDelivered: (submitted: string) =>
      $.turn.start({
        text: `The meridian-spawn-watch plugin sent a message:\n${submitted}\n\nThis is how Claude Code surfaces a prompt a plugin submits between turns.`,
        turnId: `t${++turns}`,
      }),
    // prompt.edit and prompt.change run in a session but are not on the
    // typed test engine.
    edit: (text: string) => (($ as unknown as Raw).prompt.edit({ origin: { kind: 'composer' }, text, cursor: text.length, start: 0, end: 0, inputText: text })),
    change: (text: string) => (($ as unknown as Raw).prompt.change({ origin: { kind: 'history' }, text, cursor: text.length })),
    status: async () =>
      (await $.command.run({ command: 'meridian-spawn-watch', args: '', origin: { kind: 'composer' }, presentation: { isFullscreen: false, columns: 100 } })).text ?? '',
    log: () => (store.get('log') ?? []) as string[],
  }
}

type Raw = { prompt: { edit(e: unknown): Promise<unknown>; change(e: unknown): Promise<unknown> } }

export function ran(exitCode: number, stderr = ''): ProcessRunResult {
  return { exitCode, stdout: '', stderr, isStdoutTruncated: false, isStderrTruncated: false }
}
