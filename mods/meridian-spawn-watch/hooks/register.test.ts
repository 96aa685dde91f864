// One test (or a few) per rule in this mod's README.md.
import { describe, expect, test } from 'claude-code/testing'
import { EMPTY, NONCE_LINE, delivery, ran, world } from './world'

const COLLECT = ['meridian', 'spawn', 'collect']

describe('session.start', () => {
  test('an interactive session registers the status command and starts no run', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    await w.clock.advance(60_000)
    expect(w.registered).toEqual(['meridian-spawn-watch'])
    expect(w.spawns).toEqual([])
    expect(w.submits).toEqual([])
  })

  for (const [name, surface, isInteractive] of [
    ['not interactive', 'terminal', false],
    ['drawn nowhere', null, true],
  ] as const) {
    test(`a session ${name} stays inert`, async ($, on) => {
      const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
      await $.session.start({ cwd: '/work', surface, isInteractive })
      await w.answer()
      await w.clock.advance(30_000)
      expect(w.registered).toEqual([])
      expect(w.spawns).toEqual([])
    })
  }

  test('a print-mode session stays inert for the whole session', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start(false)
    await w.answer()
    await w.clock.advance(30_000)
    await w.startTurn('[meridian-spawn-watch delivery 0123456789abcdef]')
    await w.answer()
    await w.clock.advance(30_000)
    expect(w.registered).toEqual([])
    expect(w.spawns).toEqual([])
    expect(w.submits).toEqual([])
    expect(w.acks).toEqual([])
    expect(await w.status()).toContain('inert')
  })
})

describe('delivery', () => {
  test('an answered main-loop turn collects after 2 s; the nonce turn acks', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1', 'p2'], 'p1 succeeded\np2 failed') }] })
    await w.start()
    await w.answer()
    await w.clock.advance(1_999)
    expect(w.spawns).toEqual([])
    await w.clock.advance(1)
    expect(w.spawns).toEqual([{ argv: COLLECT, ended: 'exited' }])
    expect(w.submits).toHaveLength(1)
    const sent = w.submits[0] ?? ''
    expect(sent).toMatch(NONCE_LINE)
    expect(sent.replace(NONCE_LINE, '')).toBe('p1 succeeded\np2 failed')
    expect(w.acks).toEqual([])

    await w.startDelivered(sent)
    await w.clock.settle()
    expect(w.acks).toEqual([{ argv: ['meridian', 'spawn', 'ack', 'p1', 'p2'], timeoutMs: 20_000 }])
    expect(await w.status()).toContain('claims in flight: none')
    expect(w.log().some((l) => l.endsWith('acked p1,p2'))).toBe(true)

    // Acked ids are consumed in Meridian; nothing is excluded any more.
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, COLLECT])
    expect(w.acks).toHaveLength(1)
  })

  test('an empty collection submits nothing and ends the run', async ($, on) => {
    const w = world($, on, { collectors: [{ out: EMPTY }] })
    await w.start()
    await w.answer()
    await w.clock.advance(60_000)
    expect(w.spawns).toHaveLength(1)
    expect(w.submits).toEqual([])
    const status = await w.status()
    expect(status).toContain('phase: idle')
    expect(status).toContain('last collector verdict: empty')
  })

  test('a collector that blocks until a child finishes delivers when it returns', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p3']), afterMs: 5_000 }] })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    expect(await w.status()).toContain('phase: collecting')
    await w.clock.advance(5_000)
    expect(w.submits).toHaveLength(1)
  })
})

