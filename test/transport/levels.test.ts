/**
 * Protocol levels in the handshake (transport/codec.ts `protocolLevels`, handshake.ts): a
 * listener takes a hello at any level its binary speaks and refuses others before the proof;
 * a hello advertises the newest level of its dialer's binary, with a proof of its own; peers
 * at two levels prove the secret to each other and are told apart by their shapes. And the
 * frames of a build that speaks level 9 only, as that build made them
 * (fixtures/level-9-frames.json), against this build's handshake, both ways.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ClusterShape } from '../../src/cluster-shape.js';
import { clusterShapeOf, fingerprintOf } from '../../src/cluster-shape.js';
import type { Incarnation } from '../../src/core/types.js';
import { LockError } from '../../src/errors.js';
import type { AuthFrame, ChallengeFrame, Frame, HelloFrame, ProtocolLevels, WelcomeFrame } from '../../src/transport/codec.js';
import { decodeFrame, encodeFrame } from '../../src/transport/codec.js';
import type { HandshakeIdentity, ListenerGate } from '../../src/transport/handshake.js';
import { DialerHandshake, ListenerHandshake, NonceBook, refuseReasonOf, secretKey } from '../../src/transport/handshake.js';
import { waitFor } from '../support/wait.js';
import { makeMesh, peerAt } from './helpers.js';

interface Level9Fixture {
  readonly secret: string;
  readonly shape: ClusterShape;
  readonly frames: { readonly hello: string; readonly challenge: string; readonly auth: string; readonly welcome: string };
  readonly tolerated: { readonly hello: readonly string[]; readonly auth: readonly string[]; readonly accepted: { readonly peer: number; readonly welcome: boolean } };
}

const fixture = JSON.parse(readFileSync(new URL('fixtures/level-9-frames.json', import.meta.url), 'utf8')) as Level9Fixture;
const anyPayload = (v: unknown): v is unknown => v !== undefined;
const decode = (hex: string): Frame<unknown> => decodeFrame(Buffer.from(hex, 'hex'), anyPayload);
const wire = <F extends Frame<unknown>>(frame: F): F => decodeFrame(encodeFrame(frame), anyPayload) as F;
const fill = (byte: number): Uint8Array => new Uint8Array(16).fill(byte);
const shapeAt = (level: number): ClusterShape => clusterShapeOf({ cluster: 'test', peers: [{ id: 'p0' }, { id: 'p1' }, { id: 'p2' }], heartbeatMs: 100, leaseMs: 1000, evictMs: 1700 }, level);

/** p2 dials, p0 listens, as in the fixture; `level` is its shape's, `running` the one it runs at (a raise moves it above). */
function identity(selfId: 'p0' | 'p2', levels: ProtocolLevels, level: number, running = level): HandshakeIdentity {
  const shape = shapeAt(level);
  const incarnation: Incarnation = selfId === 'p2' ? { startMs: 5000, nonce: 1 } : { startMs: 6000, nonce: 2 };
  return { cluster: 'test', key: secretKey(fixture.secret), selfId, incarnation, shape, fingerprint: fingerprintOf(shape), levels, level: () => running, randomNonce: () => fill(selfId === 'p2' ? 0x11 : 0x22) };
}

function gate(): ListenerGate {
  return {
    peerIndex: (id) => ['p0', 'p1', 'p2'].indexOf(id), check: () => null, newest: () => null, isRefused: () => false,
    nonces: new NonceBook(8), handshakeMsMax: 5000, refusing: () => undefined,
  };
}

/** The refusal reason and sentence of `fn`, or 'accepted'. */
function outcome(fn: () => unknown): { reason: string; message: string } {
  try {
    fn();
    return { reason: 'accepted', message: '' };
  } catch (err) {
    if (!(err instanceof LockError)) throw err;
    return { reason: refuseReasonOf(err) ?? err.code, message: err.message };
  }
}

/** One whole handshake between two of this build's sides; `tamper` may change the auth on its way. */
function handshake(dialer: HandshakeIdentity, listener: HandshakeIdentity, tamper: (a: AuthFrame) => AuthFrame = (a) => a): { reason: string; message: string; newest?: number } {
  const d = new DialerHandshake(dialer, 'p0');
  const l = new ListenerHandshake(listener, gate());
  const auth = tamper(d.onChallenge(wire(l.onHello(wire(d.hello(7)), 100))));
  let newest: number | undefined;
  const result = outcome(() => {
    newest = l.onAuth(wire(auth), 101).newest;
    d.onWelcome(wire(l.welcome(3, 8)));
  });
  return newest === undefined ? result : { ...result, newest };
}

const nine = { oldest: 9, newest: 9 };
const nineToTen = { oldest: 9, newest: 10 };

describe('protocol levels in the handshake', () => {
  it('takes a hello at any level the listener speaks, and refuses one outside, before the proof, with the sentence', () => {
    for (const v of [9, 10]) {
      const l = new ListenerHandshake(identity('p0', nineToTen, 9), gate());
      expect(outcome(() => l.onHello(wire({ ...new DialerHandshake(identity('p2', nineToTen, v), 'p0').hello(7) }), 100)).reason).toBe('accepted');
    }
    for (const v of [8, 11]) {
      const l = new ListenerHandshake(identity('p0', nineToTen, 9), gate());
      const hello = { ...new DialerHandshake(identity('p2', { oldest: 8, newest: 11 }, v), 'p0').hello(7) };
      expect(outcome(() => l.onHello(wire(hello), 100))).toEqual({ reason: 'wrong_version', message: `peer runs protocol level ${v}; this binary speaks 9 to 10` });
    }
  });

  it('records the newest level the dialer advertised', () => {
    expect(handshake(identity('p2', nineToTen, 9), identity('p0', nine, 9))).toEqual({ reason: 'accepted', message: '', newest: 10 });
    expect(handshake(identity('p2', nine, 9), identity('p0', nineToTen, 9))).toEqual({ reason: 'accepted', message: '', newest: 9 });
  });

  it('reads a hello without an advertisement as advertising its own level', () => {
    const d = new DialerHandshake(identity('p2', nineToTen, 9), 'p0');
    const l = new ListenerHandshake(identity('p0', nineToTen, 9), gate());
    const { newest: _n, ...bare } = d.hello(7);
    expect(_n).toBe(10);
    const { newestMac: _m, ...auth } = d.onChallenge(wire(l.onHello(wire(bare), 100)));
    expect(l.onAuth(wire(auth), 101).newest).toBe(9);
  });

  it('refuses an advertisement without its proof, or with another one', () => {
    const stripped = handshake(identity('p2', nineToTen, 9), identity('p0', nine, 9), (a) => {
      const { newestMac: _m, ...rest } = a;
      return rest;
    });
    expect(stripped.reason).toBe('bad_mac');
    const forged = handshake(identity('p2', nineToTen, 9), identity('p0', nine, 9), (a) => ({ ...a, newestMac: new Uint8Array(32).fill(7) }));
    expect(forged).toEqual({ reason: 'bad_mac', message: 'the proof of the advertised protocol level does not match' });
  });

  it('proves the secret between peers at two levels, then tells them apart by their shapes', () => {
    // The proof does not depend on the level: a dialer at 10 reaches the fingerprint check of a listener at 9.
    const apart = handshake(identity('p2', nineToTen, 10), identity('p0', nineToTen, 9));
    expect(apart.reason).toBe('wrong_config');
    expect(handshake(identity('p2', nineToTen, 10), identity('p0', nineToTen, 10)).newest).toBe(10);
  });

  it('links peers on both sides of a raise, whose shapes keep the founding level; refuses a binary below the running level, with the sentence', () => {
    const nineToEleven = { oldest: 9, newest: 11 };
    // Dialer not yet at the raised view, listener at it: one shape, both binaries speak 11.
    expect(handshake(identity('p2', nineToEleven, 10), identity('p0', nineToEleven, 10, 11))).toEqual({ reason: 'accepted', message: '', newest: 11 });
    expect(handshake(identity('p2', nineToEleven, 10, 11), identity('p0', nineToEleven, 10))).toEqual({ reason: 'accepted', message: '', newest: 11 });
    // The release before: it runs at 10 and speaks nothing higher; the raised listener refuses it.
    expect(handshake(identity('p2', nineToTen, 10), identity('p0', nineToEleven, 10, 11))).toEqual({
      reason: 'wrong_version',
      message: 'peer "p2"\'s binary speaks protocol levels up to 10; this cluster runs at level 11: run a binary that speaks it on that host (docs/operations.md, "Protocol levels")',
    });
    // And a raised dialer's hello is outside what that release speaks.
    const l = new ListenerHandshake(identity('p0', nineToTen, 10), gate());
    expect(outcome(() => l.onHello(wire(new DialerHandshake(identity('p2', nineToEleven, 10, 11), 'p0').hello(7)), 100)).reason).toBe('wrong_version');
  });

  it('refuses the welcome to a hello at a level below the one the dialer runs at by then (a raise applied mid-handshake), so it dials again at it', () => {
    // The listener's binary speaks up to 10 and accepts the hello at 10; the dialer's view is raised to 11 before the welcome comes.
    let level = 10;
    const dialer: HandshakeIdentity = { ...identity('p2', { oldest: 9, newest: 11 }, 10), level: () => level };
    const d = new DialerHandshake(dialer, 'p0');
    const l = new ListenerHandshake(identity('p0', nineToTen, 10), gate());
    const auth = d.onChallenge(wire(l.onHello(wire(d.hello(7)), 100)));
    expect(l.onAuth(wire(auth), 101).newest).toBe(11);
    level = 11;
    expect(outcome(() => d.onWelcome(wire(l.welcome(3, 8))))).toEqual({
      reason: 'wrong_version', message: 'this peer runs at protocol level 11 now, above the 10 its hello to "p0" offered: dialing again at 11 (the listener may not speak it)',
    });
  });

  it('refuses a hello that advertises less than the level it runs at', () => {
    const hello = { ...new DialerHandshake(identity('p2', nineToTen, 10), 'p0').hello(7), newest: 9 };
    expect(() => decodeFrame(encodeFrame(hello), anyPayload)).toThrow(/malformed hello/);
  });

  it("keeps on each link the newest level the peer's binary advertised, null before a handshake", async () => {
    const a = await makeMesh({ self: peerAt(0, 0), peers: [peerAt(1, 1)], levels: nineToTen, shape: clusterShapeOf({ cluster: 'test', peers: [{ id: 'p0' }, { id: 'p1' }], heartbeatMs: 100, leaseMs: 0, evictMs: 0 }, 9) });
    try {
      expect(a.mesh.status()[0]?.newestLevel).toBeNull();
      const b = await makeMesh({ self: peerAt(1, 0), peers: [peerAt(0, a.mesh.port())], levels: nine });
      try {
        await waitFor('p1 dialed p0', () => a.mesh.status()[0]?.newestLevel !== null);
        expect(a.mesh.status()[0]?.newestLevel).toBe(9);
      } finally {
        await b.mesh.close();
      }
    } finally {
      await a.mesh.close();
    }
  });
});