describe('turns that are not the lead idling', () => {
  test('subagent, teammate and fork turns are ignored', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    await w.answer('answer', 'agent-1')
    await w.clock.advance(10_000)
    expect(w.spawns).toEqual([])

    // A subagent's turn.start neither ends the main loop's delay nor acks.
    await w.answer()
    await w.clock.advance(1_000)
    await w.startTurn('[meridian-spawn-watch delivery 0123456789abcdef]', 'agent-1')
    await w.clock.advance(1_000)
    expect(w.spawns).toHaveLength(1)
    const sent = w.submits[0] ?? ''
    await w.startTurn(sent, 'agent-1')
    await w.clock.settle()
    expect(w.acks).toEqual([])
  })

  for (const reason of ['aborted', 'error'] as const) {
    test(`a turn that ended ${reason} starts nothing`, async ($, on) => {
      const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
      await w.start()
      await w.answer(reason)
      await w.clock.advance(30_000)
      expect(w.spawns).toEqual([])
      expect(w.submits).toEqual([])
    })
  }

  test('a refused turn starts nothing', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    await $.turn.complete({ answer: '', durationMs: 5, isAborted: false, turnId: 'r1', reason: 'refusal', refusal: { category: null, explanation: null } })
    await w.clock.advance(30_000)
    expect(w.spawns).toEqual([])
  })
})

describe('a user turn', () => {
  test('ends the 2 s delay', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    await w.answer()
    await w.clock.advance(1_500)
    await w.startTurn('next question')
    await w.clock.advance(30_000)
    expect(w.spawns).toEqual([])
  })

  test('kills a running collector', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']), afterMs: 60_000 }] })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.spawns).toEqual([{ argv: COLLECT, ended: 'running' }])
    await w.startTurn('next question')
    await w.clock.advance(2_000)
    expect(w.spawns).toEqual([{ argv: COLLECT, ended: 'killed' }])
    expect(w.submits).toEqual([])
    expect(await w.status()).toContain('killed')
  })

  test('ends a hold and releases its claim', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }, { out: delivery(['p1']) }] })
    await w.start()
    w.setBox('half-typed')
    await w.answer()
    await w.clock.advance(5_000)
    expect(await w.status()).toContain('claims in flight: p1 held')
    await w.startTurn('half-typed, sent')
    await w.clock.settle()
    expect(await w.status()).toContain('claims in flight: none')
    w.setBox('')
    await w.answer()
    await w.clock.advance(2_000)
    // Released: the next collection excludes nothing and delivers again.
    expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, COLLECT])
    expect(w.submits).toHaveLength(1)
    expect(w.acks).toEqual([])
  })
})

describe('the prompt box', () => {
  test('a draft holds the delivery for as long as it is there', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    w.setBox('a draft')
    await w.answer()
    await w.clock.advance(120_000)
    expect(w.submits).toEqual([])
    expect(await w.status()).toContain('phase: holding')
    w.setBox('')
    await w.clock.advance(1_000)
    expect(w.submits).toHaveLength(1)
  })

  test('an edit holds it until the box has been quiet for 10 s', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']), afterMs: 3_000 }] })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    await w.edit('x')
    await w.edit('')
    await w.clock.advance(3_000) // collected 3 s after the last edit
    await w.clock.advance(6_000)
    expect(w.submits).toEqual([])
    await w.clock.advance(1_000)
    expect(w.submits).toHaveLength(1)
  })

  test('a history recall or a clear counts as a touch too', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    await w.change('recalled')
    await w.change('')
    await w.answer()
    await w.clock.advance(9_000)
    expect(w.submits).toEqual([])
    await w.clock.advance(1_000)
    expect(w.submits).toHaveLength(1)
  })
})

describe('claims', () => {
  test('a dropped submit releases the claim and acks nothing', async ($, on) => {
    const w = world($, on, {
      collectors: [{ out: delivery(['p1']) }, { out: EMPTY }],
      submit: () => ({ drop: 'a Stop hook stands' }),
    })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.submits).toHaveLength(1)
    expect(w.acks).toEqual([])
    expect(w.log().some((l) => l.includes('released p1: the submit was dropped (a Stop hook stands)'))).toBe(true)
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, COLLECT])
  })

  test('a submit that fails releases the claim', async ($, on) => {
    const w = world($, on, {
      collectors: [{ out: delivery(['p1']) }, { out: EMPTY }],
      submit: () => {
        throw new Error('no session is bound')
      },
    })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.log().some((l) => l.includes('released p1: the submit failed'))).toBe(true)
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, COLLECT])
  })

  test('a prompt box that cannot be read ends the run and releases the claim', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }, { out: EMPTY }], box: () => new Error('no box') })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.submits).toEqual([])
    expect(w.log().some((l) => l.includes('idle run failed'))).toBe(true)
    expect(w.log().some((l) => l.includes('released p1: the run ended before a quiet box'))).toBe(true)
    const status = await w.status()
    expect(status).toContain('phase: idle')
    expect(status).toContain('claims in flight: none')
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, COLLECT])
  })

  test('a queued delivery whose turn never came is released at the next idle', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }, { out: delivery(['p1']) }] })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.submits).toHaveLength(1)
    // The user's turn started first and the queue was cleared: no turn
    // carries the nonce. Until the next idle the claim may still be queued.
    await w.startTurn('something else')
    expect(await w.status()).toContain('p1 submitted')
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, COLLECT])
    expect(w.log().some((l) => l.includes('released p1: no turn carried its nonce'))).toBe(true)
    expect(w.submits).toHaveLength(2)
    expect(w.acks).toEqual([])
  })

  test('a delivery queued behind a running turn is acked when its turn starts', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    const sent = w.submits[0] ?? ''
    await w.startTurn('typed at the same moment')
    await w.answer()
    await w.clock.advance(500)
    await w.startDelivered(sent)
    await w.clock.advance(5_000)
    expect(w.acks.map((a) => a.argv)).toEqual([['meridian', 'spawn', 'ack', 'p1']])
    expect(w.spawns).toHaveLength(1)
  })

  for (const [name, ack] of [
    ['exits non-zero', () => ran(1, 'meridian: database is locked')],
    ['times out', () => new Error('timed out after 20000 ms')],
  ] as const) {
    test(`an ack that ${name} keeps its ids excluded until reload`, async ($, on) => {
      const w = world($, on, { collectors: [{ out: delivery(['p1', 'p2']) }, { out: EMPTY }, { out: EMPTY }], ack })
      await w.start()
      await w.answer()
      await w.clock.advance(2_000)
      await w.startDelivered(w.submits[0] ?? '')
      await w.clock.settle()
      expect(w.acks).toHaveLength(1)
      expect(w.log().some((l) => l.includes('ack of p1,p2 failed'))).toBe(true)
      for (let i = 0; i < 2; i++) {
        await w.answer()
        await w.clock.advance(2_000)
      }
      const excluded = [...COLLECT, '--exclude', 'p1,p2']
      expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, excluded, excluded])
      expect(w.submits).toHaveLength(1)
      expect(await w.status()).toContain('p1,p2 ack-failed')
    })
  }

  test('ids whose ack is still running are excluded from the next collection', async ($, on) => {
    let finish = () => {}
    const w = world($, on, {
      collectors: [{ out: delivery(['p1']) }, { out: EMPTY }],
      ack: () => new Promise((resolve) => (finish = () => resolve(ran(0)))),
    })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    await w.startDelivered(w.submits[0] ?? '')
    await w.answer()
    await w.clock.advance(2_000)
    expect(await w.status()).toContain('p1 acking')
    finish()
    await w.clock.settle()
    expect(w.spawns.map((s) => s.argv)).toEqual([COLLECT, [...COLLECT, '--exclude', 'p1']])
    expect(await w.status()).toContain('claims in flight: none')
  })
})