describe('a build that speaks level 9 only (its frames as it made them)', () => {
  const golden = fixture.frames;

  for (const levels of [nine, nineToTen]) {
    it(`dials this build's listener (levels ${levels.oldest} to ${levels.newest}, running at 9)`, () => {
      const l = new ListenerHandshake(identity('p0', levels, 9), gate());
      const challenge = l.onHello(decode(golden.hello) as HelloFrame, 100);
      expect(encodeFrame(challenge).toString('hex')).toBe(golden.challenge);
      const accepted = l.onAuth(decode(golden.auth) as AuthFrame, 101);
      expect(accepted).toEqual({ peer: 2, inc: { startMs: 5000, nonce: 1 }, clock: 7, newest: 9 });
      // Byte for byte the welcome the level-9 listener sent, which the level-9 dialer verified.
      expect(encodeFrame(l.welcome(3, 8)).toString('hex')).toBe(golden.welcome);
    });

    it(`listens to this build's dialer (levels ${levels.oldest} to ${levels.newest}, running at 9)`, () => {
      const d = new DialerHandshake(identity('p2', levels, 9), 'p0');
      const { newest, ...hello } = wire(d.hello(7));
      const { newestMac, ...auth } = wire(d.onChallenge(decode(golden.challenge) as ChallengeFrame));
      // What the level-9 listener checks is what it made itself; the rest are fields it was shown to ignore.
      expect(hello).toEqual(decode(golden.hello));
      expect(auth).toEqual(decode(golden.auth));
      expect(Object.keys(d.hello(7)).filter((k) => !(k in decode(golden.hello)))).toEqual(fixture.tolerated.hello);
      expect(newest).toBe(levels.newest);
      expect(newestMac).toBeInstanceOf(Uint8Array);
      expect(fixture.tolerated.auth).toEqual(['newestMac']);
      expect(fixture.tolerated.accepted).toEqual({ peer: 2, welcome: true });
      expect(d.onWelcome(decode(golden.welcome) as WelcomeFrame)).toEqual({ inc: { startMs: 6000, nonce: 2 }, clock: 8, delivered: 3 });
    });
  }
});