describe('collector output', () => {
  const bad: [string, { out?: string; err?: string; code?: number; signal?: string }][] = [
    ['not JSON', { out: 'Traceback: boom' }],
    ['two objects', { out: EMPTY + '\n' + EMPTY }],
    ['an array', { out: '[]' }],
    ['an unknown kind', { out: '{"kind":"later","ids":[],"text":""}' }],
    ['an id that is not a spawn id', { out: delivery(['../p1']) }],
    ['ids that are not strings', { out: '{"kind":"delivery","ids":[1],"text":"x"}' }],
    ['a delivery with no ids', { out: delivery([], 'x') }],
    ['a delivery with no text', { out: delivery(['p1'], '') }],
    ['a non-zero exit', { out: delivery(['p1']), code: 2, err: 'meridian: unknown flag' }],
    ['a kill', { signal: 'SIGKILL' }],
    ['stdout over 1 MiB', { out: delivery(['p1'], 'é'.repeat(1 << 19)) }],
  ]
  for (const [name, c] of bad) {
    test(`${name} is logged and retried at the next idle`, async ($, on) => {
      const w = world($, on, { collectors: [c, { out: delivery(['p1']) }] })
      await w.start()
      await w.answer()
      await w.clock.advance(60_000)
      expect(w.submits).toEqual([])
      expect(await w.status()).toContain('last collector verdict: rejected')
      expect(w.log().some((l) => l.includes('collector output rejected'))).toBe(true)
      await w.answer()
      await w.clock.advance(2_000)
      expect(w.spawns).toHaveLength(2)
      expect(w.submits).toHaveLength(1)
    })
  }

  test('only the last 500 characters of stderr are logged', async ($, on) => {
    const w = world($, on, { collectors: [{ err: 'a'.repeat(600) + 'THE END', code: 1 }] })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    const line = w.log().find((l) => l.includes('collector output rejected (exit 1)')) ?? ''
    const tail = /stderr: (a*THE END)/.exec(line)?.[1] ?? ''
    expect(tail).toHaveLength(500)
  })
})

describe('session end and status', () => {
  test('session.end (as /clear raises it) ends the run until a turn ends', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p1']) }] })
    await w.start()
    await w.answer()
    await w.clock.advance(1_000)
    await $.session.end({ reason: 'clear', sessionId: 's1', resume: { id: 's1' } })
    await w.clock.advance(30_000)
    expect(w.spawns).toEqual([])
    await w.answer()
    await w.clock.advance(2_000)
    expect(w.submits).toHaveLength(1)
  })

  test('/meridian-spawn-watch prints phase, verdict, claims and the last log lines', async ($, on) => {
    const w = world($, on, { collectors: [{ out: delivery(['p4', 'p5']) }] })
    await w.start()
    expect(await w.status()).toBe(
      'phase: idle\nlast collector verdict: none yet\nclaims in flight: none\nrecent log:\n  (empty)',
    )
    await w.answer()
    await w.clock.advance(1_000)
    expect(await w.status()).toContain('phase: delay')
    w.setBox('typing')
    await w.clock.advance(1_000)
    const s = await w.status()
    expect(s).toMatch(/^phase: holding\nlast collector verdict: delivery p4,p5\nclaims in flight: p4,p5 held \(nonce [0-9a-f]{16}\)\nrecent log:\n  \S+ collected p4,p5$/)
  })

  test('/meridian-spawn-watch shows a submit still pending', async ($, on) => {
    let resolve = () => {}
    const w = world($, on, {
      collectors: [{ out: delivery(['p6']) }],
      submit: (text) => new Promise((r) => (resolve = () => r({ text }))),
    })
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    expect(await w.status()).toContain('phase: submitting')
    resolve()
    await w.clock.settle()
    const s = await w.status()
    expect(s).toContain('phase: idle')
    expect(s).toContain('claims in flight: p6 submitted')
  })

  test('the log keeps the last 100 lines in the store under log', async ($, on) => {
    const w = world($, on, { collectors: [{ out: 'junk' }] })
    w.store.set('log', Array.from({ length: 150 }, (_, i) => `old ${i}`))
    await w.start()
    await w.answer()
    await w.clock.advance(2_000)
    const log = w.log()
    expect(log).toHaveLength(100)
    expect(log[0]).toBe('old 51')
    expect(log[99]).toContain('collector output rejected')
  })
})
